// An index of N vectors (the benchmark's mixture) through its life: searches from one client while
// two others bulk-load it; a kill -9 right after the last acknowledged write (no graph saved yet:
// it is rebuilt from the records); a graceful stop (the graph and the vectors file are saved); then
// writes after that save (1 % of the index replaced, ½ % deleted, 1 % new, and the first query's
// nearest deleted or moved) and a kill -9 (the saved graph loads and the writes since are replayed;
// the vectors file, older than the index, is brought up to date with them). After each restart:
// the first write and the first search (sent together as soon as /health answers), the status that
// search saw, whether it was exact and what answered it (the vectors file, with the writes after
// it, or a pass over the rows), the searches meanwhile (one every 200 ms) and when the index was
// ready. Baselines from the same run: searches on the built, quiet index, through the graph and exact.
import { startServer, type TestServer } from "../test/helpers/server.js";
import { gaussian, mixture, rng } from "../test/helpers/vectors-data.js";
import { keepAliveClient, percentile, printTable, type Row } from "./lib.js";
import { BATCH, BENCH_ENV, type Call, encodeBatches, exactTopK, indexView, loadAverage, upsertAll, vec, waitIndex } from "./vectors-lib.js";

const QUERIES = 200;
/** During the bulk load a search starts at most every this many ms (0: back to back, the default).
 * A paced searcher puts the same work beside the load whatever each search takes, so the load's
 * own speed can be compared between two versions of the code. */
const SEARCH_EVERY_MS = Number(process.env.BENCH_BULK_SEARCH_EVERY_MS ?? 0);
const SEARCHER = SEARCH_EVERY_MS > 0 ? `one search every ${SEARCH_EVERY_MS} ms at most` : "back to back";

interface Restart {
  kind: string;
  healthMs: number;
  writeMs: number;
  writeStatus: number;
  searchMs: number;
  searchStatus: number;
  searchHits: number;
  statusAtFirstSearch: string;
  /** Whether the first search answered the exact top-10 (with or without the write sent with it). */
  exact: boolean;
  /** What answered it while the index loaded (from the service's log), and the vectors file's catch-up. */
  source: string;
  /** A second write and search right after (the first requests of a process also pay for its warm-up). */
  secondWriteMs: number;
  secondSearchMs: number;
  /** Searches while the index was not ready (one every 200 ms). */
  during: number[];
  duringStatuses: Set<string>;
  readyS: number | undefined;
}

/** The index as the benchmark wrote it: `data`'s first `n` rows under ids "0", "1", ..., less the
 * ids deleted or given another vector (`gone`), plus the vectors written under other ids or
 * again (`extra`). Its exact top-10 is computed here as the index's vectors file is searched: the
 * rows' nearest, asking for as many more as are gone, merged with the extra ones. */
class Truth {
  readonly gone = new Set<string>();
  readonly extra = new Map<string, Float32Array>();

  constructor(
    private readonly data: Float32Array,
    private readonly dim: number,
    private readonly n: number,
  ) {}

  /** An id written with this vector (a new one, or again). */
  put(id: string, v: Float32Array): void {
    if (!Number.isNaN(Number(id))) this.gone.add(id);
    this.extra.set(id, v);
  }

  delete(id: string): void {
    this.gone.add(id);
    this.extra.delete(id);
  }

  top10(q: Float32Array): string[] {
    const dist = (v: Float32Array) => v.reduce((a, x, j) => a + (x - (q[j] as number)) ** 2, 0);
    const rows = exactTopK(this.data.subarray(0, this.n * this.dim), this.dim, [q], 10 + this.gone.size, 2)[0] as number[];
    const cands: Array<{ id: string; d: number }> = [];
    for (const r of rows) {
      if (this.gone.has(String(r))) continue;
      cands.push({ id: String(r), d: dist(this.data.subarray(r * this.dim, (r + 1) * this.dim)) });
      if (cands.length === 10) break;
    }
    for (const [id, v] of this.extra) cands.push({ id, d: dist(v) });
    return cands
      .sort((a, b) => a.d - b.d)
      .slice(0, 10)
      .map((c) => c.id);
  }
}

