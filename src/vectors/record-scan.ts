// Exact searches of an index whose records are still loading after a start, answered from the
// vectors database by a worker thread (record-scan-main.ts) instead of waiting for the load: the
// first search after a restart costs one scan of that index's records (~0.1 s at 50,000 × 128)
// instead of the whole load (seconds; minutes at a million). Searches are handled one after another.
import type { Worker } from "node:worker_threads";
import { startWorker, workerEntry } from "../workers.js";
import type { Hit, IndexSpec, SearchOptions } from "./engine.js";
import type { RecordScanData, ScanReply, ScanRequest } from "./record-protocol.js";

const RECORD_SCAN_MAIN = workerEntry(import.meta.url, "record-scan-main");

export class RecordScanner {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (h: Hit[]) => void; reject: (e: Error) => void }>();

  constructor(private readonly file: string) {}

  /** Starts the thread (before the first search needs it: a start compiles its module). */
  start(): Worker {
    if (this.worker) return this.worker;
    const workerData: RecordScanData = { file: this.file };
    const w = startWorker(RECORD_SCAN_MAIN, { workerData });
    w.unref();
    w.on("message", (m: ScanReply) => {
      const p = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve((m.hits ?? []) as Hit[]);
    });
    const fail = (err: Error) => {
      if (this.worker === w) this.worker = undefined;
      for (const p of this.waiting.values()) p.reject(err);
      this.waiting.clear();
    };
    w.on("error", fail);
    w.on("exit", () => fail(new Error("the vector record scanner stopped")));
    this.worker = w;
    return w;
  }

  /** The exact answer from the stored records (the filter as the client sent it). */
  search(spec: IndexSpec, query: Float32Array, opts: SearchOptions): Promise<Hit[]> {
    const id = this.nextId++;
    const m: ScanRequest = {
      id,
      indexId: spec.id,
      dim: spec.dimension,
      metric: spec.metric,
      query,
      topK: opts.topK,
      filter: opts.filter?.doc,
      includeValues: opts.includeValues,
      includeMetadata: opts.includeMetadata,
    };
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.start().postMessage(m);
    });
  }

  /** Stops the thread once the searches it has are answered (a later search starts it again). */
  async close(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    this.worker = undefined;
    while (this.waiting.size > 0)
      await new Promise((r) => {
        w.once("message", r);
        w.once("exit", r);
      });
    await w.terminate();
  }
}
