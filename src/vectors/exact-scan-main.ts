// The exact-scan worker thread (at a background thread's priority): keeps the running k nearest
// rows of each query of every scan under way while ExactScanner (exact-scan.ts) streams an index's
// rows to it, scoring each piece for all of a scan's queries in one SIMD pass (exact.ts).
import { parentPort } from "node:worker_threads";
import type { Metric } from "./engine.js";
import { exactNearestEach, type Found, nearestOf } from "./exact.js";
import type { ExactScanReply, ExactScanRequest } from "./exact-scan-protocol.js";
import { backgroundThread } from "./thread-priority.js";

backgroundThread();
const port = parentPort as NonNullable<typeof parentPort>;

interface Scan {
  dim: number;
  metric: Metric;
  queries: Float32Array;
  k: number;
  exclude: Int32Array;
  best: Found[][];
}
const scans = new Map<number, Scan>();

function handle(m: ExactScanRequest): ExactScanReply {
  if (m.op === "start") {
    const best = Array.from({ length: m.exclude.length }, (): Found[] => []);
    scans.set(m.scan, { dim: m.dim, metric: m.metric, queries: m.queries, k: m.k, exclude: m.exclude, best });
    return { id: m.id };
  }
  const s = scans.get(m.scan);
  if (!s) return { id: m.id, error: "no such scan" };
  if (m.op === "end") {
    scans.delete(m.scan);
    return { id: m.id, nearest: s.best.map((b) => nearestOf(b, s.k).map((f) => f.row)) };
  }
  // Asks for as many more as the piece has rows left out (or excluded), then skips them.
  let skipped = 1;
  for (const x of m.mask) if (x === 0) skipped++;
  exactNearestEach(m.vecs, s.dim, s.queries, s.k + skipped, s.metric).forEach((found, i) => {
    const kept = s.best[i] as Found[];
    for (const f of found) {
      const row = m.first + f.row;
      if (m.mask[f.row] === 1 && row !== s.exclude[i]) kept.push({ row, dist: f.dist });
    }
    if (kept.length > s.k) s.best[i] = nearestOf(kept, s.k);
  });
  return { id: m.id };
}

port.on("message", (m: ExactScanRequest) => {
  let reply: ExactScanReply;
  try {
    reply = handle(m);
  } catch (err) {
    reply = { id: m.id, error: String((err as Error | undefined)?.message || err) };
  }
  port.postMessage(reply);
});
