// The record scanner thread: answers a search of an index whose records are still loading after a
// start, exactly, for RecordScanner (record-scan.ts). An index with a vectors file (vector-file.ts)
// or a side log (vector-log.ts) is searched in that file's vectors, read once, brought up to date
// with the log's writes after it and then the writes after those that are in the database (vector-file-since.ts: after a `kill -9` the file is older than the index),
// and the writes acknowledged since (vector-file-scan.ts); its hits' metadata is read from the
// vectors database. A filtered search reads the metadata of the file's nearest vectors, nearest
// first, until top_k of them match (widening the candidates twice at most); a filter too selective
// for that (few matches among many candidates) is left to the records.
// Otherwise each search is one read transaction over the index's records in the database (its own
// read-only connection), a chunk at a time (SIMD brute force per chunk, the filter applied to each
// record's metadata), so it sees every write acknowledged before it.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { exactNearest, metricDistance } from "./exact.js";
import { compileFilter, type Metadata, type Predicate } from "./filter.js";
import type { RecordScanData, ScanFileReply, ScanMessage, ScanReply, ScanRequest } from "./record-protocol.js";
import { VectorFileScan } from "./vector-file-scan.js";
import { WritesSinceReader } from "./vector-file-since.js";
import { logFileOf, readVectorLog } from "./vector-log.js";

type Hits = NonNullable<ScanReply["hits"]>;

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
const byId = db.prepare<[string, string], { label: number; metadata: string }>(
  "SELECT label, metadata FROM vectors WHERE index_id = ? AND id = ?",
);
const CHUNK = 20_000;
/** A filtered search from the vectors file starts with this many candidates per hit wanted (at
 * least FILTER_FIRST) and widens fourfold while too few match, up to FILTER_MAX candidates. Wide
 * from the start: each widening is another pass over the file's vectors (0.1–0.2 s at 1M × 128),
 * where reading a thousand records' metadata takes ~10 ms (measured at 1M with a filter matching a
 * tenth: 0.43–0.86 s a search starting from 64, most of it the second pass); a pass over a million
 * records' metadata, what the rows answer with, takes seconds. */
const FILTER_PER_HIT = 16;
const FILTER_FIRST = 1_024;
const FILTER_MAX = 16_384;
const since = new WritesSinceReader(db);

/** Indexes searched from their vectors file (undefined: the file could not be read). */
const files = new Map<string, VectorFileScan | undefined>();

interface Found {
  rowid: number;
  dist: number;
  vector: Float32Array;
}

function hitOf(r: ScanRequest, id: string, dist: number, vector: Float32Array, metadata: () => string): Hits[number] {
  const hit: Hits[number] = { id, score: r.metric === "euclidean" ? Math.sqrt(Math.max(0, dist)) : 1 - dist };
  if (r.includeValues) hit.values = Array.from(vector);
  if (r.includeMetadata) hit.metadata = JSON.parse(metadata()) as Metadata;
  return hit;
}

/** One pass over the index's stored records. */
function scanRecords(r: ScanRequest): Hits {
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
      best.push({ rowid: (chunk[i] as Row)[0], dist: metricDistance(r.metric, q, qNorm, vector), vector });
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
      return hitOf(r, rec.id, f.dist, f.vector, () => rec.metadata);
    });
  })();
}

/** From the index's vectors file and the writes since; undefined when a hit's record is not the
 * version searched (a write committed but not yet acknowledged to this thread): the rows answer. */
function scanFile(r: ScanRequest, f: VectorFileScan): Hits | undefined {
  const found = f.nearest(r.query, r.topK, r.metric);
  return db.transaction(() => {
    const hits: Hits = [];
    for (const h of found) {
      const rec = byId.get(r.indexId, h.id);
      if (rec?.label !== h.label) return undefined;
      hits.push(hitOf(r, h.id, h.dist, h.vector, () => rec.metadata));
    }
    return hits;
  })();
}

/** A filtered search from the index's vectors file: its nearest vectors in order, each record's
 * metadata read and the filter applied, until top_k match (exact: every vector nearer than the
 * last hit was looked at) or every vector was. Undefined as scanFile, or when FILTER_MAX
 * candidates are not enough (the records answer). */