/** What answered the first search of the index while it loaded, from the service's log. */
function sourceOf(logs: string, index: string): string {
  const first = new RegExp(`"index":"${index}","from":"(\\w+)","scan_ms":(\\d+)`).exec(logs);
  if (!first) return "not loading";
  const used = new RegExp(`"index":"${index}","up_to":\\d+,"written_since":(\\d+),"dropped_since":(\\d+),"ms":(\\d+)`).exec(logs);
  const refused = new RegExp(`"index":"${index}",[^}]*"reason":"([^"]*)"`).exec(logs);
  const catchUp = used
    ? `; file read with ${Number(used[1]).toLocaleString("en")} written and ${Number(used[2]).toLocaleString("en")} dropped since, ${used[3]} ms`
    : refused
      ? `; file not used: ${refused[1]}`
      : "; no file";
  return `${first[1]} (${first[2]} ms in the scanner${catchUp})`;
}

/** Restarts the service on the same data (after `stop` or `crash`), then measures as described
 * above; `truths` are the first search's exact answers without and with the write sent with it. */
async function restart(
  old: TestServer,
  kind: string,
  index: string,
  bodies: string[],
  writeBody: string,
  readyTimeoutS: number,
  truths: string[][],
): Promise<{ server: TestServer; call: Call; r: Restart }> {
  const s0 = performance.now();
  // At log level info the service says what answered the first search while the index loaded.
  const server = await startServer({ dataDir: old.dataDir, key: old.key, env: { ...BENCH_ENV, AGENTBOX_LOG_LEVEL: "info" } });
  const healthMs = performance.now() - s0;
  const call = keepAliveClient(server, 8);
  const h0 = performance.now();
  let writeMs = 0;
  let searchMs = 0;
  let statusAtFirstSearch = "";
  const [w, s] = await Promise.all([
    call("POST", `/v1/vectors/${index}/batch`, writeBody).then((res) => {
      writeMs = performance.now() - h0;
      return res;
    }),
    call<{ hits: Array<{ id: string }> }>("POST", `/v1/vectors/${index}/search`, bodies[0]).then(async (res) => {
      searchMs = performance.now() - h0;
      statusAtFirstSearch = (await indexView(call, index)).status;
      return res;
    }),
  ]);
  const got = JSON.stringify(s.body.hits?.map((h) => h.id));
  const exact = truths.some((t) => JSON.stringify(t) === got);
  let t = performance.now();
  await call("POST", `/v1/vectors/${index}/batch`, writeBody);
  const secondWriteMs = performance.now() - t;
  t = performance.now();
  await call("POST", `/v1/vectors/${index}/search`, bodies[1]);
  const secondSearchMs = performance.now() - t;
  const during: number[] = [];
  const duringStatuses = new Set<string>();
  let readyS: number | undefined;
  const deadline = h0 + readyTimeoutS * 1000;
  for (let q = 1; performance.now() < deadline; q++) {
    const v = await indexView(call, index);
    if (v.status === "ready") {
      readyS = (performance.now() - h0) / 1000;
      break;
    }
    duringStatuses.add(v.status);
    const t = performance.now();
    const res = await call("POST", `/v1/vectors/${index}/search`, bodies[q % bodies.length]);
    if (res.status !== 200) throw new Error(`search during ${v.status}: ${res.status} ${JSON.stringify(res.body)}`);
    during.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 200));
  }
  const source = sourceOf(server.logs(), index);
  process.stdout.write(
    `${kind}: /health after ${(healthMs / 1000).toFixed(2)} s; first write ${writeMs.toFixed(0)} ms (${w.status}), first search ${searchMs.toFixed(0)} ms (${s.status}, ${s.body.hits?.length} hits, ${exact ? "exact" : "NOT exact"}, status ${statusAtFirstSearch}, from ${source}); ready after ${readyS?.toFixed(1) ?? `more than ${readyTimeoutS}`} s; load average ${loadAverage()}\n`,
  );
  return {
    server,
    call,
    r: {
      kind,
      healthMs,
      writeMs,
      writeStatus: w.status,
      searchMs,
      searchStatus: s.status,
      searchHits: s.body.hits?.length ?? 0,
      statusAtFirstSearch,
      exact,
      source,
      secondWriteMs,
      secondSearchMs,
      during,
      duringStatuses,
      readyS,
    },
  };
}

