// Sandboxes: the caller's sandboxes filtered by state and metadata, creating one, and a sandbox's
// detail (metrics chart, events, files with upload/download, a command box, extend and kill).
import { useEffect, useMemo, useState } from "preact/hooks";
import { AGENTS, api, sbxPath, send } from "../api";
import { download, Empty, ErrorBox, fmtBytes, fmtTime, Select, Table, TimeChart, useAction, useLoad, View } from "../ui";
import type { CommandResult, FileEntry, MetricsSample, Sandbox, SandboxEvents, SandboxList } from "../types";

const STATES = ["running", "paused", "terminated", "timed_out", "failed"];

/** `a=1, b=2` → {a: "1", b: "2"}; blank parts are skipped. */
export function parsePairs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(",")) {
    const eq = part.indexOf("=");
    if (!part.trim()) continue;
    if (eq < 1) throw new Error(`'${part.trim()}' is not KEY=VALUE`);
    out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

const showMeta = (m: Record<string, unknown>) =>
  Object.entries(m)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(", ");

function CreateSandbox({ onCreated }: { onCreated: (s: Sandbox) => void }) {
  const [meta, setMeta] = useState("");
  const [timeout, setTimeoutS] = useState("300");
  const [busy, error, run] = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const s = await api<Sandbox>(`${AGENTS}/sandboxes`, { body: { timeout: Number(timeout), metadata: parsePairs(meta) } });
      setMeta("");
      onCreated(s);
    });
  };
  return (
    <form class="row" onSubmit={submit} aria-label="New sandbox">
      <label>
        Metadata <input value={meta} placeholder="owner=me, task=demo" onInput={(e) => setMeta(e.currentTarget.value)} />
      </label>
      <label>
        Lifetime (s) <input type="number" min="1" value={timeout} onInput={(e) => setTimeoutS(e.currentTarget.value)} class="short" />
      </label>
      <button type="submit" disabled={busy}>
        {busy ? "Creating…" : "Create sandbox"}
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

export function SandboxesPage() {
  const [state, setState] = useState("");
  const [metaFilter, setMetaFilter] = useState("");
  const filter = useMemo(() => {
    try {
      return { pairs: parsePairs(metaFilter), error: undefined };
    } catch (e) {
      return { pairs: {}, error: e };
    }
  }, [metaFilter]);
  const list = useLoad(
    (signal) => {
      const q = new URLSearchParams({ limit: "200" });
      if (state) q.set("state", state);
      for (const [k, v] of Object.entries(filter.pairs)) q.set(`metadata.${k}`, v);
      return api<SandboxList>(`${AGENTS}/sandboxes?${q}`, { signal });
    },
    [state, filter],
    15_000,
  );
  // The same filters applied here too, so the view is right whatever the service filters itself.
  const shown = (list.data?.sandboxes ?? []).filter(
    (s) => (!state || s.status === state) && Object.entries(filter.pairs).every(([k, v]) => String(s.metadata[k] ?? "") === v),
  );
  return (
    <section>
      <h1>Sandboxes</h1>
      <CreateSandbox
        onCreated={(s) => {
          list.reload();
          location.hash = `#/sandboxes/${encodeURIComponent(s.sandbox_id)}`;
        }}
      />
      <div class="row">
        <Select label="State" value={state} options={STATES} onChange={setState} blank="any" />
        <label>
          Metadata filter <input value={metaFilter} placeholder="key=value" onInput={(e) => setMetaFilter(e.currentTarget.value)} />
        </label>
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ErrorBox error={filter.error} />
      <View state={list} label="Loading sandboxes">
        {() => (
          <Table
            rows={shown}
            head={["Sandbox", "State", "Metadata", "Started", "Ends"]}
            empty={<>No sandboxes{state || metaFilter ? " match these filters" : " yet: create one above"}.</>}
          >
            {(s) => (
              <tr key={s.sandbox_id}>
                <td>
                  <a href={`#/sandboxes/${encodeURIComponent(s.sandbox_id)}`} title={s.sandbox_id} aria-label={`Sandbox ${s.sandbox_id}`}>
                    <code>{s.sandbox_id.slice(0, 8)}</code>
                  </a>
                </td>
                <td>
                  <span class={`badge ${s.status}`}>{s.status}</span>
                </td>
                <td class="meta">{showMeta(s.metadata)}</td>
                <td>{fmtTime(s.started_at)}</td>
                <td>{fmtTime(s.ended_at ?? s.timeout_at)}</td>
              </tr>
            )}
          </Table>
        )}
      </View>
    </section>
  );
}

function MetricsChart({ id }: { id: string }) {
  const [samples, setSamples] = useState<MetricsSample[]>([]);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let stop = false;
    const tick = async () => {
      try {
        const m = await api<MetricsSample>(`${sbxPath(id)}/metrics`);
        if (!stop) setSamples((s) => [...s.slice(-119), m]);
        setError(undefined);
      } catch (e) {
        if (!stop) setError(e);
      }
    };
    void tick();
    const timer = setInterval(tick, 3000);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, [id]);
  const data = useMemo(
    () => ({
      times: samples.map((s) => Date.parse(s.timestamp) / 1000),
      series: [
        { label: "CPU %", values: samples.map((s) => s.cpu_usage), color: "#2563eb" },
        { label: "memory MiB", values: samples.map((s) => s.memory_usage), color: "#9333ea" },
      ],
    }),
    [samples],
  );
  const last = samples[samples.length - 1];
  return (
    <div>
      <h2>Metrics</h2>
      <ErrorBox error={error} />
      {last ? (
        <p>
          CPU {last.cpu_usage.toFixed(1)}% · memory {last.memory_usage.toFixed(1)} / {last.memory_total} MiB
        </p>
      ) : null}
      {samples.length >= 2 ? (
        <TimeChart title="CPU and memory of this sandbox" times={data.times} series={data.series} height={180} />
      ) : null}
    </div>
  );
}

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d/;

