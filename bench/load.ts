// Load benchmark (`npm run bench:load`): many concurrent clients, each owning a sandbox at a time,
// mixing create, code/run in every language (output checked), file write/read (content checked),
// commands, list and kill, for a fixed time. Prints latency per operation and throughput, then
// checks that the service lost and duplicated nothing: every sandbox a client was given is listed
// once, with the status it should have.
//
// Settings (environment): LOAD_CLIENTS (200; `--clients 1000` or `--many` for the 1,000-client
// variant), LOAD_SECONDS (60), LOAD_KEYS (10: clients are spread over this many API keys, each its
// own tenant; `--one-key` (or LOAD_KEYS=1): one key, one tenant, and the service's default
// settings, limits included: one team running all its agents, the common case), LOAD_URL + LOAD_KEY to aim at a running service instead of starting one (then
// LOAD_KEYS is ignored: every client uses LOAD_KEY), LOAD_BURST (100: sequential creates after
// idle, measured before the load; 0 skips them), LOAD_SETTLE_MS (20000: idle time after start and
// after the burst, so that the load meets a settled service), LOAD_MAX_BACKOFF_MS (longest wait after a 429/503:
// 250, or 1000 with 1,000 clients), LOAD_LOG_FILE (when set, the started service's log is written
// there at the end: its warnings say where slow requests waited), LOAD_LOG_LEVEL (warn; info logs
// every request with the service's own response time), LOAD_TRACE_SLOW_MS (print the phases of
// every request slower than this, with its request id, to match with the service's log); any
// AGENTBOX_* variable is passed on to the started service.
//
// Beside the table it prints this machine's own speed (a fresh sandboxed python, started in the
// same run, as bench/code-run.ts's baseline), to read the figures against another machine's.
//
// The 10-key variant starts the service with limits raised (rate limit, per-tenant quota) so that
// the run measures capacity, not the per-key limits; the global caps (live sandboxes, executions, sandbox starts)
// stay at their defaults, so 503 at_capacity is an expected answer under this load: it is counted
// (and must carry Retry-After), not failed. Latency is reported over every answer, rejections
// included, since that is what a client waits for.
import http from "node:http";
import os from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { openDb } from "../src/store/db.js";
import { KeyDirectory } from "../src/tenancy/key-directory.js";
import { SqliteKeyStore } from "../src/tenancy/store/keys.js";
import { startServer } from "../test/helpers/server.js";
import { machineSpeed } from "./code-run.js";
import { joinCpuAccount } from "./cpu-account.js";
import { percentile, printTable, publishTable, type Row, sleep } from "./lib.js";

export type Op =
  | "create"
  | "run python"
  | "run javascript"
  | "run typescript"
  | "run bash"
  | "file write"
  | "file read"
  | "command"
  | "list"
  | "kill";

export interface LoadOptions {
  url: string;
  /** API keys; client i uses keys[i % keys.length]. */
  keys: string[];
  clients: number;
  durationMs: number;
  /** A request that takes longer than this is a failure (a hang). */
  requestTimeoutMs?: number;
  /** Longest a client waits after a 429/503 before trying again (it honours Retry-After up to this). */
  maxBackoffMs?: number;
  /** Sandbox life asked for at create, seconds (long enough to outlive the run). */
  sandboxTimeoutS?: number;
  /** Called once per request as it completes (used by the crash test to stop at the right moment). */
  onResponse?: (op: Op, status: number) => void;
  /** Stop early when this signal aborts. */
  signal?: AbortSignal;
}

export interface Failure {
  op: Op;
  status: number;
  detail: string;
}

