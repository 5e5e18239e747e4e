// Shared benchmark helpers: timing, percentiles, the printed table and its copy in docs/benchmarks.md.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { type Dispatcher, Pool } from "undici";

export interface Row {
  name: string;
  samples: number[];
  /** Wall time of the whole batch, for throughput; defaults to the sum of samples (sequential). */
  wallMs?: number;
  /** Operations completed in wallMs when it differs from samples.length. */
  ops?: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}

/** The middle value of unsorted samples. */
export const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** How much slower `via` is than `direct` at percentile `p` (ms). */
export function added(direct: number[], via: number[], p: number): number {
  const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
  return percentile(sorted(via), p) - percentile(sorted(direct), p);
}

export function summarize(row: Row) {
  const sorted = [...row.samples].sort((a, b) => a - b);
  const wall = row.wallMs ?? sorted.reduce((a, b) => a + b, 0);
  return {
    name: row.name,
    n: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    throughput: ((row.ops ?? sorted.length) / wall) * 1000,
  };
}

export function printTable(title: string, rows: Row[]): string {
  const header = "| measure | n | p50 ms | p95 ms | p99 ms | throughput /s |";
  const lines = [`### ${title}`, "", header, "| --- | ---: | ---: | ---: | ---: | ---: |"];
  for (const row of rows) {
    const s = summarize(row);
    lines.push(`| ${s.name} | ${s.n} | ${s.p50.toFixed(2)} | ${s.p95.toFixed(2)} | ${s.p99.toFixed(2)} | ${s.throughput.toFixed(0)} |`);
  }
  const text = lines.join("\n");
  process.stdout.write(`${text}\n\n`);
  return text;
}

/** docs/benchmarks.md, where each benchmark keeps its current table. */
export const BENCHMARKS_DOC = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "docs", "benchmarks.md");

/**
 * `doc` with the text between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` replaced by `body`
 * (the markers stay, so the next run finds them). A missing or doubled marker is an error: a
 * benchmark must not append a second copy of its table or write into another's.
 */
export function replaceSection(doc: string, name: string, body: string): string {
  const open = `<!-- bench:${name} -->`;
  const close = `<!-- /bench:${name} -->`;
  const start = doc.indexOf(open);
  const end = doc.indexOf(close);
  if (start === -1 || end === -1 || end < start) throw new Error(`no section ${open} ... ${close} in the document`);
  if (doc.indexOf(open, start + 1) !== -1 || doc.indexOf(close, end + 1) !== -1) throw new Error(`section ${name} appears twice`);
  return `${doc.slice(0, start + open.length)}\n${body.trim()}\n${doc.slice(end)}`;
}

/** What a run writes in its section: the date, the machine's speed as the run measured it, its tables. */
export function sectionBody(markdown: string, machine: string, date: Date): string {
  return `Last run ${date.toISOString().slice(0, 10)}; ${machine}.\n\n${markdown.trim()}`;
}

/**
 * With `BENCH_WRITE_DOCS=1`, replaces benchmark `name`'s section of docs/benchmarks.md with this
 * run's tables, the machine line and today's date; otherwise does nothing (the machine line, which
 * costs a few fresh interpreters, is measured only then when given as a function).
 */
export async function publishTable(name: string, markdown: string, machine: string | (() => Promise<string>)): Promise<void> {
  if (process.env.BENCH_WRITE_DOCS !== "1") return;
  const line = typeof machine === "string" ? machine : await machine();
  const doc = fs.readFileSync(BENCHMARKS_DOC, "utf8");
  fs.writeFileSync(BENCHMARKS_DOC, replaceSection(doc, name, sectionBody(markdown, line, new Date())));
  process.stdout.write(`(table written to docs/benchmarks.md, section ${name})\n`);
}

/** `markdown`, after `publishTable` (for a benchmark's `return`). */
export async function published(name: string, markdown: string, machine: string | (() => Promise<string>)): Promise<string> {
  await publishTable(name, markdown, machine);
  return markdown;
}

export async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const value = await fn();
  return [performance.now() - t0, value];
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A lean keep-alive JSON client (undici's connection pool): fetch() adds ~1 ms of client-side work
 * per request and node:http about a third of that, which on two cores is taken from the service.
 */
export function keepAliveClient(server: { port: number; key: string }, sockets = 64) {
  const pool = new Pool(`http://127.0.0.1:${server.port}`, { connections: sockets });
  return async function request<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }> {
    // A string or a Buffer is an already encoded body (a benchmark encodes its bodies before timing).
    const data = body === undefined ? undefined : typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const headers: Record<string, string> = { authorization: `Bearer ${server.key}` };
    if (data !== undefined) headers["content-type"] = "application/json";
    const res = await pool.request({ method: method as Dispatcher.HttpMethod, path, headers, body: data });
    const text = await res.body.text();
    return { status: res.statusCode, body: (text ? JSON.parse(text) : {}) as T };
  };
}