/** An event's detail for people: "timeout at: <local time> · by: api", not its JSON. */
function showDetail(detail: Record<string, unknown>): string {
  return Object.entries(detail)
    .map(([k, v]) => {
      let shown: string;
      if (typeof v === "string") shown = ISO_TIME.test(v) ? fmtTime(v) : v;
      else if (typeof v === "boolean") shown = v ? "yes" : "no";
      else if (typeof v === "number") shown = String(v);
      else shown = JSON.stringify(v);
      return `${k.replaceAll("_", " ")}: ${shown}`;
    })
    .join(" · ");
}

function Events({ id }: { id: string }) {
  const events = useLoad((signal) => api<SandboxEvents>(`${sbxPath(id)}/events`, { signal }), [id], 10_000);
  if (events.error && events.data === undefined) return null; // a service without sandbox events
  return (
    <div>
      <h2>Events</h2>
      <View state={events} label="Loading events">
        {(list) =>
          list.length === 0 ? (
            <Empty>No events yet.</Empty>
          ) : (
            <ul class="events">
              {list.map((ev, i) => (
                <li key={i}>
                  <code>{ev.type}</code> {fmtTime(ev.at)} {ev.reason ? <strong>{ev.reason}</strong> : null}{" "}
                  {ev.detail && Object.keys(ev.detail).length > 0 ? <span class="muted">{showDetail(ev.detail)}</span> : null}
                </li>
              ))}
            </ul>
          )
        }
      </View>
    </div>
  );
}

function FilesBrowser({ id }: { id: string }) {
  const [dir, setDir] = useState("/home/user");
  const list = useLoad((signal) => api<{ files: FileEntry[] }>(`${sbxPath(id)}/files/list`, { body: { path: dir }, signal }), [id, dir]);
  const [busy, error, run] = useAction();
  const parent = dir.replace(/\/[^/]+$/, "") || "/";
  const upload = (e: Event) => {
    const input = e.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    void run(async () => {
      const form = new FormData();
      form.append("path", `${dir}/`);
      form.append("file", file, file.name);
      await send(`${sbxPath(id)}/upload`, { body: form });
      input.value = "";
      list.reload();
    });
  };
  return (
    <div>
      <h2>Files</h2>
      <div class="row">
        <span>
          <code>{dir}</code>
        </span>
        {dir !== "/" ? (
          <button type="button" onClick={() => setDir(parent)}>
            Up
          </button>
        ) : null}
        <label class="button">
          Upload file <input type="file" class="visually-hidden" onChange={upload} disabled={busy} />
        </label>
      </div>
      <ErrorBox error={error} />
      <View state={list} label="Listing files">
        {(d) =>
          d.files.length === 0 ? (
            <Empty>This directory is empty.</Empty>
          ) : (
            <ul class="files">
              {d.files.map((f) => (
                <li key={f.path}>
                  {f.is_dir ? (
                    <button type="button" class="link" onClick={() => setDir(f.path)}>
                      {f.name}/
                    </button>
                  ) : (
                    <>
                      <span>{f.name}</span> <span class="muted">{fmtBytes(f.size)}</span>{" "}
                      <button
                        type="button"
                        class="link"
                        aria-label={`Download ${f.name}`}
                        onClick={() => void run(() => download(`${sbxPath(id)}/download?path=${encodeURIComponent(f.path)}`, f.name))}
                      >
                        Download
                      </button>
                    </>
                  )}
                </li>
              ))}
            </ul>
          )
        }
      </View>
    </div>
  );
}