export interface LoadReport {
  wallMs: number;
  latencies: Map<Op, number[]>;
  /** Count of responses by "status code" (429 and 503 split by error code). */
  statuses: Map<string, number>;
  /** Responses that must never happen: 5xx other than 503 at_capacity, 4xx other than 429, wrong output, timeouts. */
  failures: Failure[];
  /** Sandbox ids a create returned (201), with the key that created each. */
  created: Map<string, string>;
  /** Ids returned twice by create: must stay empty. */
  duplicateCreates: string[];
  /** Ids a kill returned 200 for. */
  killed: Set<string>;
  /** Creates whose outcome is unknown (the request failed or was cut): a sandbox may exist for them. */
  unknownCreates: number;
  /** Latency of every answer (any HTTP status), ms. */
  answers: number[];
  /** Requests that got no HTTP answer (connection refused/reset, timeout). */
  connectionErrors: number;
  /** 429/503 answers without a Retry-After header. */
  missingRetryAfter: number;
  /** 429/503 answers by operation. */
  rejectedByOp: Map<Op, number>;
}

const LANGS = ["python", "javascript", "typescript", "bash"] as const;

function codeFor(lang: (typeof LANGS)[number], n: number): { code: string; expect: string } {
  switch (lang) {
    case "python":
      return { code: `v = ${n}\nprint(v * 2)`, expect: `${n * 2}\n` };
    case "javascript":
      return { code: `const v = ${n}; console.log(v * 2)`, expect: `${n * 2}\n` };
    case "typescript":
      return { code: `const v: number = ${n}; console.log(v * 2)`, expect: `${n * 2}\n` };
    case "bash":
      return { code: `v=${n}; echo $((v * 2))`, expect: `${n * 2}\n` };
  }
}

interface Reply {
  status: number;
  body: Record<string, unknown> | undefined;
  text: string;
  retryAfterS: number;
}

