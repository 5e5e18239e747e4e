// Exact nearest neighbours by brute force with usearch's SIMD kernels (no graph): used for vectors
// not yet in the graph, for small filtered sets, for `exact: true` searches, while a graph loads
// or rebuilds, and as the ground truth when an index measures its own recall (on its own thread,
// exact-scan-main.ts).
import { createRequire } from "node:module";
import type { Metric } from "./engine.js";

const usearch = createRequire(import.meta.url)("usearch") as typeof import("usearch").default;

/** usearch's name for each metric (the same distances as the graph computes). */
export const USEARCH_METRIC: Record<Metric, string> = { cosine: "cos", dotproduct: "ip", euclidean: "l2sq" };

/** The native scorer reads from the start of the buffer (a view further in is copied first) and
 * keeps two (row, distance) pairs of 8 bytes per row and query: many queries are scored a chunk of
 * rows at a time, at most this many pairs (4 MiB) and floats (1 MiB, in cache while scored). */
const CHUNK_PAIRS = 1 << 18;
const CHUNK_FLOATS = 1 << 18;
let chunkBuffer = new Float32Array(0);

/** The rows of `data` (rows of `dim` floats) nearest to `q`, nearest first: at most `count` row
 * numbers (on `threads` threads). */
export function exactNearest(data: Float32Array, dim: number, q: Float32Array, count: number, metric: Metric, threads = 1): number[] {
  return (exactNearestEach(data, dim, q, count, metric, threads)[0] ?? []).map((f) => f.row);
}

/** A row and its distance (the metric's, lower is nearer, as usearch computes it). */
export type Found = { row: number; dist: number };

/** For each of the queries in `queries` (rows of `dim` floats), at most `count` rows of `data`
 * nearest to it, nearest first, with their distances: one pass over `data` for all of them. */
export function exactNearestEach(
  data: Float32Array,
  dim: number,
  queries: Float32Array,
  count: number,
  metric: Metric,
  threads = 1,
): Found[][] {
  const rows = Math.floor(data.length / dim);
  const nq = Math.floor(queries.length / dim);
  const k = Math.min(count, rows);
  if (k <= 0) return Array.from({ length: nq }, () => []);
  if (queries.byteOffset !== 0) queries = queries.slice();
  if (nq === 1 && data.byteOffset !== 0) data = data.slice();
  if (data.byteOffset === 0 && (nq === 1 || rows * nq <= CHUNK_PAIRS)) return nativeNearest(data, dim, queries, nq, k, metric, threads);
  // Chunk by chunk, each copied where the native scorer reads it; each query keeps its k nearest.
  // (One query scans its whole view in one pass, copied once when not at the buffer's start.)
  const chunkRows = Math.max(1, Math.min(Math.floor(CHUNK_FLOATS / dim), Math.floor(CHUNK_PAIRS / nq)));
  if (chunkBuffer.length < chunkRows * dim) chunkBuffer = new Float32Array(chunkRows * dim);
  const best: Found[][] = Array.from({ length: nq }, () => []);
  for (let lo = 0; lo < rows; lo += chunkRows) {
    const n = Math.min(chunkRows, rows - lo);
    const chunk = chunkBuffer.subarray(0, n * dim);
    chunk.set(data.subarray(lo * dim, (lo + n) * dim));
    nativeNearest(chunk, dim, queries, nq, Math.min(k, n), metric, threads).forEach((found, i) => {
      const b = best[i] as Found[];
      for (const f of found) b.push({ row: lo + f.row, dist: f.dist });
      // Cut back to the k nearest now and then (not after every chunk: k may be large).
      if (b.length > Math.max(4 * k, 1024)) best[i] = nearestOf(b, k);
    });
  }
  return best.map((b) => nearestOf(b, k));
}

/** The k nearest of `found` (sorted in place). */
export const nearestOf = (found: Found[], k: number): Found[] => found.sort((a, b) => a.dist - b.dist).slice(0, k);

/** One native call over `data` (read from the start of its buffer). */
function nativeNearest(
  data: Float32Array,
  dim: number,
  queries: Float32Array,
  nq: number,
  k: number,
  metric: Metric,
  threads: number,
): Found[][] {
  const rows = data.length / dim;
  const m = usearch.exactSearch(data, queries, dim, k, USEARCH_METRIC[metric] as never, threads) as unknown as
    | { keys: BigUint64Array; distances: Float32Array }
    | InstanceType<typeof usearch.BatchMatches>;
  const each = (keys: BigUint64Array, dists: Float32Array): Found[] => {
    const out: Found[] = [];
    for (let i = 0; i < keys.length; i++) {
      const r = Number(keys[i]);
      if (r < rows) out.push({ row: r, dist: dists[i] as number });
    }
    return out;
  };
  if (nq === 1 && "keys" in m) return [each(m.keys, m.distances)];
  const batch = m as InstanceType<typeof usearch.BatchMatches>;
  return Array.from({ length: nq }, (_, i) => {
    const r = batch.get(i);
    return each(r.keys, r.distances);
  });
}

/** The metric's distance (lower is nearer), as the in-memory index computes it (collection.ts):
 * squared Euclidean, 1 - dot product, 1 - cosine similarity (`qNorm` is the query's length). */
export function metricDistance(metric: Metric, q: Float32Array, qNorm: number, v: Float32Array): number {
  if (metric === "euclidean") {
    let s = 0;
    for (let i = 0; i < q.length; i++) s += ((q[i] as number) - (v[i] as number)) ** 2;
    return s;
  }
  let dot = 0;
  let vn = 0;
  for (let i = 0; i < q.length; i++) {
    dot += (q[i] as number) * (v[i] as number);
    vn += (v[i] as number) ** 2;
  }
  if (metric === "dotproduct") return 1 - dot;
  const denom = qNorm * Math.sqrt(vn);
  return denom === 0 ? 1 : 1 - dot / denom;
}
