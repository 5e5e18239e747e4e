// Exact nearest neighbours by brute force with usearch's SIMD kernels (no graph): used for vectors
// not yet in the graph, for small filtered sets, for `exact: true` searches, while a graph loads
// or rebuilds, and as the ground truth when an index measures its own recall.
import { createRequire } from "node:module";
import type { Metric } from "./engine.js";

const usearch = createRequire(import.meta.url)("usearch") as typeof import("usearch").default;

/** usearch's name for each metric (the same distances as the graph computes). */
export const USEARCH_METRIC: Record<Metric, string> = { cosine: "cos", dotproduct: "ip", euclidean: "l2sq" };

/** The rows of `data` (rows of `dim` floats) nearest to `q`, nearest first: at most `count` row
 * numbers (on `threads` threads). */
export function exactNearest(data: Float32Array, dim: number, q: Float32Array, count: number, metric: Metric, threads = 1): number[] {
  const rows = Math.floor(data.length / dim);
  const k = Math.min(count, rows);
  if (k <= 0) return [];
  // The native search reads from the start of the buffer: a view into a larger one is copied.
  if (data.byteOffset !== 0) data = data.slice();
  if (q.byteOffset !== 0) q = q.slice();
  const m = usearch.exactSearch(data, q, dim, k, USEARCH_METRIC[metric] as never, threads) as { keys: BigUint64Array };
  const out: number[] = [];
  for (let i = 0; i < m.keys.length; i++) {
    const r = Number(m.keys[i]);
    if (r < rows) out.push(r);
  }
  return out;
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
