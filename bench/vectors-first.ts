// The first search after a graceful restart, several times over: an index of N vectors (the
// benchmark's mixture) is loaded, then the service is stopped and started again ROUNDS times; each
// time the first search is sent as soon as /health answers, and the next four one after another.
// Each first search is checked against exact top-10 computed here (while the index loads, searches
// are exact). Baseline from the same run: searches on the loaded, quiet index. (At log level info
// the service logs where each one was answered from: the index's vectors file or its records.)
import { startServer, type TestServer } from "../test/helpers/server.js";
import { mixture } from "../test/helpers/vectors-data.js";
import { keepAliveClient, printTable } from "./lib.js";
import { BENCH_ENV, type Call, encodeBatches, exactTopK, indexView, loadAverage, upsertAll, vec, waitIndex } from "./vectors-lib.js";

const QUERIES = 20;
const AFTER = 4;

export async function benchFirstSearch(n: number, dim: number, rounds: number, machine: () => string): Promise<string[]> {
  const label = `${n.toLocaleString("en")} × ${dim}`;
  process.stdout.write(`\n## first search after a restart, ${label}\n`);
  const { data, queries } = mixture(n, dim, 42 + dim, QUERIES);
  const qs = Array.from({ length: QUERIES }, (_, q) => queries.subarray(q * dim, (q + 1) * dim));
  const truth = exactTopK(data, dim, qs, 10, 2);
  const bodies = qs.map((_, q) => JSON.stringify({ vector: vec(queries, dim, q), top_k: 10, include_metadata: false }));
  let server: TestServer = await startServer({ env: BENCH_ENV });
  const first: number[] = [];
  const next: number[] = [];
  const health: number[] = [];
  const statuses: string[] = [];
  // First searches after a restart answered with the exact top-10 (while the index loads, searches
  // are exact; once its graph is in use they are not, so the later ones are not counted).
  let exact = 0;
  try {
    let call: Call = keepAliveClient(server, 4);
    const index = (await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "first", dimension: dim, metric: "euclidean" })).body
      .id;
    await upsertAll(call, index, encodeBatches(data, dim, n));
    await waitIndex(call, index, (v) => v.status === "ready");
    const search = async (q: number, count = false): Promise<number> => {
      const t = performance.now();
      const res = await call<{ hits: Array<{ id: string }> }>("POST", `/v1/vectors/${index}/search`, bodies[q]);
      const ms = performance.now() - t;
      if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(res.body)}`);
      const want = truth[q] as number[];
      if (count) {
        if (res.body.hits.length === 10 && res.body.hits.every((h, i) => Number(h.id) === want[i])) exact++;
      }
      return ms;
    };
    const quiet: number[] = [];
    for (let q = 0; q < QUERIES * 5; q++) quiet.push(await search(q % QUERIES));
    for (let round = 0; round < rounds; round++) {
      await server.stop();
      const s0 = performance.now();
      server = await startServer({ dataDir: server.dataDir, key: server.key, env: BENCH_ENV });
      health.push(performance.now() - s0);
      call = keepAliveClient(server, 4);
      const q0 = round % QUERIES;
      first.push(await search(q0, true));
      statuses.push((await indexView(call, index)).status);
      for (let i = 1; i <= AFTER; i++) next.push(await search((q0 + i) % QUERIES));
      process.stdout.write(
        `restart ${round + 1}: /health after ${(health[round] as number).toFixed(0)} ms, first search ${(first[round] as number).toFixed(0)} ms (status after it: ${statuses[round]}); load average ${loadAverage()}\n`,
      );
    }
    const table = printTable(`vectors ${label}: the first search after a graceful restart (${rounds} restarts)`, [
      { name: "**first search**, sent as soon as /health answers", samples: first },
      { name: `the ${AFTER} searches after it, one after another`, samples: next },
      { name: "spawn to /health", samples: health },
      { name: "baseline, same run: search on the loaded, quiet index", samples: quiet },
    ]);
    const summary = `First searches answered with the exact top-10 (ids in order): ${exact} of ${rounds}; status right after each: ${statuses.join(", ")}.`;
    process.stdout.write(`${summary}\n${machine()}\n`);
    return [`${table}\n\n${summary}\n\n${machine()}`];
  } finally {
    await server.dispose();
  }
}
