// The HNSW graphs (usearch) of every loaded index, held in one worker thread: graph insertion,
// search, load and save run there, so the event loop keeps serving requests (and HTTP parsing on
// the main thread overlaps the graph's work on the second core). Messages are handled in the
// order they are posted, so a search posted after an add or a remove sees it. Searches that
// arrive together are answered in one batch call.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { Metric } from "./engine.js";

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

// Plain CommonJS so it runs the same from source and from the build (no loader in the worker).
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const usearch = require(workerData.usearch);
const graphs = new Map();
let searches = [];
let scheduled = false;
function reply(id, fields) { parentPort.postMessage({ op: "done", id, ...fields }); }
function flush() {
  scheduled = false;
  const batch = searches;
  searches = [];
  const groups = new Map();
  for (const s of batch) {
    const key = s.graph + " " + s.k;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(s);
  }
  const results = [];
  for (const group of groups.values()) {
    const { graph, k } = group[0];
    const g = graphs.get(graph);
    if (!g || g.size() === 0) {
      for (const s of group) results.push({ id: s.id, keys: new BigUint64Array(0), dists: new Float32Array(0) });
      continue;
    }
    try {
      if (group.length === 1) {
        const m = g.search(group[0].q, k, 1);
        results.push({ id: group[0].id, keys: m.keys, dists: m.distances });
      } else {
        const dim = group[0].q.length;
        const flat = new Float32Array(group.length * dim);
        group.forEach((s, i) => flat.set(s.q, i * dim));
        const m = g.search(flat, k, workerData.searchThreads);
        group.forEach((s, i) => {
          const r = m.get(i);
          results.push({ id: s.id, keys: r.keys, dists: r.distances });
        });
      }
    } catch (err) {
      for (const s of group) results.push({ id: s.id, error: String((err && err.message) || err) });
    }
  }
  parentPort.postMessage({ op: "found", results });
}
parentPort.on("message", (m) => {
  if (m.op === "search") {
    searches.push(m);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
    return;
  }
  // Searches queued before this message run first (they were posted before it).
  if (searches.length > 0) flush();
  try {
    if (m.op === "open") {
      const make = () =>
        new usearch.Index({
          dimensions: m.p.dim,
          metric: m.p.metric,
          quantization: m.p.quantization,
          multi: false,
          connectivity: m.p.connectivity,
          expansion_add: m.p.expansionAdd,
          expansion_search: m.p.expansionSearch,
        });
      const g = make();
      graphs.set(m.graph, g);
      if (m.file) {
        try {
          g.load(m.file);
        } catch (err) {
          // An unreadable file: an empty graph, and the caller rebuilds it.
          graphs.set(m.graph, make());
          return reply(m.id, { size: 0, error: "load: " + String((err && err.message) || err) });
        }
      }
      return reply(m.id, { size: g.size() });
    }
    const g = graphs.get(m.graph);
    if (m.op === "drop") {
      graphs.delete(m.graph);
      return reply(m.id, { size: 0 });
    }
    if (!g) return reply(m.id, { size: 0, error: "no such graph" });
    if (m.op === "add") {
      g.add(m.keys, m.data, m.threads);
    } else if (m.op === "remove") {
      g.remove(m.keys);
    } else if (m.op === "save") {
      g.save(m.file + ".tmp");
      fs.renameSync(m.file + ".tmp", m.file);
    }
    reply(m.id, { size: g.size() });
  } catch (err) {
    reply(m.id, { size: graphs.get(m.graph)?.size() ?? 0, error: String((err && err.message) || err) });
  }
});
`;

interface Done {
  op: "done";
  id: number;
  size: number;
  error?: string;
}
interface Found {
  op: "found";
  results: Array<{ id: number; keys?: BigUint64Array; dists?: Float32Array; error?: string }>;
}

export interface GraphMatches {
  keys: BigUint64Array;
  dists: Float32Array;
}

type Waiter = { resolve: (v: never) => void; reject: (e: Error) => void };

export class GraphWorker {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiter>();
  private dead: Error | undefined;

  constructor(searchThreads = 1) {
    const require = createRequire(import.meta.url);
    this.worker = new Worker(WORKER, { eval: true, workerData: { usearch: require.resolve("usearch"), searchThreads } });
    this.worker.unref();
    this.worker.on("message", (m: Done | Found) => {
      if (m.op === "found") {
        for (const r of m.results) this.settle(r.id, r.error, { keys: r.keys, dists: r.dists });
      } else {
        this.settle(m.id, m.error, m.size);
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

  private call<T>(msg: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: never) => void, reject });
      this.worker.postMessage({ ...msg, id }, transfer);
    });
  }

  /** Creates a graph, loading it from `file` when given; resolves to its size. */
  open(graph: string, p: GraphParams, file?: string): Promise<number> {
    return this.call({ op: "open", graph, file, p: { ...p, metric: USEARCH_METRIC[p.metric] } });
  }
  /** Inserts vectors (the arrays are handed over to the worker); resolves to the graph's size. */
  add(graph: string, keys: BigUint64Array, data: Float32Array, threads: number): Promise<number> {
    return this.call({ op: "add", graph, keys, data, threads }, [keys.buffer as ArrayBuffer, data.buffer as ArrayBuffer]);
  }
  remove(graph: string, keys: BigUint64Array): Promise<number> {
    return this.call({ op: "remove", graph, keys });
  }
  search(graph: string, q: Float32Array, k: number): Promise<GraphMatches> {
    return this.call({ op: "search", graph, q, k });
  }
  /** Saves atomically (a temporary file renamed over the previous one). */
  save(graph: string, file: string): Promise<number> {
    return this.call({ op: "save", graph, file });
  }
  drop(graph: string): Promise<number> {
    return this.call({ op: "drop", graph });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
