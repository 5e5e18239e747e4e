// Reads an index's records back from the vectors database in a worker thread, for loading the index
// at start: decoding a million rows (each embedding its own Buffer) took ~3.5 s of the event loop.
// The worker has its own read-only connection and hands over chunks in write order, the embeddings
// packed into one transferable array per chunk; it reads the next chunk while this thread applies
// the last one, and stays at most two chunks ahead. The thread runs record-loader-main.ts.
import { startWorker, workerEntry } from "../workers.js";
import type { RecordChunk, RecordChunkMessage, RecordLoaderData, RecordRequest } from "./record-protocol.js";

export type { RecordChunk } from "./record-protocol.js";

const RECORD_LOADER_MAIN = workerEntry(import.meta.url, "record-loader-main");

/** Every record of the index, a chunk at a time; the worker ends with the last chunk. */
export async function* readRecords(file: string, indexId: string, dim: number, chunk = 20_000): AsyncGenerator<RecordChunk> {
  const workerData: RecordLoaderData = { file, indexId, dim, chunk };
  const worker = startWorker(RECORD_LOADER_MAIN, { workerData });
  const next: RecordRequest = "next";
  const queue: RecordChunkMessage[] = [];
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  worker.on("message", (m: RecordChunkMessage) => {
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
        if (!m.done) worker.postMessage(next);
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