export async function runLoad(opts: LoadOptions): Promise<LoadReport> {
  const requestTimeoutMs = opts.requestTimeoutMs ?? 60_000;
  const maxBackoffMs = opts.maxBackoffMs ?? 250;
  const report: LoadReport = {
    wallMs: 0,
    latencies: new Map(),
    statuses: new Map(),
    failures: [],
    created: new Map(),
    duplicateCreates: [],
    killed: new Set(),
    unknownCreates: 0,
    answers: [],
    connectionErrors: 0,
    missingRetryAfter: 0,
    rejectedByOp: new Map(),
  };
  // A lean keep-alive client (node:http): fetch costs ~1 ms of CPU per request on the client side,
  // which on the same machine would be taken from the service.
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.clients + 16 });
  const target = new URL(opts.url);
  const deadline = Date.now() + opts.durationMs;
  const running = () => Date.now() < deadline && !opts.signal?.aborted;

  // LOAD_TRACE_SLOW_MS: print the phases of every request slower than this (socket assigned,
  // connected, written, first byte of the answer, end), with the service's request id, to find
  // where a slow answer waited: in this process, on the wire, or in the service.
  const traceSlowMs = Number(process.env.LOAD_TRACE_SLOW_MS ?? 0);
  function trace(req: http.ClientRequest, method: string, route: string): void {
    const t0 = performance.now();
    // Wall-clock start, to line the phases up with the service's log times.
    const at: Record<string, number> = { start: Date.now() };
    const mark = (name: string) => {
      at[name] = Math.round(performance.now() - t0);
    };
    req.on("socket", (socket) => {
      mark("socket");
      if (req.reusedSocket) at.reused = 1;
      else socket.once("connect", () => mark("connect"));
    });
    req.on("finish", () => mark("written"));
    req.on("response", (res) => {
      mark("response");
      res.on("end", () => {
        mark("end");
        if ((at.end ?? 0) >= traceSlowMs) {
          const id = res.headers["x-request-id"] ?? "-";
          process.stdout.write(`slow: ${method} ${route} ${res.statusCode} id ${id} ${JSON.stringify(at)}\n`);
        }
      });
    });
  }

  function send(
    method: string,
    route: string,
    headers: Record<string, string>,
    body: unknown,
  ): Promise<{ status: number; text: string; retryAfter: number; hasRetryAfter: boolean }> {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const h: http.OutgoingHttpHeaders = { ...headers };
    if (data !== undefined) h["content-length"] = Buffer.byteLength(data);
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: target.hostname, port: target.port, path: route, method, agent, headers: h, timeout: requestTimeoutMs },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            text += chunk;
          });
          res.on("error", reject);
          res.on("end", () => {
            const ra = res.headers["retry-after"];
            resolve({ status: res.statusCode ?? 0, text, retryAfter: Number(ra ?? 0), hasRetryAfter: ra !== undefined });
          });
        },
      );
      if (traceSlowMs > 0) trace(req, method, route);
      req.on("timeout", () => req.destroy(new Error(`no answer in ${requestTimeoutMs} ms`)));
      req.on("error", reject);
      req.end(data);
    });
  }

  async function request(op: Op, key: string, method: string, route: string, body?: unknown): Promise<Reply | undefined> {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const t0 = performance.now();
    let status = 0;
    let text = "";
    let retryAfterS = 0;
    let hasRetryAfter = false;
    try {
      ({ status, text, retryAfter: retryAfterS, hasRetryAfter } = await send(method, route, headers, body));
    } catch (err) {
      report.connectionErrors += 1;
      report.failures.push({ op, status: 0, detail: `request failed: ${(err as Error).message}` });
      opts.onResponse?.(op, 0);
      return undefined;
    }
    const ms = performance.now() - t0;
    report.answers.push(ms);
    if (status === 429 || status === 503) {
      report.rejectedByOp.set(op, (report.rejectedByOp.get(op) ?? 0) + 1);
      if (!hasRetryAfter) report.missingRetryAfter += 1;
    }
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
    const code = (parsed?.error as { code?: string } | undefined)?.code;
    const label = status === 429 || status === 503 ? `${status} ${code}` : String(status);
    report.statuses.set(label, (report.statuses.get(label) ?? 0) + 1);
    opts.onResponse?.(op, status);
    if (status < 300) {
      const list = report.latencies.get(op) ?? [];
      list.push(ms);
      report.latencies.set(op, list);
    } else if (!((status === 503 && code === "at_capacity") || status === 429)) {
      report.failures.push({ op, status, detail: text.slice(0, 300) });
    }
    return { status, body: parsed, text, retryAfterS };
  }

  const backoff = (r: Reply) => sleep(Math.min(maxBackoffMs, Math.max(1, r.retryAfterS) * 1000) * (0.5 + Math.random() / 2));

  async function client(index: number): Promise<void> {
    const key = opts.keys[index % opts.keys.length] as string;
    let sandbox: string | undefined;
    let n = 0;
    // Spread the start (over a second per 200 clients, at most a tenth of the run), as clients
    // arriving over a few seconds do, rather than all connecting in the same instant.
    await sleep(Math.random() * Math.min((opts.clients / 200) * 1000, opts.durationMs / 10));
    while (running()) {
      n += 1;
      if (!sandbox) {
        const r = await request("create", key, "POST", "/v1/agents/sandboxes", {
          timeout: opts.sandboxTimeoutS ?? 900,
          metadata: { client: index },
        });
        if (!r) {
          report.unknownCreates += 1;
          continue;
        }
        if (r.status === 201) {
          sandbox = String(r.body?.sandbox_id);
          if (report.created.has(sandbox)) report.duplicateCreates.push(sandbox);
          report.created.set(sandbox, key);
        } else if (r.status === 429 || r.status === 503) await backoff(r);
        continue;
      }
      const base = `/v1/agents/sandboxes/${sandbox}`;
      const dice = Math.random();
      if (dice < 0.6) {
        const lang = LANGS[n % LANGS.length] as (typeof LANGS)[number];
        const { code, expect } = codeFor(lang, n);
        const op = `run ${lang}` as Op;
        const r = await request(op, key, "POST", `${base}/code/run`, { language: lang, code, timeout: 30 });
        if (r?.status === 200) {
          const logs = r.body?.logs as { stdout?: string } | undefined;
          if (logs?.stdout !== expect || r.body?.error !== null) {
            report.failures.push({ op, status: 200, detail: `wrong result: ${r.text.slice(0, 300)}` });
          }
        } else if (r && (r.status === 429 || r.status === 503)) await backoff(r);
      } else if (dice < 0.8) {
        const path = `load/c${index}-${n}.txt`;
        const content = `client ${index} op ${n} ${"x".repeat(n % 200)}`;
        const w = await request("file write", key, "POST", `${base}/files/write`, { path, content });
        if (w?.status !== 200) {
          if (w && (w.status === 429 || w.status === 503)) await backoff(w);
          continue;
        }
        const r = await request("file read", key, "POST", `${base}/files/read`, { path });
        if (r?.status === 200 && r.body?.content !== content) {
          report.failures.push({ op: "file read", status: 200, detail: `wrong content: ${r.text.slice(0, 200)}` });
        }
      } else if (dice < 0.87) {
        const r = await request("command", key, "POST", `${base}/commands/run`, { command: "echo", args: [`c${n}`] });
        if (r?.status === 200 && r.body?.stdout !== `c${n}\n`) {
          report.failures.push({ op: "command", status: 200, detail: `wrong output: ${r.text.slice(0, 200)}` });
        } else if (r && (r.status === 429 || r.status === 503)) await backoff(r);
      } else if (dice < 0.92) {
        await request("list", key, "GET", "/v1/agents/sandboxes?limit=10");
      } else {
        const r = await request("kill", key, "DELETE", base);
        if (r?.status === 200) {
          report.killed.add(sandbox);
          sandbox = undefined;
        }
      }
    }
  }

  const t0 = performance.now();
  await Promise.all(Array.from({ length: opts.clients }, (_, i) => client(i)));
  report.wallMs = performance.now() - t0;
  agent.destroy();
  return report;
}