/** Searches one after another until `stop()`, each starting at least `everyMs` after the one
 * before started (0: back to back); their latencies (from each search's start). */
async function searchLoop(call: Call, index: string, bodies: string[], stop: () => boolean, everyMs = 0): Promise<number[]> {
  const ms: number[] = [];
  let last = Number.NEGATIVE_INFINITY;
  for (let i = 0; !stop(); i++) {
    const wait = last + everyMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t = performance.now();
    last = t;
    const res = await call("POST", `/v1/vectors/${index}/search`, bodies[i % bodies.length]);
    if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(res.body)}`);
    ms.push(performance.now() - t);
  }
  return ms;
}

/** Writes after the last save (so that the vectors file and the graph are older than the index at
 * the next crash): the query's 3 nearest deleted, its 4th moved far off, 2 new vectors next to it;
 * then 1 % of the index replaced, ½ % deleted and 1 % new. Returns the change in the vector count. */
async function writeAfterSave(call: Call, index: string, truth: Truth, data: Float32Array, dim: number, n: number, q: Float32Array) {
  const r = rng(7);
  const g = gaussian(r);
  const near = (v: Float32Array, by: number) => v.map((x) => x + by * g());
  const send = async (path: string, body: unknown) => {
    const res = await call("POST", `/v1/vectors/${index}/${path}`, body);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
  };
  const upsert = async (items: Array<[string, Float32Array]>) => {
    for (let i = 0; i < items.length; i += BATCH) {
      const part = items.slice(i, i + BATCH);
      await send("batch", { vectors: part.map(([id, v]) => ({ id, embedding: Array.from(v), metadata: { g: 0 } })) });
      for (const [id, v] of part) truth.put(id, v);
    }
  };
  const remove = async (ids: string[]) => {
    for (let i = 0; i < ids.length; i += BATCH) {
      const part = ids.slice(i, i + BATCH);
      await send("delete", { vector_ids: part });
      for (const id of part) truth.delete(id);
    }
  };
  const nearest = truth.top10(q);
  await remove(nearest.slice(0, 3));
  await upsert([
    [nearest[3] as string, q.map((x) => x + 20)],
    ["near-0", near(q, 0.01)],
    ["near-1", near(q, 0.01)],
  ]);
  const m = Math.max(100, Math.round(n / 100));
  const pick = (count: number) => {
    const out = new Set<string>();
    while (out.size < count) {
      const id = String(Math.floor(r() * n));
      if (!truth.gone.has(id)) out.add(id);
    }
    return [...out];
  };
  const row = (i: number) => data.subarray(i * dim, (i + 1) * dim);
  await upsert(pick(m).map((id) => [id, near(row(Number(id)), 0.1)]));
  await remove(pick(Math.floor(m / 2)));
  await upsert(Array.from({ length: m }, (_, i) => [`new-${i}`, near(row(Math.floor(r() * n)), 0.1)]));
  return 2 - 3 - Math.floor(m / 2) + m;
}

/** Searches on the built, quiet index: 2 × QUERIES through the graph, 50 exact. */
async function baselines(call: Call, index: string, bodies: string[], exactBodies: string[]): Promise<[number[], number[]]> {
  let i = 0;
  const quiet = await searchLoop(call, index, bodies, () => i++ >= 2 * QUERIES);
  let j = 0;
  const exact = await searchLoop(call, index, exactBodies, () => j++ >= 50);
  return [quiet, exact];
}

/** With `withRestarts` false only the bulk load and its same-run baselines (the quiet index, exact search). */
export async function benchRestart(
  n: number,
  dim: number,
  machine: () => string,
  readyTimeoutS: number,
  withRestarts = true,
): Promise<string[]> {
  const label = `${n.toLocaleString("en")} × ${dim}`;
  process.stdout.write(`\n## ${withRestarts ? "restarts and bulk load" : "bulk load"}, ${label}\n`);
  const { data, queries } = mixture(n + 10, dim, 42 + dim, QUERIES);
  const batches = encodeBatches(data, dim, n);
  const bodies = Array.from({ length: QUERIES }, (_, q) =>
    JSON.stringify({ vector: vec(queries, dim, q), top_k: 10, include_metadata: false }),
  );
  const exactBodies = Array.from({ length: QUERIES }, (_, q) =>
    JSON.stringify({ vector: vec(queries, dim, q), top_k: 10, include_metadata: false, exact: true }),
  );
  const writeBody = (i: number) => JSON.stringify({ vectors: [{ id: `late-${i}`, embedding: vec(data, dim, n + i) }] });
  const truth = new Truth(data, dim, n);
  const q0 = queries.subarray(0, dim);
  /** The first search's exact answers without and with the write sent with it (late-i). */
  const truthsWith = (i: number) => {
    const without = truth.top10(q0);
    truth.put(`late-${i}`, data.subarray((n + i) * dim, (n + i + 1) * dim));
    return [without, truth.top10(q0)];
  };
  let server = await startServer({ env: BENCH_ENV });
  const tables: string[] = [];
  try {
    let call = keepAliveClient(server, 8);
    const created = await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "restarts", dimension: dim, metric: "euclidean" });
    const index = created.body.id;

    // The bulk load, with a third client searching all along.
    const loadBefore = loadAverage();
    let loading = true;
    const u0 = performance.now();
    const [upserts, duringLoad] = await Promise.all([
      upsertAll(call, index, batches).finally(() => {
        loading = false;
      }),
      searchLoop(call, index, bodies, () => !loading, SEARCH_EVERY_MS),
    ]);
    const loadS = (performance.now() - u0) / 1000;
    const pendingAtEnd = { ...(await indexView(call, index)), load: loadAverage() };
    process.stdout.write(
      `loaded ${n} in ${loadS.toFixed(1)} s with ${duringLoad.length} searches meanwhile; status then ${pendingAtEnd.status}; load average ${loadAverage()}\n`,
    );

    if (!withRestarts) {
      await waitIndex(call, index, (v) => v.status === "ready");
      const readyS = (performance.now() - u0) / 1000;
      const [quiet, exact] = await baselines(call, index, bodies, exactBodies);
      const p = (ms: number[], q: number) =>
        percentile(
          [...ms].sort((a, b) => a - b),
          q,
        ).toFixed(1);
      const summary = [
        `**${label}**: ${(n / loadS).toFixed(0)} vectors/s acknowledged (all in the graph after ${readyS.toFixed(1)} s)`,
        `search during the load p50 / p95 / p99 ${p(duringLoad, 50)} / ${p(duringLoad, 95)} / ${p(duringLoad, 99)} ms (${duringLoad.length} searches)`,
        `quiet index, same run, ${p(quiet, 50)} / ${p(quiet, 95)} / ${p(quiet, 99)} ms`,
        `load average ${loadBefore} before the load, ${pendingAtEnd.load} at its end`,
      ].join("; ");
      const latency = printTable(`vectors ${label}: search latency during a bulk load`, [
        { name: `upsert, batches of 1,000 (2 clients), vectors`, samples: upserts, wallMs: loadS * 1000, ops: n },
        { name: `**search during the bulk load** (1 client, ${SEARCHER})`, samples: duringLoad },
        { name: "baseline, same run: search on the built, quiet index", samples: quiet },
        { name: "baseline, same run: exact search (`exact: true`), quiet index", samples: exact },
      ]);
      tables.push(`${latency}\n\n${summary}\n\n${machine()}`);
      process.stdout.write(`${summary}\n${machine()}\n`);
      return tables;
    }

    // kill -9 right after the last acknowledged write: no graph saved, rebuilt from the records.
    await server.crash();
    let next = await restart(
      server,
      "kill -9 right after the bulk load (no saved graph)",
      index,
      bodies,
      writeBody(0),
      readyTimeoutS,
      truthsWith(0),
    );
    ({ server, call } = next);
    const rebuilt = next.r;
    if (rebuilt.readyS === undefined) await waitIndex(call, index, (v) => v.status === "ready");
    const count = (await indexView(call, index)).vector_count;
    if (count !== n + 1) throw new Error(`after the crash: ${count} vectors, expected ${n + 1}`);

    // Same-run baselines on the built, quiet index: through the graph, and exact.
    const [quiet, exact] = await baselines(call, index, bodies, exactBodies);

    // A graceful stop saves the graph and the vectors file; then writes after that save and a
    // kill -9 (the saved graph loads and the writes are replayed; the vectors file is brought up to
    // date with them).
    await server.stop();
    next = await restart(server, "graceful stop (SIGTERM)", index, bodies, writeBody(1), readyTimeoutS, truthsWith(1));
    ({ server, call } = next);
    const graceful = next.r;
    await waitIndex(call, index, (v) => v.status === "ready");
    const added = await writeAfterSave(call, index, truth, data, dim, n, q0);
    await server.crash();
    next = await restart(
      server,
      `kill -9 after writes that followed the last save (${truth.gone.size.toLocaleString("en")} replaced or deleted, ${truth.extra.size.toLocaleString("en")} written)`,
      index,
      bodies,
      writeBody(2),
      readyTimeoutS,
      truthsWith(2),
    );
    ({ server, call } = next);
    const crashed = next.r;
    await waitIndex(call, index, (v) => v.status === "ready");
    const after = (await indexView(call, index)).vector_count;
    if (after !== n + 3 + added) throw new Error(`after the last crash: ${after} vectors, expected ${n + 3 + added}`);

    const rows: Row[] = [
      { name: `upsert, batches of 1,000 (2 clients), vectors`, samples: upserts, wallMs: loadS * 1000, ops: n },
      { name: `**search during the bulk load** (1 client, ${SEARCHER})`, samples: duringLoad },
      { name: "baseline, same run: search on the built, quiet index", samples: quiet },
      { name: "baseline, same run: exact search (`exact: true`), quiet index", samples: exact },
      ...[rebuilt, graceful, crashed]
        .filter((r) => r.during.length > 0)
        .map((r) => ({ name: `search while not ready after ${r.kind} (${[...r.duringStatuses].join(", ")})`, samples: r.during })),
    ];
    const latency = printTable(`vectors ${label}: search latency during a bulk load and after restarts`, rows);
    tables.push(`${latency}\n\n${machine()}`);
    const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
    const restarts = [
      `### vectors ${label}: the first write and search after a restart (sent together as soon as /health answers)`,
      "",
      machine(),
      "",
      "| restart | spawn to /health | first write acknowledged | first search answered (hits; exact; status then) | first search from | second write / search | ready (graph in use) after /health |",
      "| --- | ---: | ---: | ---: | --- | ---: | ---: |",
      ...[rebuilt, graceful, crashed].map(
        (r) =>
          `| ${r.kind} | ${fmt(r.healthMs)} | ${fmt(r.writeMs)} (${r.writeStatus}) | ${fmt(r.searchMs)} (${r.searchHits}; ${r.exact ? "exact" : r.statusAtFirstSearch === "loading" || r.statusAtFirstSearch === "building" ? "**not exact**" : "not exact: graph in use"}; ${r.statusAtFirstSearch}) | ${r.source} | ${fmt(r.secondWriteMs)} / ${fmt(r.secondSearchMs)} | ${r.readyS === undefined ? `> ${readyTimeoutS} s` : `${r.readyS.toFixed(1)} s`} |`,
      ),
    ].join("\n");
    process.stdout.write(`${restarts}\n\n`);
    tables.push(restarts);
  } finally {
    await server.dispose();
  }
  return tables;
}
