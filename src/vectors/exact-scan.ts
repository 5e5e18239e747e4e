// Exact nearest neighbours among an index's vectors computed on a worker thread (exact-scan-main.ts,
// at a background thread's priority), for an index measuring its own recall (recall.ts): each
// scan of the whole index would hold the event loop for its duration (~15 ms at 200,000 × 128,
// ~60 ms at a million, twice per sampled query). The index's vectors are streamed to the thread a
// piece at a time, copied (4 MiB, ~1.3 ms each on a busy two-core machine, two in flight), not
// shared: usearch's scorer does not take a SharedArrayBuffer, and a copy of the whole index at once
// would double its memory while it is measured. One thread serves every index of the service; it
// starts at the first scan.
import type { Worker } from "node:worker_threads";
import { startWorker, workerEntry } from "../workers.js";
import type { Metric } from "./engine.js";
import type { ExactScanReply, ExactScanRequest } from "./exact-scan-protocol.js";

const EXACT_SCAN_MAIN = workerEntry(import.meta.url, "exact-scan-main");
/** Floats per piece of rows sent (4 MiB), and pieces sent ahead of the thread's answers. */
const PIECE_FLOATS = 1 << 20;
const PIECES_IN_FLIGHT = 2;

/** Distributes Omit over the union (each request keeps its own fields without the id). */
type Body = ExactScanRequest extends infer R ? (R extends ExactScanRequest ? Omit<R, "id"> : never) : never;

/** One scan: the queries and where its rows come from. */
export interface ExactScanJob {
  dim: number;
  metric: Metric;
  /** The queries, one after another. */
  queries: Float32Array;
  k: number;
  /** For each query a row left out (-1: none). */
  exclude?: Int32Array;
  /** Rows to scan (0 until this). */
  rows: number;
  /** A copy of rows lo..hi-1 and whether each is to be scored; undefined to stop the scan. */
  piece(lo: number, hi: number): { vecs: Float32Array; mask: Uint8Array } | undefined;
}

export class ExactScanner {
  private worker: Worker | undefined;
  private nextId = 1;
  private nextScan = 1;
  private readonly waiting = new Map<number, { resolve: (r: ExactScanReply) => void; reject: (e: Error) => void }>();
  /** Scans finished (for tests: the scans ran here, not on the event loop). */
  scans = 0;

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = startWorker(EXACT_SCAN_MAIN);
    w.unref();
    w.on("message", (m: ExactScanReply) => {
      const p = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m);
    });
    const fail = (err: Error) => {
      if (this.worker === w) this.worker = undefined;
      for (const p of this.waiting.values()) p.reject(err);
      this.waiting.clear();
    };
    w.on("error", fail);
    w.on("exit", () => fail(new Error("the vector exact-scan thread stopped")));
    this.worker = w;
    return w;
  }

  private call(msg: Body, transfer: ArrayBuffer[] = []): Promise<ExactScanReply> {
    const w = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      w.postMessage({ ...msg, id }, transfer);
    });
  }

  /** For each query, the `k` nearest rows that `piece` marks, nearest first; rejects when `piece`
   * stopped the scan. */
  async nearest(job: ExactScanJob): Promise<number[][]> {
    const scan = this.nextScan++;
    const nq = Math.floor(job.queries.length / job.dim);
    const exclude = job.exclude ?? new Int32Array(nq).fill(-1);
    await this.call({ op: "start", scan, dim: job.dim, metric: job.metric, queries: job.queries.slice(), k: job.k, exclude });
    const step = Math.max(1, Math.floor(PIECE_FLOATS / job.dim));
    const sent: Array<Promise<ExactScanReply>> = [];
    let stopped: unknown;
    try {
      for (let lo = 0; lo < job.rows; lo += step) {
        const hi = Math.min(job.rows, lo + step);
        const p = job.piece(lo, hi);
        if (!p) throw new Error("the scan was stopped");
        sent.push(
          this.call({ op: "rows", scan, first: lo, vecs: p.vecs, mask: p.mask }, [
            p.vecs.buffer as ArrayBuffer,
            p.mask.buffer as ArrayBuffer,
          ]),
        );
        if (sent.length >= PIECES_IN_FLIGHT) await sent.shift();
      }
      await Promise.all(sent);
    } catch (err) {
      stopped = err;
      for (const p of sent) p.catch(() => {});
    }
    // Ends the scan in the thread either way (a stopped scan's answer is dropped).
    const answer = this.call({ op: "end", scan });
    if (stopped !== undefined) {
      answer.catch(() => {});
      throw stopped;
    }
    const { nearest } = await answer;
    this.scans++;
    return nearest ?? [];
  }

  /** Stops the thread (started or not). */
  async close(): Promise<void> {
    await this.worker?.terminate();
  }
}