export interface Consistency {
  /** Created ids the service does not list. */
  lost: string[];
  /** Ids listed more than once. */
  duplicated: string[];
  /** Listed ids no create returned (beyond the creates whose outcome is unknown). */
  unexpected: string[];
  /** Sandboxes whose status is not what the clients did to them. */
  wrongStatus: string[];
}

/** Lists every sandbox of every key and compares with what the clients saw. */
export async function checkConsistency(url: string, keys: string[], report: LoadReport): Promise<Consistency> {
  const seen = new Map<string, number>();
  const statusOf = new Map<string, string>();
  for (const key of new Set(keys)) {
    for (let offset = 0; ; offset += 1000) {
      const res = await fetch(`${url}/v1/agents/sandboxes?limit=1000&offset=${offset}`, { headers: { authorization: `Bearer ${key}` } });
      if (res.status !== 200) throw new Error(`list failed: ${res.status} ${await res.text()}`);
      const page = (await res.json()) as { sandboxes: { sandbox_id: string; status: string }[]; total: number };
      for (const s of page.sandboxes) {
        seen.set(s.sandbox_id, (seen.get(s.sandbox_id) ?? 0) + 1);
        statusOf.set(s.sandbox_id, s.status);
      }
      if (page.sandboxes.length < 1000) break;
    }
  }
  const lost = [...report.created.keys()].filter((id) => !seen.has(id));
  const duplicated = [...seen].filter(([, count]) => count > 1).map(([id]) => id);
  const extra = [...seen.keys()].filter((id) => !report.created.has(id));
  const unexpected = extra.length > report.unknownCreates ? extra : [];
  const wrongStatus = [...report.created.keys()].filter((id) => {
    const status = statusOf.get(id);
    return status !== undefined && status !== (report.killed.has(id) ? "terminated" : "running");
  });
  return { lost, duplicated, unexpected, wrongStatus };
}

/** Kills every sandbox the clients left running. */
export async function killAll(url: string, report: LoadReport): Promise<void> {
  const left = [...report.created].filter(([id]) => !report.killed.has(id));
  for (let i = 0; i < left.length; i += 20) {
    await Promise.all(
      left
        .slice(i, i + 20)
        .map(([id, key]) => fetch(`${url}/v1/agents/sandboxes/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${key}` } })),
    );
  }
}

