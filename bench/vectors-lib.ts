// What the vector benchmarks share: exact ground truth, encoding and sending batches, waiting for
// an index's state, and the line that reports this machine's speed and load beside every table.
import { createRequire } from "node:module";
import os from "node:os";
import type { keepAliveClient } from "./lib.js";

/** The per-key rate limit would cap a benchmark of thousands of searches a second. The vectors
 * area's own settings (AGENTBOX_VECTOR_*) pass through from the environment, to compare them. */
export const BENCH_ENV: Record<string, string> = {
  AGENTBOX_LOG_LEVEL: "warn",
  AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000",
  ...Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith("AGENTBOX_VECTOR_") && e[1] !== undefined),
  ),
};
export const BATCH = 1000;

export type Call = ReturnType<typeof keepAliveClient>;

// Loaded as CommonJS: the package's ES module build cannot locate its prebuilt binary.
const usearch = createRequire(import.meta.url)("usearch") as typeof import("usearch").default;

/** Exact top-k (usearch's SIMD brute force: a strong baseline); squared Euclidean unless `cosine`. */
export function exactTopK(
  data: Float32Array,
  dim: number,
  queries: Float32Array[],
  k: number,
  threads: number,
  cosine = false,
): number[][] {
  const metric = cosine ? usearch.MetricKind.Cos : usearch.MetricKind.L2sq;
  const m = usearch.exactSearch(data, queries, dim, k, metric, threads);
  if (m instanceof usearch.BatchMatches) return queries.map((_, q) => Array.from(m.get(q).keys, Number));
  return [Array.from(m.keys, Number)];
}

export const vec = (a: Float32Array, dim: number, i: number) => Array.from(a.subarray(i * dim, (i + 1) * dim));

/** Rows of `data` as the upsert bodies of /batch, ids "0", "1", ... (encoded before any timing). */
export function encodeBatches(data: Float32Array, dim: number, n: number, metadata = true): Buffer[] {
  const out: Buffer[] = [];
  for (let start = 0; start < n; start += BATCH) {
    const vectors = [];
    for (let i = start; i < Math.min(n, start + BATCH); i++)
      vectors.push(
        metadata
          ? { id: String(i), embedding: vec(data, dim, i), metadata: { g: i % 10 } }
          : { id: String(i), embedding: vec(data, dim, i) },
      );
    out.push(Buffer.from(JSON.stringify({ vectors })));
  }
  return out;
}

/** Sends the batches from `clients` clients; returns each batch's latency. */
export async function upsertAll(call: Call, index: string, batches: Buffer[], clients = 2): Promise<number[]> {
  const samples: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < batches.length) {
        const body = batches[next++] as Buffer;
        const t = performance.now();
        const res = await call("POST", `/v1/vectors/${index}/batch`, body);
        samples.push(performance.now() - t);
        if (res.status !== 200) throw new Error(`upsert: ${res.status} ${JSON.stringify(res.body)}`);
      }
    }),
  );
  return samples;
}

export interface IndexView {
  status: string;
  vector_count: number;
  search_width: number;
  target_recall: number;
  estimated_recall: number | null;
}

export async function indexView(call: Call, index: string): Promise<IndexView> {
  return (await call<IndexView>("GET", `/v1/vectors/indexes/${index}`)).body;
}

/** Polls the index until `done` holds (or `timeoutMs` passes: then false). */
export async function waitIndex(call: Call, index: string, done: (v: IndexView) => boolean, timeoutMs = 3_600_000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (done(await indexView(call, index))) return true;
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** The line printed beside every table: the machine's speed measured in this run and its load now. */
export function machineLine(speedMs: number): string {
  return `machine: a fresh sandboxed python (print(1)) takes ${speedMs.toFixed(1)} ms p50 here, this run; ${os.availableParallelism()} cores, load average ${loadAverage()}`;
}

/** recall@10 of `found` ids (as numbers) against the exact top-10 rows. */
export function recallAt10(found: number[][], truth: number[][]): number {
  let hit = 0;
  found.forEach((f, q) => {
    const t = new Set((truth[q] as number[]).slice(0, 10));
    for (const x of f.slice(0, 10)) if (t.has(x)) hit++;
  });
  return hit / (truth.length * 10);
}
