// An index measuring its own recall: queries made from a sample of its own vectors are searched
// exactly (the ground truth, on a worker thread: exact-scan.ts) and through the graph
// at widening search widths; the narrowest width whose recall@10 reaches the index's target becomes
// its width. A stored vector itself would be an easy query (the graph links it to its neighbours
// already), so each query is moved off it by about its distance to its nearest neighbour: as far
// from the data as a new point drawn like it.

/** What the measurement needs from an index (collection.ts), by slot. */
export interface RecallProbe {
  /** Vectors in the graph. */
  vectors(): number;
  dimension: number;
  /** Up to n slots of vectors in the graph, spread over the index. */
  sample(n: number): number[];
  /** A copy of the vector in this slot. */
  vector(slot: number): Float32Array;
  /** For each query the k nearest slots in the graph by exact search, nearest first, leaving out
   * the query's slot in `exclude` when given (off the event loop). */
  nearest(queries: Float32Array[], k: number, exclude?: number[]): Promise<number[][]>;
  /** The k+ nearest slots through the graph at this width, nearest first. */
  graph(q: Float32Array, k: number, width: number): Promise<number[]>;
}

export interface RecallCurve {
  /** Graph size when measured. */
  vectors: number;
  /** The chosen width and its recall@10. */
  width: number;
  recall: number;
  /** recall@10 at each width tried, narrowest first. */
  tried: Array<{ width: number; recall: number }>;
  measured_at: string;
}

/** Search widths tried, narrowest first. */
export const WIDTHS = [16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048];
const K = 10;
/** Sample size: 200 queries x 10 neighbours estimate recall@10 within about ±0.01. Fewer (not
 * under 50, ±0.02) for large indexes: each query's exact search is a scan of the whole index (on
 * the worker thread, but a core's work all the same: ~60 ms at 1M x 128), so the sample keeps the
 * scans to about this many dimension-products. */
const SAMPLE = 200;
const SAMPLE_MIN = 50;
const SCAN_BUDGET = 2.5e9;
/** A width is taken only when its measured recall is this much above the target (sampling error). */
const MARGIN = 0.005;
/**
 * Graph searches posted together: the worker answers searches that arrive together in one batch,
 * and a user's search waits behind it (20 at once at a wide setting held users' searches on a
 * 200,000-vector index for ~70 ms, their p95 right after a bulk load).
 */
const GRAPH_BATCH = 2;

/** Measures and picks a width; undefined when there is nothing to measure. */
export async function measureRecall(probe: RecallProbe, target: number): Promise<RecallCurve | undefined> {
  const vectors = probe.vectors();
  const size = Math.max(SAMPLE_MIN, Math.min(SAMPLE, Math.floor(SCAN_BUDGET / (vectors * probe.dimension))));
  const slots = probe.sample(size);
  if (slots.length < 10) return undefined;
  // Each query is a sampled vector moved off it by about its distance to its nearest neighbour.
  const sampled = slots.map((s) => probe.vector(s));
  const neighbour = await probe.nearest(sampled, 1, slots);
  const queries = sampled.map((v, i) => {
    const n = neighbour[i]?.[0];
    return n === undefined ? v : nearby(v, probe.vector(n));
  });
  const truth = (await probe.nearest(queries, K)).map((t) => new Set(t));
  const tried: Array<{ width: number; recall: number }> = [];
  for (const width of WIDTHS) {
    const found: number[][] = [];
    for (let i = 0; i < queries.length; i += GRAPH_BATCH)
      found.push(...(await Promise.all(queries.slice(i, i + GRAPH_BATCH).map((q) => probe.graph(q, K, width)))));
    let hit = 0;
    let total = 0;
    found.forEach((f, i) => {
      const t = truth[i] as Set<number>;
      for (const x of f.slice(0, K)) if (t.has(x)) hit++;
      total += t.size;
    });
    const recall = total === 0 ? 1 : hit / total;
    tried.push({ width, recall: Math.round(recall * 1000) / 1000 });
    // A width walking the whole graph cannot do better.
    if (recall >= target + MARGIN || width >= vectors) break;
  }
  const best = tried[tried.length - 1] as { width: number; recall: number };
  return { vectors, width: best.width, recall: best.recall, tried, measured_at: new Date().toISOString() };
}

/** A point in a random direction from `v`, as far from it as `neighbour` is. */
function nearby(v: Float32Array, neighbour: Float32Array): Float32Array {
  let d = 0;
  for (let i = 0; i < v.length; i++) d += ((v[i] as number) - (neighbour[i] as number)) ** 2;
  const noise = Float32Array.from(
    { length: v.length },
    () => Math.sqrt(-2 * Math.log(Math.random() + 1e-12)) * Math.cos(2 * Math.PI * Math.random()),
  );
  let n = 0;
  for (const x of noise) n += x * x;
  const scale = Math.sqrt(d) / (Math.sqrt(n) || 1);
  return v.map((x, i) => x + (noise[i] as number) * scale);
}