/** Creates `n` API keys (each its own tenant) directly in the service's database, as the CLI does. */
export async function createKeys(
  dataDir: string,
  n: number,
  opts: { rateLimitPerMinute?: number; maxConcurrentRuns?: number } = {},
): Promise<string[]> {
  const db = openDb(dataDir);
  const keys = new KeyDirectory(new SqliteKeyStore(db));
  try {
    const made: string[] = [];
    for (let i = 0; i < n; i++) made.push((await keys.create({ name: `load-${i}`, ...opts })).key);
    return made;
  } finally {
    await keys.close();
    db.close();
  }
}

export function printReport(title: string, report: LoadReport): string {
  const ops: Op[] = [
    "create",
    "run python",
    "run javascript",
    "run typescript",
    "run bash",
    "file write",
    "file read",
    "command",
    "list",
    "kill",
  ];
  const rows: Row[] = ops
    .filter((op) => report.latencies.has(op))
    .map((op) => ({ name: op, samples: report.latencies.get(op) as number[], wallMs: report.wallMs }));
  const all = ops.flatMap((op) => report.latencies.get(op) ?? []);
  rows.push({ name: "all successful answers", samples: all, wallMs: report.wallMs });
  rows.push({ name: "**all answers** (rejections included)", samples: report.answers, wallMs: report.wallMs });
  const table = printTable(title, rows);
  const total = report.answers.length;
  const count = (prefix: string) => [...report.statuses].filter(([s]) => s.startsWith(prefix)).reduce((a, [, c]) => a + c, 0);
  const pct = (n: number) => `${((n / Math.max(1, total)) * 100).toFixed(1)}%`;
  const statuses = [...report.statuses].sort().map(([s, c]) => `${s}: ${c}`);
  const wrong = report.failures.filter((f) => f.status !== 0).length;
  const summary =
    `${total} answers in ${(report.wallMs / 1000).toFixed(1)} s: **${((total / report.wallMs) * 1000).toFixed(0)} answers/s**; ` +
    `503: ${pct(count("503"))}, 429: ${pct(count("429"))}; statuses: ${statuses.join(", ")}; ` +
    `sandboxes created ${report.created.size}, killed ${report.killed.size}; ` +
    `wrong answers ${wrong}, connection errors ${report.connectionErrors}, rejections without Retry-After ${report.missingRetryAfter}`;
  process.stdout.write(`${summary}\n`);
  const rejected = [...report.rejectedByOp].map(([op, n]) => `${op} ${n}`).join(", ");
  if (rejected) process.stdout.write(`rejections by operation: ${rejected}\n`);
  for (const f of report.failures.slice(0, 10)) process.stdout.write(`  failure: ${f.op} ${f.status} ${f.detail}\n`);
  return `${table}\n\n${summary}`;
}

/**
 * Sequential creates (each followed by nothing: the sandboxes are killed afterwards) after the
 * service has been idle: what an agent starting a burst of work sees from the warm pool.
 */
export async function createBurst(url: string, key: string, n: number): Promise<number[]> {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const samples: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(`${url}/v1/agents/sandboxes`, { method: "POST", headers, body: "{}" });
    const body = (await res.json()) as { sandbox_id?: string };
    samples.push(performance.now() - t0);
    if (res.status !== 201) throw new Error(`create ${i} of the burst: ${res.status} ${JSON.stringify(body)}`);
    ids.push(String(body.sandbox_id));
  }
  for (let i = 0; i < ids.length; i += 20) {
    await Promise.all(ids.slice(i, i + 20).map((id) => fetch(`${url}/v1/agents/sandboxes/${id}`, { method: "DELETE", headers })));
  }
  return samples;
}

function clientsArg(): number {
  const i = process.argv.indexOf("--clients");
  if (i >= 0) return Number(process.argv[i + 1]);
  if (process.argv.includes("--many")) return 1000;
  return Number(process.env.LOAD_CLIENTS ?? 200);
}

