// The HNSW graphs (usearch) of every loaded index, held in one worker thread: graph insertion,
// search, load and save run there, so the event loop keeps serving requests (and HTTP parsing on
// the main thread overlaps the graph's work on the second core). Messages are handled in the
// order they are posted, so a search posted after a remove, a load or a save sees it; a search
// posted after an insertion may be answered between its slices (before all of it is in the graph:
// the caller scores what it sent and has no answer for yet exactly). Searches that arrive together
// are answered in one batch call. The thread runs graph-worker-main.ts.
import type { Worker } from "node:worker_threads";
import { startWorker, workerEntry } from "../workers.js";
import type { Metric } from "./engine.js";
import type { GraphReply, GraphRequestBody, GraphWorkerData } from "./graph-protocol.js";

/** usearch's name for each metric. */
const USEARCH_METRIC: Record<Metric, string> = { cosine: "cos", dotproduct: "ip", euclidean: "l2sq" };

export interface GraphParams {
  dim: number;
  metric: Metric;
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
  /** How the graph stores vectors (usearch's scalar kind: "f32", "f16", ...). */
  quantization: string;
}

export interface GraphMatches {
  keys: BigUint64Array;
  dists: Float32Array;
}

const GRAPH_WORKER_MAIN = workerEntry(import.meta.url, "graph-worker-main");
/** An insertion of this many vectors or more counts as long work (a rebuild inserts 512 at a time;
 * the insertions of ordinary writes are sized to take about 3 ms each). */
const LONG_ADD = 256;

type Waiter = { resolve: (v: never) => void; reject: (e: Error) => void };

export class GraphWorker {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiter>();
  private dead: Error | undefined;
  /** Calls in flight that can take long (a graph loaded from its file or saved, a large insertion
   * such as a rebuild's), by graph: a search posted now waits behind them. */
  private readonly long = new Map<string, number>();

  constructor(searchThreads = 1) {
    const workerData: GraphWorkerData = { searchThreads };
    this.worker = startWorker(GRAPH_WORKER_MAIN, { workerData });
    this.worker.unref();
    this.worker.on("message", (m: GraphReply) => {
      if (m.op === "found") {
        for (const r of m.results) this.settle(r.id, r.error, { keys: r.keys, dists: r.dists });
      } else {
        this.settle(m.id, m.error, m.ms === undefined ? m.size : { size: m.size, ms: m.ms });
      }
    });
    const fail = (err: Error) => {
      this.dead = err;
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", () => fail(new Error("the vector graph worker stopped")));
  }

  private settle(id: number, error: string | undefined, value: unknown): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    if (error) w.reject(new Error(error));
    else w.resolve(value as never);
  }

  private call<T>(msg: GraphRequestBody, transfer: ArrayBuffer[] = [], long = false): Promise<T> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    const p = new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: never) => void, reject });
      this.worker.postMessage({ ...msg, id }, transfer);
    });
    const graph = msg.graph;
    if (long) {
      this.long.set(graph, (this.long.get(graph) ?? 0) + 1);
      const done = () => {
        const n = (this.long.get(graph) ?? 1) - 1;
        if (n > 0) this.long.set(graph, n);
        else this.long.delete(graph);
      };
      p.then(done, done);
    }
    return p;
  }

  /** Whether a search of `graph` posted now would wait behind another graph's long work. */
  busyWithOthers(graph: string): boolean {
    return this.long.size > (this.long.has(graph) ? 1 : 0);
  }

  /** Creates a graph, loading it from `file` when given; resolves to its size. */
  open(graph: string, p: GraphParams, file?: string): Promise<number> {
    return this.call({ op: "open", graph, file, p: { ...p, metric: USEARCH_METRIC[p.metric] } }, [], file !== undefined);
  }
  /** Inserts vectors (the arrays are handed over to the worker); resolves to the graph's size and
   * the time the insertion took in the worker. */
  add(graph: string, keys: BigUint64Array, data: Float32Array, threads: number): Promise<{ size: number; ms: number }> {
    return this.call(
      { op: "add", graph, keys, data, threads },
      [keys.buffer as ArrayBuffer, data.buffer as ArrayBuffer],
      keys.length >= LONG_ADD,
    );
  }
  remove(graph: string, keys: BigUint64Array): Promise<number> {
    return this.call({ op: "remove", graph, keys });
  }
  search(graph: string, q: Float32Array, k: number): Promise<GraphMatches> {
    return this.call({ op: "search", graph, q, k });
  }
  /** Saves atomically (a temporary file renamed over the previous one). */
  save(graph: string, file: string): Promise<number> {
    return this.call({ op: "save", graph, file }, [], true);
  }
  drop(graph: string): Promise<number> {
    return this.call({ op: "drop", graph });
  }

  /**
   * Lets the calls already posted finish (a barrier: messages are handled in order), then stops
   * the thread: a native insertion cut off by terminate() aborts the whole process.
   */
  async close(): Promise<void> {
    if (!this.dead && this.waiting.size > 0) {
      const barrier = this.call({ op: "drop", graph: "\u0000close" }).catch(() => {});
      await Promise.race([barrier, new Promise((r) => setTimeout(r, 10_000).unref())]);
    }
    await this.worker.terminate();
  }
}