/** What keepAliveClient() returns: one request over its pool. */
export type KeepAliveCall = ReturnType<typeof keepAliveClient>;

const RUN = { code: "print(1)", language: "python" };

/**
 * Throughput of trivial python runs: one client per sandbox of `sandboxIds`, each sending runs back
 * to back for `seconds` (after one unmeasured run each), a client's n-th run through
 * `calls[(client + n) % calls.length]` (spread over a cluster's nodes, so most runs of a cluster
 * are forwarded). A run that is not 200 stops the benchmark.
 */
export async function runThroughput(name: string, calls: KeepAliveCall[], sandboxIds: string[], seconds: number): Promise<Row> {
  const via = (i: number) => calls[i % calls.length] as KeepAliveCall;
  const run = async (call: KeepAliveCall, sid: string) => {
    const res = await call("POST", `/v1/agents/sandboxes/${sid}/code/run`, RUN);
    if (res.status !== 200) throw new Error(`run failed: ${res.status} ${JSON.stringify(res.body)}`);
  };
  await Promise.all(sandboxIds.map((sid, client) => run(via(client), sid)));
  const samples: number[] = [];
  const started = performance.now();
  const stopAt = started + seconds * 1000;
  await Promise.all(
    sandboxIds.map(async (sid, client) => {
      for (let n = 0; performance.now() < stopAt; n++) {
        const [ms] = await timed(() => run(via(client + n), sid));
        samples.push(ms);
      }
    }),
  );
  return { name, samples, wallMs: performance.now() - started };
}

/** Where timedPost sends: a loopback port or a unix socket, and the keep-alive agent that holds its connections. */
export interface PostTarget {
  port?: number;
  /** A unix socket instead of the port (a process in its own network namespace). */
  socketPath?: string;
  path: string;
  headers: Record<string, string>;
  agent: http.Agent;
}

/** One POST; resolves with [ms to the first body byte, ms to the end]; a non-200 answer rejects. */
export function timedPost(t: PostTarget, body: Buffer): Promise<[number, number]> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      {
        ...(t.socketPath ? { socketPath: t.socketPath } : { host: "127.0.0.1", port: t.port }),
        path: t.path,
        method: "POST",
        agent: t.agent,
        headers: { ...t.headers, "content-length": body.length },
      },
      (res) => {
        let first = -1;
        res.on("data", () => {
          if (first < 0) first = performance.now() - t0;
        });
        res.on("end", () => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
          else resolve([first, performance.now() - t0]);
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** `count` POSTs one after another, pushing each one's first-byte (pick 0) or whole (pick 1) time into `out`. */
export async function sequentialPosts(t: PostTarget, body: Buffer, count: number, pick: 0 | 1, out: number[]): Promise<void> {
  for (let i = 0; i < count; i++) out.push((await timedPost(t, body))[pick]);
}

/** The four series directVersusVia() measures. */
export type Series = "directPlain" | "viaPlain" | "directTtfb" | "viaTtfb";

/**
 * Warms both targets up (`warmup` of each body), then measures them in alternating batches so both
 * see the same machine: `n` whole answers of `plain` and `n` first-byte times of `streamed` each.
 * `cpu`: read before and after every measured batch (e.g. processes' CPU time, ns); `cpu` of the
 * result is the sum of its deltas per series, so each process's CPU per request of each kind.
 */
export async function directVersusVia(
  direct: PostTarget,
  via: PostTarget,
  plain: Buffer,
  streamed: Buffer,
  opts: { n: number; batch: number; warmup: number; cpu?: () => number[] },
): Promise<Record<Series, number[]> & { cpu: Record<Series, number[]> }> {
  for (const t of [direct, via]) {
    await sequentialPosts(t, plain, opts.warmup, 1, []);
    await sequentialPosts(t, streamed, opts.warmup, 0, []);
  }
  const s = { directPlain: [] as number[], viaPlain: [] as number[], directTtfb: [] as number[], viaTtfb: [] as number[] };
  const cpu: Record<Series, number[]> = { directPlain: [], viaPlain: [], directTtfb: [], viaTtfb: [] };
  const measure = async (series: Series, t: PostTarget, body: Buffer, count: number, pick: 0 | 1) => {
    const before = opts.cpu?.() ?? [];
    await sequentialPosts(t, body, count, pick, s[series]);
    const after = opts.cpu?.() ?? [];
    after.forEach((v, i) => {
      cpu[series][i] = (cpu[series][i] ?? 0) + v - (before[i] ?? 0);
    });
  };
  for (let done = 0; done < opts.n; done += opts.batch) {
    const n = Math.min(opts.batch, opts.n - done);
    await measure("directPlain", direct, plain, n, 1);
    await measure("viaPlain", via, plain, n, 1);
    await measure("directTtfb", direct, streamed, n, 0);
    await measure("viaTtfb", via, streamed, n, 0);
  }
  return { ...s, cpu };
}
