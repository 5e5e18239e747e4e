// Exact nearest neighbours by brute force with usearch's SIMD kernels (no graph): used for vectors
// not yet in the graph, for small filtered sets, for `exact: true` searches, while a graph loads
// or rebuilds, and as the ground truth when an index measures its own recall.
import { createRequire } from "node:module";
import type { Metric } from "./engine.js";

const usearch = createRequire(import.meta.url)("usearch") as typeof import("usearch").default;

/** usearch's name for each metric (the same distances as the graph computes). */
export const USEARCH_METRIC: Record<Metric, string> = { cosine: "cos", dotproduct: "ip", euclidean: "l2sq" };

/** The rows of `data` (rows of `dim` floats) nearest to `q`, nearest first: at most `count` row numbers. */
export function exactNearest(data: Float32Array, dim: number, q: Float32Array, count: number, metric: Metric): number[] {
  const rows = Math.floor(data.length / dim);
  const k = Math.min(count, rows);
  if (k <= 0) return [];
  // The native search reads from the start of the buffer: a view into a larger one is copied.
  if (data.byteOffset !== 0) data = data.slice();
  if (q.byteOffset !== 0) q = q.slice();
  const m = usearch.exactSearch(data, q, dim, k, USEARCH_METRIC[metric] as never, 1) as { keys: BigUint64Array };
  const out: number[] = [];
  for (let i = 0; i < m.keys.length; i++) {
    const r = Number(m.keys[i]);
    if (r < rows) out.push(r);
  }
  return out;
}
