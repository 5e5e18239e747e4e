// Overview: live sandboxes, runs per second and error rate now, and the last hour as a chart: a
// tenant's own (GET /v1/agents/stats), or the whole service with a row per tenant for the operator
// (GET /v1/admin/stats).
import { useMemo } from "preact/hooks";
import { api } from "../api";
import { Empty, TimeChart, useLoad, View } from "../ui";
import type { Stats } from "../types";

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
          </>
        )}
      </View>
    </section>
  );
}
