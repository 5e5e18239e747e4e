// Overview: live sandboxes, runs per second and error rate now, and the last hour as a chart: a
// tenant's own (GET /v1/agents/stats), or the whole service with a row per tenant and a row per
// node (GET /v1/admin/stats, GET /v1/admin/nodes) for the operator, who can drain a node.
import { useMemo } from "preact/hooks";
import { api } from "../api";
import { Empty, ErrorBox, fmtTime, Table, TimeChart, useAction, useLoad, View } from "../ui";
import type { NodeList, Stats } from "../types";

function Charts({ stats }: { stats: Stats }) {
  const { times, series } = useMemo(() => {
    const s = stats.series;
    return {
      times: s.map((p) => Date.parse(p.timestamp) / 1000),
      series: [
        { label: "runs/s", values: s.map((p) => p.runs / stats.interval_seconds), color: "#2563eb" },
        { label: "errors/s", values: s.map((p) => p.errors / stats.interval_seconds), color: "#dc2626" },
        { label: "live sandboxes", values: s.map((p) => p.live_sandboxes), color: "#16a34a" },
      ],
    };
  }, [stats]);
  if (times.length < 2) return <Empty>The chart fills in as the service runs (a point every {stats.interval_seconds} s).</Empty>;
  return <TimeChart title="Runs, errors and live sandboxes over the last hour" times={times} series={series} />;
}

/** The operator's breakdown: each tenant's live sandboxes and runs since the service started. */
function Tenants({ stats }: { stats: Stats }) {
  const rows = stats.tenants ?? [];
  return (
    <>
      <h2>Per tenant</h2>
      {rows.length === 0 ? (
        <Empty>No tenant has a live sandbox or a run since the service started.</Empty>
      ) : (
        <div class="scroll">
          <table class="tenants-activity">
            <thead>
              <tr>
                <th>Tenant</th>
                <th>Live sandboxes</th>
                <th>Runs</th>
                <th>Failed runs</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((t) => (
                <tr key={t.tenant_id}>
                  <td>{t.tenant_id}</td>
                  <td>{t.live_sandboxes}</td>
                  <td>{t.runs}</td>
                  <td>{t.errors}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** A node's state as a badge's colour: up green, draining amber, drained (left by itself) grey, lost red. */
const NODE_BADGE: Record<string, string> = { up: "running", draining: "paused", drained: "terminated", lost: "failed" };

/** The operator's nodes: one row for a service running alone, one per node of a cluster, each with its load. */
function Nodes() {
  const nodes = useLoad((signal) => api<NodeList>("/v1/admin/nodes", { signal }), [], 5_000);
  const [busy, error, run] = useAction();
  const cluster = (nodes.data?.nodes.length ?? 0) > 1 || nodes.data?.nodes.some((n) => n.epoch > 0);
  return (
    <>
      <h2>Nodes</h2>
      <ErrorBox error={error} />
      <View state={nodes} label="Loading the nodes">
        {(d) => (
          <Table
            rows={d.nodes}
            head={["Node", "Roles", "State", "Live sandboxes", "Free memory", "CPU load", "Last heartbeat", ""]}
            empty="No node has joined yet."
          >
            {(n) => (
              <tr key={n.id}>
                <td>
                  <code>{n.id}</code>
                </td>
                <td>{n.roles}</td>
                <td>
                  <span class={`badge ${NODE_BADGE[n.state] ?? "failed"}`}>{n.state}</span>
                </td>
                <td>{n.live_sandboxes}</td>
                <td>
                  {(n.free_memory_mb / 1024).toFixed(1)} of {(n.total_memory_mb / 1024).toFixed(1)} GiB
                </td>
                <td>{(n.cpu_load * 100).toFixed(0)}%</td>
                <td>{n.heartbeat_at ? fmtTime(n.heartbeat_at) : "never"}</td>
                <td>
                  {cluster && n.state === "up" ? (
                    <button
                      type="button"
                      class="danger"
                      disabled={busy}
                      aria-label={`Drain ${n.id}`}
                      onClick={() => {
                        if (!confirm(`Drain the node '${n.id}'? It takes no new sandboxes; its sandboxes run on until they end.`)) return;
                        void run(async () => {
                          await api(`/v1/admin/nodes/${encodeURIComponent(n.id)}/drain`, { method: "POST" });
                          nodes.reload();
                        });
                      }}
                    >
                      Drain
                    </button>
                  ) : null}
                </td>
              </tr>
            )}
          </Table>
        )}
      </View>
      {cluster ? null : <p class="muted">This service runs as one node; a cluster lists each of its nodes here (docs/cluster.md).</p>}
    </>
  );
}

export function OverviewPage({ operator }: { operator: boolean }) {
  const stats = useLoad((signal) => api<Stats>(operator ? "/v1/admin/stats" : "/v1/agents/stats", { signal }), [operator], 10_000);
  return (
    <section>
      <h1>Overview</h1>
      <View state={stats} label="Loading the service's activity">
        {(s) => (
          <>
            <div class="tiles">
              <div class="tile">
                <span class="label">Live sandboxes</span>
                <strong>{s.live_sandboxes}</strong>
              </div>
              <div class="tile">
                <span class="label">Runs per second</span>
                <strong>{s.runs_per_second.toFixed(2)}</strong>
              </div>
              <div class="tile">
                <span class="label">Error rate</span>
                <strong>{(s.error_rate * 100).toFixed(1)}%</strong>
              </div>
            </div>
            <h2>Last hour</h2>
            <Charts stats={s} />
            <p class="muted">
              {operator ? "The whole service" : "Your tenant's sandboxes and runs only"}, one point every {s.interval_seconds} s, kept since
              the service started.
            </p>
            {operator ? <Tenants stats={s} /> : null}
            {operator ? <Nodes /> : null}
          </>
        )}
      </View>
    </section>
  );
}