function CommandBox({ id }: { id: string }) {
  const [cmd, setCmd] = useState("");
  const [result, setResult] = useState<CommandResult>();
  const [busy, error, run] = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void run(async () => setResult(await api<CommandResult>(`${sbxPath(id)}/commands/run`, { body: { command: cmd } })));
  };
  return (
    <div>
      <h2>Command</h2>
      <form class="row" onSubmit={submit}>
        <label class="grow">
          Command <input value={cmd} placeholder="ls -la" onInput={(e) => setCmd(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy || !cmd.trim()}>
          {busy ? "Running…" : "Run command"}
        </button>
      </form>
      <ErrorBox error={error} />
      {result ? (
        <div class="output" aria-live="polite">
          <pre>{result.stdout}</pre>
          {result.stderr ? <pre class="stderr">{result.stderr}</pre> : null}
          <p class={result.exit_code === 0 ? "muted" : "error"}>exit status {result.exit_code}</p>
        </div>
      ) : null}
    </div>
  );
}

export function SandboxDetail({ id }: { id: string }) {
  const sbx = useLoad((signal) => api<Sandbox>(sbxPath(id), { signal }), [id], 15_000);
  const [extendBy, setExtendBy] = useState("300");
  const [busy, error, run] = useAction();
  const live = sbx.data?.status === "running";
  return (
    <section>
      <p>
        <a href="#/sandboxes">← Sandboxes</a>
      </p>
      <h1>Sandbox {id}</h1>
      <View state={sbx} label="Loading the sandbox">
        {(s) => (
          <>
            <dl class="facts">
              <dt>State</dt>
              <dd>
                <span class={`badge ${s.status}`}>{s.status}</span>
              </dd>
              <dt>Template</dt>
              <dd>{s.template}</dd>
              <dt>Resources</dt>
              <dd>
                {s.cpu_count} CPU · {s.memory_mb} MiB
              </dd>
              <dt>Started</dt>
              <dd>{fmtTime(s.started_at)}</dd>
              <dt>{s.ended_at ? "Ended" : "Ends"}</dt>
              <dd>{fmtTime(s.ended_at ?? s.timeout_at)}</dd>
              <dt>Metadata</dt>
              <dd class="meta">{showMeta(s.metadata) || "—"}</dd>
            </dl>
            {live ? (
              <div class="row">
                <label>
                  Extend by (s){" "}
                  <input type="number" min="1" class="short" value={extendBy} onInput={(e) => setExtendBy(e.currentTarget.value)} />
                </label>
                <button
                  type="button"
                  disabled={busy}
                  onClick={() =>
                    void run(async () => {
                      // POST /timeout sets the remaining life; extending adds to what is left of it.
                      const now = await api<Sandbox>(sbxPath(id));
                      const left = Math.max(0, Math.ceil((Date.parse(now.timeout_at) - Date.now()) / 1000));
                      await api(`${sbxPath(id)}/timeout`, { body: { timeout: left + Number(extendBy) } });
                      sbx.reload();
                    })
                  }
                >
                  Extend
                </button>
                <button
                  type="button"
                  class="danger"
                  disabled={busy}
                  onClick={() =>
                    void run(async () => {
                      await api(sbxPath(id), { method: "DELETE" });
                      sbx.reload();
                    })
                  }
                >
                  Kill
                </button>
              </div>
            ) : null}
            <ErrorBox error={error} />
            {live ? (
              <>
                <MetricsChart id={id} />
                <CommandBox id={id} />
                <FilesBrowser id={id} />
              </>
            ) : null}
            <Events id={id} />
          </>
        )}
      </View>
    </section>
  );
}
