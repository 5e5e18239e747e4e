// Exact searches of an index whose records are still loading after a start, answered by a worker
// thread (record-scan-main.ts) instead of waiting for the load (seconds; minutes at a million):
// from the index's vectors file (read once, with the writes after it that the database holds; every
// write acknowledged since is sent to the thread too, before the write's answer), else by a pass
// over the index's records in the vectors database. Searches are handled one after another.
import type { Worker } from "node:worker_threads";
import { startWorker, workerEntry } from "../workers.js";
import type { IndexSpec, SearchOptions } from "./engine.js";
import type { RecordScanData, ScanFileReply, ScanMessage, ScanReply, ScanRequest } from "./record-protocol.js";

export type { ScanFileReply } from "./record-protocol.js";

const RECORD_SCAN_MAIN = workerEntry(import.meta.url, "record-scan-main");

export class RecordScanner {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (r: ScanReply) => void; reject: (e: Error) => void }>();
  /** Indexes the current thread searches in their vectors file (lost with the thread). */
  private readonly fromFile = new Set<string>();
  /** Indexes whose vectors file the thread is reading, and what settles once it is read (or not). */
  private readonly reading = new Map<string, () => void>();
  private readonly read = new Map<string, Promise<void>>();

  constructor(
    private readonly file: string,
    /** Told whether each index's vectors file is in use (see useFile). */
    private readonly onFile: (r: ScanFileReply) => void = () => {},
  ) {}

  /** Starts the thread (before the first search needs it: a start compiles its module). */
  start(): Worker {
    if (this.worker) return this.worker;
    const workerData: RecordScanData = { file: this.file };
    const w = startWorker(RECORD_SCAN_MAIN, { workerData });
    w.unref();
    w.on("message", (m: ScanReply | ScanFileReply) => {
      if (m.kind === "file") {
        this.settle(m.indexId);
        this.onFile(m);
        return;
      }
      const p = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m);
    });
    const fail = (err: Error) => {
      if (this.worker === w) {
        this.worker = undefined;
        this.fromFile.clear();
      }
      for (const p of this.waiting.values()) p.reject(err);
      this.waiting.clear();
      for (const id of [...this.reading.keys()]) this.settle(id);
    };
    w.on("error", fail);
    w.on("exit", () => fail(new Error("the vector record scanner stopped")));
    this.worker = w;
    return w;
  }

  private settle(indexId: string): void {
    this.reading.get(indexId)?.();
    this.reading.delete(indexId);
    this.read.delete(indexId);
  }

  /** Settles once the index's vectors file is read into the thread (or could not be; at once when
   * none is being read). The index's own load waits for it: the file is what answers the first
   * searches, and its read took seconds at 1M while the load competed for the same two cores. */
  fileRead(indexId: string): Promise<void> {
    return this.read.get(indexId) ?? Promise.resolve();
  }

  private post(m: ScanMessage): void {
    this.start().postMessage(m);
  }

  /** Searches of the index read its vectors file from now on (brought up to date in the thread with
   * the writes after it; onFile says whether it could be), and each write acknowledged from now on
   * must be passed on (wrote, deleted) before it is answered. */
  useFile(indexId: string, file: string, dim: number): void {
    this.post({ kind: "file", indexId, file, dim });
    this.fromFile.add(indexId);
    if (!this.read.has(indexId))
      this.read.set(
        indexId,
        new Promise((resolve) => {
          this.reading.set(indexId, resolve);
        }),
      );
  }

  /** Whether writes to the index are to be passed on. */
  tracks(indexId: string): boolean {
    return this.fromFile.has(indexId);
  }

  /** Acknowledged upserts (in order), for an index searched in its file. */
  wrote(indexId: string, written: Array<{ label: number; id: string; replaced?: number }>, embeddings: Float32Array[]): void {
    if (!this.fromFile.has(indexId) || written.length === 0) return;
    const dim = embeddings[0]?.length ?? 0;
    const vectors = new Float32Array(written.length * dim);
    embeddings.forEach((e, i) => {
      vectors.set(e, i * dim);
    });
    this.worker?.postMessage(
      {
        kind: "writes",
        indexId,
        replaced: Float64Array.from(written, (w) => w.replaced ?? -1),
        labels: Float64Array.from(written, (w) => w.label),
        ids: written.map((w) => w.id),
        vectors,
      } satisfies ScanMessage,
      [vectors.buffer],
    );
  }

  /** Acknowledged deletes, for an index searched in its file. */
  deleted(indexId: string, labels: number[]): void {
    if (this.fromFile.has(indexId) && labels.length > 0)
      this.worker?.postMessage({ kind: "deletes", indexId, labels } satisfies ScanMessage);
  }

  /** The index is gone: its file's vectors are let go. */
  forget(indexId: string): void {
    if (this.fromFile.delete(indexId)) this.worker?.postMessage({ kind: "forget", indexId } satisfies ScanMessage);
    this.settle(indexId);
  }

  /** The exact answer from the vectors file or the stored records (the filter as the client sent it). */
  search(spec: IndexSpec, query: Float32Array, opts: SearchOptions): Promise<ScanReply> {
    const id = this.nextId++;
    const m: ScanRequest = {
      kind: "search",
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
      this.post(m);
    });
  }

  /** Stops the thread once the searches it has are answered (a later search starts it again). */
  async close(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    this.worker = undefined;
    this.fromFile.clear();
    for (const id of [...this.reading.keys()]) this.settle(id);
    while (this.waiting.size > 0)
      await new Promise((r) => {
        w.once("message", r);
        w.once("exit", r);
      });
    await w.terminate();
  }
}