function scanFileFiltered(r: ScanRequest, f: VectorFileScan, predicate: Predicate): Hits | undefined {
  return db.transaction(() => {
    const checked = new Set<number>();
    const hits: Hits = [];
    for (let k = Math.max(FILTER_FIRST, r.topK * FILTER_PER_HIT); ; k *= 4) {
      const found = f.nearest(r.query, Math.min(k, FILTER_MAX), r.metric);
      for (const h of found) {
        if (checked.has(h.label)) continue;
        checked.add(h.label);
        const rec = byId.get(r.indexId, h.id);
        if (rec?.label !== h.label) return undefined;
        if (!predicate(JSON.parse(rec.metadata) as Metadata)) continue;
        hits.push(hitOf(r, h.id, h.dist, h.vector, () => rec.metadata));
        if (hits.length === r.topK) return hits;
      }
      // Every vector looked at: these are all the matches there are.
      if (found.length < Math.min(k, FILTER_MAX)) return hits;
      if (k >= FILTER_MAX) return undefined;
    }
  })();
}

function search(r: ScanRequest): ScanReply {
  const t0 = performance.now();
  const f = files.get(r.indexId);
  const predicate = compileFilter(r.filter);
  const usable = f !== undefined && f.dim === r.dim;
  const fromFile = usable ? (predicate ? scanFileFiltered(r, f, predicate) : scanFile(r, f)) : undefined;
  if (fromFile) return { id: r.id, hits: fromFile, source: "file", ms: performance.now() - t0 };
  return { id: r.id, hits: scanRecords(r), source: "records", ms: performance.now() - t0 };
}

/** Reads the index's vectors file and the writes after it; the rows answer when it cannot be used. */
async function openFile(indexId: string, file: string, dim: number): Promise<ScanFileReply> {
  const t0 = performance.now();
  const reply = (r: Omit<ScanFileReply, "kind" | "indexId" | "ms">): ScanFileReply => ({
    kind: "file",
    indexId,
    ...r,
    ms: performance.now() - t0,
  });
  try {
    // No file (or not a usable one): the side log alone, when it goes back to the index's first write.
    const opened = await VectorFileScan.open(file, dim);
    const f = opened ?? VectorFileScan.empty(dim);
    const fileUpTo = f.upTo;
    const logged = f.applyLog(readVectorLog(logFileOf(file), dim));
    if (!opened && logged === 0)
      return reply({ used: false, reason: "missing, incomplete or of another dimension, and no log from the first write" });
    const w = since.read(indexId, f.summary());
    if ("reason" in w) return reply({ used: false, reason: w.reason, upTo: fileUpTo, logged });
    f.catchUp(w);
    files.set(indexId, f);
    return reply({ used: true, upTo: fileUpTo, logged, writtenSince: w.ids.length, droppedSince: w.dropped.length });
  } catch (err) {
    return reply({ used: false, reason: String((err as Error | undefined)?.message ?? err) });
  }
}

/** Messages for an index whose file is being read, handled in order once it is: the thread answers
 * the other indexes' searches meanwhile (a large index's file takes seconds to read). */
const opening = new Map<string, ScanMessage[]>();

function handle(m: ScanMessage): void {
  const waiting = opening.get(m.indexId);
  if (waiting) {
    waiting.push(m);
    return;
  }
  switch (m.kind) {
    case "search": {
      let reply: ScanReply;
      try {
        reply = search(m);
      } catch (err) {
        reply = { id: m.id, error: String((err as Error | undefined)?.message ?? err) };
      }
      port.postMessage(reply);
      return;
    }
    case "file": {
      files.set(m.indexId, undefined);
      opening.set(m.indexId, []);
      void openFile(m.indexId, m.file, m.dim).then((reply) => {
        port.postMessage(reply);
        const queued = opening.get(m.indexId) ?? [];
        opening.delete(m.indexId);
        for (const q of queued) handle(q);
      });
      return;
    }
    case "writes": {
      const f = files.get(m.indexId);
      if (!f) return;
      m.ids.forEach((id, i) => {
        f.put(m.replaced[i] as number, m.labels[i] as number, id, m.vectors.subarray(i * f.dim, (i + 1) * f.dim));
      });
      return;
    }
    case "deletes": {
      const f = files.get(m.indexId);
      for (const l of m.labels) f?.remove(l);
      return;
    }
    case "forget":
      files.delete(m.indexId);
      return;
  }
}

port.on("message", handle);
