// The record scanner thread: answers a search of an index whose records are still loading after a
// start, exactly, from the vectors database itself (its own read-only connection), for
// RecordScanner (record-scan.ts). Each search is one read transaction over the index's records, a
// chunk at a time (SIMD brute force per chunk, the filter applied to each record's metadata), so it
// sees every write acknowledged before it.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { exactNearest } from "./exact.js";
import { compileFilter, type Metadata } from "./filter.js";
import type { RecordScanData, ScanReply, ScanRequest } from "./record-protocol.js";

const port = parentPort as NonNullable<typeof parentPort>;
const { file } = workerData as RecordScanData;
const db = new Database(file, { readonly: true, fileMustExist: true });
type Row = [rowid: number, embedding: Buffer, metadata?: string];
// The metadata is read only when a filter needs it (a record's metadata can be 40 KB); the hits'
// ids and metadata after, by rowid. The rows are read in rowid order ("+index_id" keeps SQLite from
// walking the primary key, which reads the table in id order, one random page per row: measured
// 1.3–2.5 s for 50,000 × 128 on a loaded machine).
const plain = db.prepare<[string], Row>("SELECT rowid, embedding FROM vectors WHERE +index_id = ?").raw(true);
const withMetadata = db.prepare<[string], Row>("SELECT rowid, embedding, metadata FROM vectors WHERE +index_id = ?").raw(true);
const byRowid = db.prepare<[number], { id: string; metadata: string }>("SELECT id, metadata FROM vectors WHERE rowid = ?");
const CHUNK = 20_000;

interface Found {
  rowid: number;
  dist: number;
  vector: Float32Array;
}

/** The metric's distance (lower is nearer), as the in-memory index computes it (collection.ts). */
function distance(metric: ScanRequest["metric"], q: Float32Array, qNorm: number, v: Float32Array): number {
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

function scan(r: ScanRequest): NonNullable<ScanReply["hits"]> {
  const predicate = compileFilter(r.filter);
  const q = r.query;
  const qNorm = Math.sqrt(q.reduce((a, x) => a + x * x, 0));
  let best: Found[] = [];
  let chunk: Row[] = [];
  const flush = () => {
    if (chunk.length === 0) return;
    const data = new Float32Array(chunk.length * r.dim);
    const bytes = new Uint8Array(data.buffer);
    chunk.forEach(([, blob], i) => {
      bytes.set(blob.subarray(0, r.dim * 4), i * r.dim * 4);
    });
    for (const i of exactNearest(data, r.dim, q, r.topK, r.metric)) {
      const vector = data.slice(i * r.dim, (i + 1) * r.dim);
      best.push({ rowid: (chunk[i] as Row)[0], dist: distance(r.metric, q, qNorm, vector), vector });
    }
    best = best.sort((a, b) => a.dist - b.dist).slice(0, r.topK);
    chunk = [];
  };
  // One read transaction: the whole scan sees the same committed state.
  return db.transaction(() => {
    for (const row of (predicate ? withMetadata : plain).iterate(r.indexId)) {
      if (predicate && !predicate(JSON.parse(row[2] as string) as Metadata)) continue;
      chunk.push(row);
      if (chunk.length >= CHUNK) flush();
    }
    flush();
    return best.map((f) => {
      const rec = byRowid.get(f.rowid) as { id: string; metadata: string };
      const hit: NonNullable<ScanReply["hits"]>[number] = {
        id: rec.id,
        score: r.metric === "euclidean" ? Math.sqrt(Math.max(0, f.dist)) : 1 - f.dist,
      };
      if (r.includeValues) hit.values = Array.from(f.vector);
      if (r.includeMetadata) hit.metadata = JSON.parse(rec.metadata) as Metadata;
      return hit;
    });
  })();
}

port.on("message", (r: ScanRequest) => {
  let reply: ScanReply;
  try {
    reply = { id: r.id, hits: scan(r) };
  } catch (err) {
    reply = { id: r.id, error: String((err as Error | undefined)?.message ?? err) };
  }
  port.postMessage(reply);
});
