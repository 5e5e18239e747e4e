// The vector graph worker thread: holds every loaded index's HNSW graph (usearch) and runs
// insertion, search, load and save on it for GraphWorker (graph-worker.ts). Messages are handled
// in the order they are posted; searches that arrive together are answered in one batch call.
import fs from "node:fs";
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";
import type { Index, MetricKind, ScalarKind } from "usearch";
import type { GraphDone, GraphFoundOne, GraphReply, GraphRequest, GraphWorkerData } from "./graph-protocol.js";

// Loaded as CommonJS: the package's ES module build cannot locate its prebuilt binary.
const usearch = createRequire(import.meta.url)("usearch") as typeof import("usearch").default;
const port = parentPort as NonNullable<typeof parentPort>;
const { searchThreads } = workerData as GraphWorkerData;
const graphs = new Map<string, Index>();
type Search = Extract<GraphRequest, { op: "search" }>;
let searches: Search[] = [];
let scheduled = false;

const post = (m: GraphReply): void => port.postMessage(m);
const reply = (id: number, fields: Omit<GraphDone, "op" | "id">): void => post({ op: "done", id, ...fields });
const message = (err: unknown): string => String((err as Error | undefined)?.message || err);

/** Runs the queued searches, one batch call per graph and k. */
function flush(): void {
  scheduled = false;
  const batch = searches;
  searches = [];
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
    reply(m.id, { size: 0 });
    return;
  }
  if (!g) {
    reply(m.id, { size: 0, error: "no such graph" });
    return;
  }
  if (m.op === "add") {
    const t = performance.now();
    g.add(m.keys, m.data, m.threads);
    reply(m.id, { size: g.size(), ms: performance.now() - t });
    return;
  } else if (m.op === "remove") {
    g.remove(m.keys);
  } else if (m.op === "save") {
    g.save(`${m.file}.tmp`);
    fs.renameSync(`${m.file}.tmp`, m.file);
  }
  reply(m.id, { size: g.size() });
}

port.on("message", (m: GraphRequest) => {
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
    handle(m);
  } catch (err) {
    reply(m.id, { size: graphs.get(m.graph)?.size() ?? 0, error: message(err) });
  }
});
