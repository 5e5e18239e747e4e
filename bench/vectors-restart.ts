// An index of N vectors (the benchmark's mixture) through its life: searches from one client while
// two others bulk-load it; a kill -9 right after the last acknowledged write (no graph saved yet:
// it is rebuilt from the records); a graceful stop (the graph is saved); a kill -9 after that (the
// saved graph loads, the writes since are replayed). After each restart: the first write and the
// first search (sent together as soon as /health answers), the status that search saw, the
// searches meanwhile (one every 200 ms) and when the index was ready. Baselines from the same run:
// searches on the built, quiet index, through the graph and exact.
import { startServer, type TestServer } from "../test/helpers/server.js";
import { mixture } from "../test/helpers/vectors-data.js";
import { keepAliveClient, printTable, type Row } from "./lib.js";
import { BENCH_ENV, type Call, encodeBatches, indexView, loadAverage, upsertAll, vec, waitIndex } from "./vectors-lib.js";

const QUERIES = 200;

interface Restart {
  kind: string;
  healthMs: number;
  writeMs: number;
  writeStatus: number;
  searchMs: number;
  searchStatus: number;
  searchHits: number;
  statusAtFirstSearch: string;
  /** A second write and search right after (the first requests of a process also pay for its warm-up). */
  secondWriteMs: number;
  secondSearchMs: number;
  /** Searches while the index was not ready (one every 200 ms). */
  during: number[];
  duringStatuses: Set<string>;
  readyS: number | undefined;
}

/** Restarts the service on the same data (after `stop` or `crash`), then measures as described above. */
async function restart(
  old: TestServer,
  kind: string,
  index: string,
  bodies: string[],
  writeBody: string,
  readyTimeoutS: number,
): Promise<{ server: TestServer; call: Call; r: Restart }> {
  const s0 = performance.now();
  const server = await startServer({ dataDir: old.dataDir, key: old.key, env: BENCH_ENV });
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
    call<{ hits: unknown[] }>("POST", `/v1/vectors/${index}/search`, bodies[0]).then(async (res) => {
      searchMs = performance.now() - h0;
      statusAtFirstSearch = (await indexView(call, index)).status;
      return res;
    }),
  ]);
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
  process.stdout.write(
    `${kind}: /health after ${(healthMs / 1000).toFixed(2)} s; first write ${writeMs.toFixed(0)} ms (${w.status}), first search ${searchMs.toFixed(0)} ms (${s.status}, ${s.body.hits?.length} hits, status ${statusAtFirstSearch}); ready after ${readyS?.toFixed(1) ?? `more than ${readyTimeoutS}`} s; load average ${loadAverage()}\n`,
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
      secondWriteMs,
      secondSearchMs,
      during,
      duringStatuses,
      readyS,
    },
  };
}

/** Searches one after another until `stop()`; their latencies. */
async function searchLoop(call: Call, index: string, bodies: string[], stop: () => boolean): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; !stop(); i++) {
    const t = performance.now();
    const res = await call("POST", `/v1/vectors/${index}/search`, bodies[i % bodies.length]);
    if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(res.body)}`);
    ms.push(performance.now() - t);
  }
  return ms;
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
  let server = await startServer({ env: BENCH_ENV });
  const tables: string[] = [];
  try {
    let call = keepAliveClient(server, 8);
    const created = await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "restarts", dimension: dim, metric: "euclidean" });
    const index = created.body.id;

    // The bulk load, with a third client searching all along.
    let loading = true;
    const u0 = performance.now();
    const [upserts, duringLoad] = await Promise.all([
      upsertAll(call, index, batches).finally(() => {
        loading = false;
      }),
      searchLoop(call, index, bodies, () => !loading),
    ]);
    const loadS = (performance.now() - u0) / 1000;
    const pendingAtEnd = await indexView(call, index);
    process.stdout.write(
      `loaded ${n} in ${loadS.toFixed(1)} s with ${duringLoad.length} searches meanwhile; status then ${pendingAtEnd.status}; load average ${loadAverage()}\n`,
    );

    if (!withRestarts) {
      await waitIndex(call, index, (v) => v.status === "ready");
      const [quiet, exact] = await baselines(call, index, bodies, exactBodies);
      const latency = printTable(`vectors ${label}: search latency during a bulk load`, [
        { name: `upsert, batches of 1,000 (2 clients), vectors`, samples: upserts, wallMs: loadS * 1000, ops: n },
        { name: "**search during the bulk load** (1 client, back to back)", samples: duringLoad },
        { name: "baseline, same run: search on the built, quiet index", samples: quiet },
        { name: "baseline, same run: exact search (`exact: true`), quiet index", samples: exact },
      ]);
      tables.push(`${latency}\n\n${machine()}`);
      process.stdout.write(`${machine()}\n`);
      return tables;
    }

    // kill -9 right after the last acknowledged write: no graph saved, rebuilt from the records.
    await server.crash();
    let next = await restart(server, "kill -9 right after the bulk load (no saved graph)", index, bodies, writeBody(0), readyTimeoutS);
    ({ server, call } = next);
    const rebuilt = next.r;
    if (rebuilt.readyS === undefined) await waitIndex(call, index, (v) => v.status === "ready");
    const count = (await indexView(call, index)).vector_count;
    if (count !== n + 1) throw new Error(`after the crash: ${count} vectors, expected ${n + 1}`);

    // Same-run baselines on the built, quiet index: through the graph, and exact.
    const [quiet, exact] = await baselines(call, index, bodies, exactBodies);

    // A graceful stop saves the graph; then a kill -9 soon after a write (the saved graph loads and
    // the write is replayed).
    await server.stop();
    next = await restart(server, "graceful stop (SIGTERM)", index, bodies, writeBody(1), readyTimeoutS);
    ({ server, call } = next);
    const graceful = next.r;
    await waitIndex(call, index, (v) => v.status === "ready");
    await server.crash();
    next = await restart(server, "kill -9 after the graceful restart and a write", index, bodies, writeBody(2), readyTimeoutS);
    ({ server, call } = next);
    const crashed = next.r;

    const rows: Row[] = [
      { name: `upsert, batches of 1,000 (2 clients), vectors`, samples: upserts, wallMs: loadS * 1000, ops: n },
      { name: "**search during the bulk load** (1 client, back to back)", samples: duringLoad },
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
      "| restart | spawn to /health | first write acknowledged | first search answered (hits; status then) | second write / search | ready (graph in use) after /health |",
      "| --- | ---: | ---: | ---: | ---: | ---: |",
      ...[rebuilt, graceful, crashed].map(
        (r) =>
          `| ${r.kind} | ${fmt(r.healthMs)} | ${fmt(r.writeMs)} (${r.writeStatus}) | ${fmt(r.searchMs)} (${r.searchHits}; ${r.statusAtFirstSearch}) | ${fmt(r.secondWriteMs)} / ${fmt(r.secondSearchMs)} | ${r.readyS === undefined ? `> ${readyTimeoutS} s` : `${r.readyS.toFixed(1)} s`} |`,
      ),
    ].join("\n");
    process.stdout.write(`${restarts}\n\n`);
    tables.push(restarts);
  } finally {
    await server.dispose();
  }
  return tables;
}