/** The one-key variant's targets (see the README): what a lone team of agents must get. */
function checkTargets(report: LoadReport): string[] {
  const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
  const answersPerS = (report.answers.length / report.wallMs) * 1000;
  const ok = [...report.latencies.values()].reduce((n, l) => n + l.length, 0);
  const p99All = percentile(sorted(report.answers), 99);
  const p99Create = percentile(sorted(report.latencies.get("create") ?? []), 99);
  const mark = (pass: boolean) => (pass ? "ok" : "MISSED");
  return [
    `${mark(p99All <= 1000)} p99 over all answers ${p99All.toFixed(0)} ms (target ≤ 1000)`,
    `${mark(p99Create <= 2000)} p99 of accepted creates ${p99Create.toFixed(0)} ms (target ≤ 2000)`,
    `${mark(answersPerS >= 500)} ${answersPerS.toFixed(0)} answers/s (target ≥ 500)`,
    `${mark(ok * 2 >= report.answers.length)} ${((ok / Math.max(1, report.answers.length)) * 100).toFixed(0)} % successes (target ≥ 50 %)`,
    `${mark(report.missingRetryAfter === 0)} ${report.missingRetryAfter} rejections without Retry-After`,
  ];
}

async function main(): Promise<void> {
  const clients = clientsArg();
  const seconds = Number(process.env.LOAD_SECONDS ?? 60);
  const burst = Number(process.env.LOAD_BURST ?? 100);
  const oneKey = process.argv.includes("--one-key") || process.env.LOAD_KEYS === "1";
  let url = process.env.LOAD_URL;
  let keys = process.env.LOAD_KEY ? [process.env.LOAD_KEY] : [];
  let dispose: (() => Promise<void>) | undefined;
  // Before the service starts, so that it and its sandboxes are counted (see cpu-account.ts).
  const cpu = url ? undefined : joinCpuAccount();
  const speed = await machineSpeed();
  const machine =
    `machine: a fresh sandboxed python (print(1)) takes ${speed.toFixed(1)} ms p50 here, now; ` +
    `${os.availableParallelism()} cores, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`;
  process.stdout.write(`${machine}\n`);
  if (!url) {
    const server = await startServer({
      env: {
        ...(oneKey ? {} : { AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000", AGENTBOX_MAX_SANDBOXES_PER_TENANT: "100000" }),
        // Clients here all come from one address; in production they come from many.
        AGENTBOX_MAX_CONNECTIONS_PER_ADDRESS: String(clients * 2 + 64),
        AGENTBOX_MAX_CONNECTIONS: String(clients * 2 + 128),
        AGENTBOX_LOG_LEVEL: process.env.LOAD_LOG_LEVEL ?? "warn",
        // The helper's default is a small pool for tests; a service runs with its configured default.
        AGENTBOX_WARM_POOL: process.env.AGENTBOX_WARM_POOL ?? "",
        // Any other setting given to the benchmark goes to the service (A/B runs of one setting).
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("AGENTBOX_") && k !== "AGENTBOX_WARM_POOL")),
        AGENTBOX_CREATE_WAIT_MS: process.env.AGENTBOX_CREATE_WAIT_MS ?? "",
      },
    });
    url = server.url;
    keys = await createKeys(server.dataDir, (oneKey ? 1 : Number(process.env.LOAD_KEYS ?? 10)) + 1);
    dispose = async () => {
      if (process.env.LOAD_LOG_FILE) (await import("node:fs")).writeFileSync(process.env.LOAD_LOG_FILE, server.logs());
      await server.dispose();
    };
  }
  // The burst uses a key of its own, so that its sandboxes are not counted in the load's consistency check.
  const burstKey = keys.length > 1 ? (keys.pop() as string) : (keys[0] as string);
  try {
    // A quiet start: the warm pool filled (and its sandboxes' idle-time work done), as on a
    // service that has been up for a while.
    const settleMs = Number(process.env.LOAD_SETTLE_MS ?? 20_000);
    let burstTable = "";
    if (burst > 0) {
      await sleep(settleMs);
      const samples = await createBurst(url, burstKey, burst);
      burstTable = printTable(`Burst of ${burst} sequential creates after ${settleMs / 1000} s idle (target p50 ≤ 20 ms)`, [
        { name: "create (POST /sandboxes)", samples },
      ]);
    }
    await sleep(settleMs);
    const variant = oneKey ? "one key, default settings" : `${keys.length} keys, per-key limits raised`;
    process.stdout.write(`load: ${clients} clients for ${seconds} s against ${url} (${variant})\n`);
    // How long a refused client waits at most before retrying (it honours Retry-After up to this):
    // 250 ms by default, sooner than the service asks, to keep the pressure on; the 1,000-client
    // variant honours Retry-After (1 s), as a well-behaved client does.
    const maxBackoffMs = Number(process.env.LOAD_MAX_BACKOFF_MS ?? (clients >= 1000 ? 1000 : 250));
    const tree0 = cpu?.treeMs() ?? 0;
    const own0 = cpu?.ownMs() ?? 0;
    // The clients share this machine with the service: a late turn of their own event loop is
    // counted in every latency they measure. Its delays say how much of a tail is theirs.
    const clientLoop = monitorEventLoopDelay({ resolution: 10 });
    clientLoop.enable();
    const report = await runLoad({ url, keys, clients, durationMs: seconds * 1000, requestTimeoutMs: 60_000, maxBackoffMs });
    clientLoop.disable();
    const cpuLine = cpu && cpuReport(report, cpu.treeMs() - tree0, cpu.ownMs() - own0);
    const loadTable = printReport(
      `Load (${variant}): ${clients} clients, ${seconds} s, mixed create / code/run (4 languages) / files / commands / list / kill`,
      report,
    );
    process.stdout.write(`${machine}\n`);
    if (cpuLine) process.stdout.write(`${cpuLine}\n`);
    // (The histogram counts the 10 ms between two of its own turns: a delay is what is past that.)
    const ms = (ns: number) => Math.max(0, ns / 1e6 - 10).toFixed(0);
    process.stdout.write(
      `clients' own event loop (counted in every latency above): delay p50 ${ms(clientLoop.percentile(50))} ms, ` +
        `p99 ${ms(clientLoop.percentile(99))} ms, max ${ms(clientLoop.max)} ms\n`,
    );
    const targets = oneKey ? checkTargets(report).map((line) => `target: ${line}`) : [];
    for (const line of targets) process.stdout.write(`${line}\n`);
    // The 1,000-client variant is a check of its own, not the table docs/benchmarks.md keeps.
    if (clients < 1000) {
      const extra = [cpuLine, ...targets].filter((l): l is string => Boolean(l)).map((l) => `- ${l}`);
      const text = [loadTable, extra.join("\n"), burstTable].filter((t) => t !== "").join("\n\n");
      await publishTable(oneKey ? "load-one-key" : "load", text, machine);
    }
    const check = await checkConsistency(url, keys, report);
    process.stdout.write(
      `consistency: lost ${check.lost.length}, duplicated ${check.duplicated.length + report.duplicateCreates.length}, ` +
        `unexpected ${check.unexpected.length}, wrong status ${check.wrongStatus.length}\n`,
    );
    await killAll(url, report);
    const bad =
      report.failures.length +
      report.missingRetryAfter +
      check.lost.length +
      check.duplicated.length +
      check.unexpected.length +
      check.wrongStatus.length;
    if (bad > 0) process.exitCode = 1;
  } finally {
    await dispose?.();
    cpu?.close();
  }
}

/**
 * Where the CPU went during the load: the service with its sandboxes, and the clients of this
 * process. A sandbox's life (start, kernels, kill) is most of it, and it is what bounds how many
 * successes this machine can give a second with this mix.
 */
function cpuReport(report: LoadReport, treeMs: number, clientsMs: number): string {
  const serviceMs = treeMs - clientsMs;
  const lives = Math.max(1, report.created.size);
  const successes = [...report.latencies.values()].reduce((n, l) => n + l.length, 0);
  const cores = (ms: number) => (ms / report.wallMs).toFixed(2);
  return (
    `cpu: service and sandboxes ${cores(serviceMs)} cores busy on average, the load's clients ${cores(clientsMs)}; ` +
    `${(serviceMs / lives).toFixed(0)} ms of CPU per sandbox created (its life: start, kernels, runs, kill), ` +
    `${(successes / lives).toFixed(1)} successful answers per sandbox`
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
