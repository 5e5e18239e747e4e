// The vector record reader thread: reads one index's records from the vectors database with its
// own read-only connection, in write order, and posts them a chunk at a time to readRecords
// (record-loader.ts), the embeddings packed into one transferable array per chunk.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import type { RecordChunkMessage, RecordLoaderData } from "./record-protocol.js";
import { backgroundThread } from "./thread-priority.js";

// A load is background work: searches (answered meanwhile from the vectors file or the rows) come first.
backgroundThread();

const port = parentPort as NonNullable<typeof parentPort>;
const { file, indexId, dim, chunk } = workerData as RecordLoaderData;
const db = new Database(file, { readonly: true, fileMustExist: true });
type Row = [rowid: number, id: string, label: number, embedding: Buffer, metadata: string, seq: number];
// By rowid (write order): "+index_id" keeps SQLite from walking the primary key and sorting instead.
const st = db
  .prepare<[number, string, number], Row>(
    "SELECT rowid, id, label, embedding, metadata, seq FROM vectors WHERE rowid > ? AND +index_id = ? ORDER BY rowid LIMIT ?",
  )
  .raw(true);
let after = 0;
let done = false;

function next(): void {
  if (done) return;
  const rows = st.all(after, indexId, chunk);
  const n = rows.length;
  const labels = new Float64Array(n);
  const seqs = new Float64Array(n);
  const vectors = new Float32Array(n * dim);
  const bytes = new Uint8Array(vectors.buffer);
  const ids = new Array<string>(n);
  const metadata = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const [, id, label, blob, meta, seq] = rows[i] as Row;
    if (blob.length !== dim * 4) throw new Error(`record ${id} has ${blob.length} bytes of embedding, expected ${dim * 4}`);
    blob.copy(bytes, i * dim * 4);
    ids[i] = id;
    labels[i] = label;
    metadata[i] = meta;
    seqs[i] = seq;
  }
  done = n < chunk;
  if (n > 0) after = (rows[n - 1] as Row)[0];
  const m: RecordChunkMessage = { labels, seqs, vectors, ids, metadata, done };
  port.postMessage(m, [labels.buffer, seqs.buffer, vectors.buffer]);
  if (done) db.close();
}

port.on("message", next);
// Two chunks ahead from the start; each chunk taken asks for one more.
next();
next();
