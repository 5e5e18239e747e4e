// The vector graph worker thread: holds every loaded index's HNSW graph (usearch) and runs
// insertion, search, load and save on it for GraphWorker (graph-worker.ts). Messages are handled
// in the order they are posted, with one exception: an insertion runs in slices of about a
// millisecond (a few vectors), and between slices the searches posted meanwhile are answered at once when only
// insertions stand before them (the vectors still to insert are scored exactly by the caller, see
// Collection.search), so a search does not wait behind a bulk load's insertions. Searches that
// arrive together are answered in one batch call.
import fs from "node:fs";
import { createRequire } from "node:module";
import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import type { Index, MetricKind, ScalarKind } from "usearch";
import type { GraphDone, GraphFoundOne, GraphReply, GraphRequest, GraphWorkerData } from "./graph-protocol.js";

// Loaded as CommonJS: the package's ES module build cannot locate its prebuilt binary.
const usearch = createRequire(import.meta.url)("usearch") as typeof import("usearch").default;
const port = parentPort as NonNullable<typeof parentPort>;
const { searchThreads } = workerData as GraphWorkerData;
const graphs = new Map<string, Index>();
type Search = Extract<GraphRequest, { op: "search" }>;
type Add = Extract<GraphRequest, { op: "add" }>;
/** Messages received and not handled yet, in the order they were posted. */
let queue: GraphRequest[] = [];
let scheduled = false;
/** An insertion runs in slices of about this long (the longest a search waits behind it)... */
const SLICE_MS = 1;
/** ...and of at least this many vectors per insertion thread: the threads of a thinner slice wait
 * for each other (measured on a 100,000 × 128 graph: 1,109–1,350 vectors/s in slices of 2 against
 * 1,494–1,657 in slices of 8 or 12; 4 in between). */
const SLICE_MIN_PER_THREAD = 2;
/** What inserting one vector took lately, by graph (sizes the slices). */
const msPerVector = new Map<string, number>();

const post = (m: GraphReply): void => port.postMessage(m);
const reply = (id: number, fields: Omit<GraphDone, "op" | "id">): void => post({ op: "done", id, ...fields });
const message = (err: unknown): string => String((err as Error | undefined)?.message || err);

/** Answers these searches, one batch call per graph and k. */
function answer(batch: Search[]): void {
  if (batch.length === 0) return;
  const groups = new Map<string, Search[]>();
  for (const s of batch) {
    const key = `${s.graph} ${s.k}`;
    const g = groups.get(key);
    if (g) g.push(s);
    else groups.set(key, [s]);
  }
  const results: GraphFoundOne[] = [];
  for (const group of groups.values()) {
    const { graph, k } = group[0] as Search;
    const g = graphs.get(graph);
    if (!g || g.size() === 0) {
      for (const s of group) results.push({ id: s.id, keys: new BigUint64Array(0), dists: new Float32Array(0) });
      continue;
    }
    try {
      if (group.length === 1) {
        const s = group[0] as Search;
        const m = g.search(s.q, k, 1);
        results.push({ id: s.id, keys: m.keys, dists: m.distances });
      } else {
        const dim = (group[0] as Search).q.length;
        const flat = new Float32Array(group.length * dim);
        for (const [i, s] of group.entries()) flat.set(s.q, i * dim);
        // A flat array of several queries is searched as a batch (usearch's types only say Matches).
        const m = g.search(flat, k, searchThreads) as unknown as InstanceType<typeof usearch.BatchMatches>;
        group.forEach((s, i) => {
          const r = m.get(i);
          results.push({ id: s.id, keys: r.keys, dists: r.distances });
        });
      }
    } catch (err) {
      for (const s of group) results.push({ id: s.id, error: message(err) });
    }
  }
  post({ op: "found", results });
}

/** Moves the messages posted meanwhile into the queue (without waiting for this thread's event loop). */
function pull(): void {
  for (let r = receiveMessageOnPort(port); r; r = receiveMessageOnPort(port)) queue.push(r.message as GraphRequest);
}

/** Answers now the queued searches that only insertions stand before (an insertion is under way). */
function answerAhead(): void {
  pull();
  const ahead: Search[] = [];
  const rest: GraphRequest[] = [];
  let blocked = false;
  for (const m of queue) {
    if (!blocked && m.op === "search") {
      ahead.push(m);
      continue;
    }
    if (m.op !== "add") blocked = true;
    rest.push(m);
  }
  if (ahead.length === 0) return;
  queue = rest;
  answer(ahead);
}

/** Inserts in slices, answering searches between them; returns the time the insertions took. */
function insert(g: Index, m: Add): number {
  const dim = m.data.length / Math.max(1, m.keys.length);
  let ms = 0;
  for (let at = 0; at < m.keys.length; ) {
    const per = msPerVector.get(m.graph) ?? 0.25;
    const n = Math.min(m.keys.length - at, Math.max(SLICE_MIN_PER_THREAD * m.threads, Math.floor(SLICE_MS / per)));
    const t = performance.now();
    g.add(m.keys.subarray(at, at + n), m.data.subarray(at * dim, (at + n) * dim), m.threads);
    const took = performance.now() - t;
    ms += took;
    msPerVector.set(m.graph, Math.max(0.0005, took / n));
    at += n;
    if (at < m.keys.length) answerAhead();
  }
  return ms;
}

function handle(m: Exclude<GraphRequest, Search>): void {
  if (m.op === "open") {
    const make = () =>
      new usearch.Index({
        dimensions: m.p.dim,
        metric: m.p.metric as MetricKind,
        quantization: m.p.quantization as ScalarKind,
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
        reply(m.id, { size: 0, error: `load: ${message(err)}` });
        return;
      }
    }
    reply(m.id, { size: g.size() });
    return;
  }
  const g = graphs.get(m.graph);
  if (m.op === "drop") {
    graphs.delete(m.graph);
    msPerVector.delete(m.graph);
    reply(m.id, { size: 0 });
    return;
  }
  if (!g) {
    reply(m.id, { size: 0, error: "no such graph" });
    return;
  }
  if (m.op === "add") {
    const ms = insert(g, m);
    reply(m.id, { size: g.size(), ms });
    return;
  } else if (m.op === "remove") {
    g.remove(m.keys);
  } else if (m.op === "save") {
    g.save(`${m.file}.tmp`);
    fs.renameSync(`${m.file}.tmp`, m.file);
  }
  reply(m.id, { size: g.size() });
}

/** Handles the queue in order, each run of searches as one batch. */
function drain(): void {
  scheduled = false;
  pull();
  while (queue.length > 0) {
    let n = 0;
    while (n < queue.length && (queue[n] as GraphRequest).op === "search") n++;
    if (n > 0) {
      answer(queue.slice(0, n) as Search[]);
      queue = queue.slice(n);
      continue;
    }
    const m = queue.shift() as Exclude<GraphRequest, Search>;
    try {
      handle(m);
    } catch (err) {
      reply(m.id, { size: graphs.get(m.graph)?.size() ?? 0, error: message(err) });
    }
    pull();
  }
}

port.on("message", (m: GraphRequest) => {
  queue.push(m);
  // Searches that arrive together are answered together: the rest is taken once this turn ends.
  if (!scheduled) {
    scheduled = true;
    setImmediate(drain);
  }
});
