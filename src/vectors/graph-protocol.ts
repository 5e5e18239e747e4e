// The messages between GraphWorker (graph-worker.ts) and its worker thread (graph-worker-main.ts).

/** What the worker needs at start. */
export interface GraphWorkerData {
  /** Threads for a batch of searches that arrive together. */
  searchThreads: number;
}

/** A graph's settings as usearch takes them (the metric already in usearch's naming). */
export interface UsearchParams {
  dim: number;
  /** usearch's metric name: "cos", "ip" or "l2sq". */
  metric: string;
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
  /** usearch's scalar kind: "f32", "f16", ... */
  quantization: string;
}

/** A request; every one carries an id its answer repeats. */
export type GraphRequest =
  | { op: "open"; id: number; graph: string; file: string | undefined; p: UsearchParams }
  | { op: "add"; id: number; graph: string; keys: BigUint64Array; data: Float32Array; threads: number }
  | { op: "remove"; id: number; graph: string; keys: BigUint64Array }
  | { op: "search"; id: number; graph: string; q: Float32Array; k: number }
  | { op: "save"; id: number; graph: string; file: string }
  | { op: "drop"; id: number; graph: string };

/** Distributes Omit over the union (so each request keeps its own fields without the id). */
export type GraphRequestBody = GraphRequest extends infer R ? (R extends GraphRequest ? Omit<R, "id"> : never) : never;

/** The answer to any request but a search: the graph's size after it. */
export interface GraphDone {
  op: "done";
  id: number;
  size: number;
  error?: string;
  /** How long the operation itself took in the worker (an insertion's, to size the next chunk). */
  ms?: number;
}

/** One search's answer. */
export interface GraphFoundOne {
  id: number;
  keys?: BigUint64Array;
  dists?: Float32Array;
  error?: string;
}

/** The answers to the searches run in one batch. */
export interface GraphFound {
  op: "found";
  results: GraphFoundOne[];
}

export type GraphReply = GraphDone | GraphFound;
