// Playground: an editor, a language, Run. Output streams in as the sandbox writes it (code/run's
// server-sent events); rich results are rendered; the sandbox (and so each language's kernel and
// its variables) stays the same across runs until "New sandbox". It is short-lived so that visits
// leave nothing running: its life is PLAYGROUND_IDLE_S after the last run (each run renews it), and
// "New sandbox" or signing out kills it.
import { useRef, useState } from "preact/hooks";
import { AGENTS, api, sbxPath, send, stream } from "../api";
import { CodeEditor, type Language } from "../editor";
import { Result } from "../results";
import { ErrorBox } from "../ui";
import type { RichResult, Sandbox } from "../types";

const SBX_ITEM = "agentbox.playground.sandbox";
/** Seconds the playground's sandbox lives after its last run. */
export const PLAYGROUND_IDLE_S = 300;

/** Kills the playground's sandbox, if it has one (at "New sandbox" and at sign-out); a failure does not matter, its life runs out anyway. */
export function endPlaygroundSandbox(): void {
  const id = sessionStorage.getItem(SBX_ITEM);
  sessionStorage.removeItem(SBX_ITEM);
  if (id) void send(sbxPath(id), { method: "DELETE" }).catch(() => undefined);
}
const SAMPLES: Record<Language, string> = {
  python: 'import matplotlib.pyplot as plt\n\nprint("hello from python")\nplt.plot([1, 4, 2, 8])\nplt.show()\n',
  javascript: 'console.log("hello from javascript");\n[1, 2, 3].map((x) => x * x)\n',
  typescript: 'const greet = (name: string): string => "hello, " + name;\nconsole.log(greet("typescript"));\n',
  bash: 'echo "hello from bash"\nuname -a\n',
};

type Chunk = { kind: "stdout" | "stderr"; text: string } | { kind: "result"; result: RichResult };

interface RunEnd {
  error: string | null;
  execution_time_ms: number;
}

export function PlaygroundPage() {
  const [language, setLanguage] = useState<Language>("python");
  const [code, setCode] = useState(SAMPLES.python);
  const [sandboxId, setSandboxId] = useState(() => sessionStorage.getItem(SBX_ITEM));
  const [chunks, setChunks] = useState<Chunk[]>([]);
  const [end, setEnd] = useState<RunEnd>();
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<unknown>();
  const abort = useRef<AbortController | undefined>(undefined);

  const useSandbox = (id: string | null) => {
    if (id) sessionStorage.setItem(SBX_ITEM, id);
    else sessionStorage.removeItem(SBX_ITEM);
    setSandboxId(id);
  };

  /** The playground's sandbox, its life renewed: the one it has if still running, else a new one. */
  const ensureSandbox = async (): Promise<string> => {
    if (sandboxId) {
      const renewed = await api(`${sbxPath(sandboxId)}/timeout`, { body: { timeout: PLAYGROUND_IDLE_S } }).then(
        () => true,
        () => false, // ended or gone: a new one
      );
      if (renewed) return sandboxId;
    }
    const s = await api<Sandbox>(`${AGENTS}/sandboxes`, { body: { timeout: PLAYGROUND_IDLE_S, metadata: { source: "playground" } } });
    useSandbox(s.sandbox_id);
    return s.sandbox_id;
  };

  const run = async () => {
    if (running) return;
    setRunning(true);
    setError(undefined);
    setChunks([]);
    setEnd(undefined);
    const ctl = new AbortController();
    abort.current = ctl;
    try {
      const id = await ensureSandbox();
      await stream(
        `${sbxPath(id)}/code/run`,
        { code, language, stream: true },
        (ev) => {
          if (ev.event === "stdout" || ev.event === "stderr") {
            const text = (ev.data as { text: string }).text;
            const kind = ev.event;
            setChunks((c) => {
              const last = c[c.length - 1];
              if (last && last.kind === kind) return [...c.slice(0, -1), { kind, text: last.text + text }];
              return [...c, { kind, text }];
            });
          } else if (ev.event === "result") setChunks((c) => [...c, { kind: "result", result: ev.data as RichResult }]);
          else if (ev.event === "end") {
            const d = ev.data as RunEnd & { error: unknown };
            if (d.error && typeof d.error === "object") setError(new Error((d.error as { message?: string }).message ?? "The run failed"));
            else setEnd(d);
          }
        },
        ctl.signal,
      );
    } catch (e) {
      if ((e as Error).name !== "AbortError") setError(e);
    } finally {
      setRunning(false);
    }
  };

  return (
    <section>
      <h1>Playground</h1>
      <div class="row">
        <label>
          Language{" "}
          <select
            value={language}
            onChange={(e) => {
              const l = e.currentTarget.value as Language;
              if (code === SAMPLES[language]) setCode(SAMPLES[l]);
              setLanguage(l);
            }}
          >
            <option value="python">Python</option>
            <option value="javascript">JavaScript</option>
            <option value="typescript">TypeScript</option>
            <option value="bash">Bash</option>
          </select>
        </label>
        <button type="button" onClick={() => void run()} disabled={running} aria-keyshortcuts="Control+Enter">
          {running ? "Running…" : "Run"}
        </button>
        {running ? (
          <button type="button" onClick={() => abort.current?.abort()}>
            Stop
          </button>
        ) : null}
        <span class="muted">
          {sandboxId ? (
            <>
              Sandbox <a href={`#/sandboxes/${encodeURIComponent(sandboxId)}`}>{sandboxId.slice(0, 8)}</a>, variables persist ·{" "}
              <button
                type="button"
                class="link"
                onClick={() => {
                  endPlaygroundSandbox();
                  useSandbox(null);
                }}
              >
                New sandbox
              </button>
            </>
          ) : (
            `A sandbox is created on the first run; it lives ${PLAYGROUND_IDLE_S / 60} minutes after the last run.`
          )}
        </span>
      </div>
      <CodeEditor value={code} language={language} onChange={setCode} onRun={() => void run()} />
      <ErrorBox error={error} />
      <section class="output" aria-label="Output" aria-live="polite">
        {chunks.length === 0 && !end && !running ? <p class="empty">Run the code to see its output here.</p> : null}
        {chunks.map((c, i) =>
          c.kind === "result" ? (
            <Result key={i} result={c.result} />
          ) : (
            <pre key={i} class={c.kind}>
              {c.text}
            </pre>
          ),
        )}
        {end?.error ? (
          <p class="error" role="alert">
            {end.error}
          </p>
        ) : null}
        {end ? <p class="muted">Finished in {end.execution_time_ms} ms</p> : null}
      </section>
    </section>
  );
}
