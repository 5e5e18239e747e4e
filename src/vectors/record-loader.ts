// Reads an index's records back from the vectors database in a worker thread, for loading the index
// at start: decoding a million rows (each embedding its own Buffer) took ~3.5 s of the event loop.
// The worker has its own read-only connection and hands over chunks in write order, the embeddings
// packed into one transferable array per chunk; it reads the next chunk while this thread applies
// the last one, and stays at most two chunks ahead.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** One chunk of records, in write order. */
export interface RecordChunk {
  labels: Float64Array;
  seqs: Float64Array;
  /** The embeddings one after another (dimension floats each). */
  vectors: Float32Array;
  ids: string[];
  /** Each record's metadata as stored (JSON text). */
  metadata: string[];
}

// Plain CommonJS so it runs the same from source and from the build (no loader in the worker).
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.sqlite);
const { file, indexId, dim, chunk } = workerData;
const db = new Database(file, { readonly: true, fileMustExist: true });
// By rowid (write order): "+index_id" keeps SQLite from walking the primary key and sorting instead.
const st = db
  .prepare("SELECT rowid, id, label, embedding, metadata, seq FROM vectors WHERE rowid > ? AND +index_id = ? ORDER BY rowid LIMIT ?")
  .raw(true);
let after = 0;
let done = false;
function next() {
  if (done) return;
  const rows = st.all(after, indexId, chunk);
  const n = rows.length;
  const labels = new Float64Array(n);
  const seqs = new Float64Array(n);
  const vectors = new Float32Array(n * dim);
  const bytes = new Uint8Array(vectors.buffer);
  const ids = new Array(n);
  const metadata = new Array(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    const blob = r[3];
    if (blob.length !== dim * 4) throw new Error("record " + r[1] + " has " + blob.length + " bytes of embedding, expected " + dim * 4);
    blob.copy(bytes, i * dim * 4);
    ids[i] = r[1];
    labels[i] = r[2];
    metadata[i] = r[4];
    seqs[i] = r[5];
  }
  done = n < chunk;
  if (n > 0) after = rows[n - 1][0];
  parentPort.postMessage({ labels, seqs, vectors, ids, metadata, done }, [labels.buffer, seqs.buffer, vectors.buffer]);
  if (done) db.close();
}
parentPort.on("message", next);
next();
next();
`;

/** Every record of the index, a chunk at a time; the worker ends with the last chunk. */
export async function* readRecords(file: string, indexId: string, dim: number, chunk = 20_000): AsyncGenerator<RecordChunk> {
  const require = createRequire(import.meta.url);
  const worker = new Worker(WORKER, { eval: true, workerData: { sqlite: require.resolve("better-sqlite3"), file, indexId, dim, chunk } });
  const queue: Array<RecordChunk & { done: boolean }> = [];
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  worker.on("message", (m: RecordChunk & { done: boolean }) => {
    queue.push(m);
    wake?.();
  });
  worker.on("error", (err) => {
    failure = err;
    wake?.();
  });
  worker.on("exit", (code) => {
    if (code !== 0) failure ??= new Error(`the vector record reader stopped (exit ${code})`);
    wake?.();
  });
  try {
    for (;;) {
      const m = queue.shift();
      if (m) {
        // Asks for the one after next: the worker stays two chunks ahead.
        if (!m.done) worker.postMessage("next");
        yield m;
        if (m.done) return;
        continue;
      }
      if (failure) throw failure;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  } finally {
    await worker.terminate();
  }
}
