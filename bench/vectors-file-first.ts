// The first search of a large index after a graceful restart, through the real service, without
// building the index through the API (an hour at 1M on two busy cores): the index is created
// through the API on a fresh service, which is stopped; its N vectors are then written into the
// stopped service's vectors database through the store in batches, and its vectors file with the
// module's own writer, as a graceful stop leaves them (no saved graph: it is built after the
// load, which the first search does not wait for). Each round starts the service on that data
// directory, sends a search as soon as /health answers, and reports how long it took, what
// answered it (the vectors file or the rows, from the service's log) and whether it was the exact
// top-10. The data directory is kept between runs (--dir), so only the first run pays for it.
//
// With --filter, the first search of each round is filtered to a tenth of the vectors (metadata
// g = 3) and checked against the exact top-10 of those.
//
//   node --import tsx bench/vectors-file-first.ts [--n=1000000] [--rounds=3] [--dir=/tmp/x] [--filter]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { VectorDb } from "../src/vectors/store.js";
import { writeVectorFile } from "../src/vectors/vector-file.js";
import { startServer, type TestServer } from "../test/helpers/server.js";
import { mixture } from "../test/helpers/vectors-data.js";
import { keepAliveClient } from "./lib.js";
import { exactTopK, loadAverage, vec } from "./vectors-lib.js";

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const N = Number(arg("n") ?? 1_000_000);
const DIM = 128;
const ROUNDS = Number(arg("rounds") ?? 3);
const DIR = arg("dir") ?? path.join(os.tmpdir(), `agentbox-vector-file-first-${N}`);
const FILTER = process.argv.includes("--filter");
const ENV = { AGENTBOX_LOG_LEVEL: "info", AGENTBOX_RATE_LIMIT_PER_MINUTE: "100000000" };

/** The service's data directory and key, with the index created and its vectors stored. */
interface Prepared {
  dataDir: string;
  key: string;
  index: string;
}

async function prepare(data: Float32Array): Promise<Prepared> {
  const server = await startServer({ env: ENV });
  const call = keepAliveClient(server, 1);
  const index = (await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "first", dimension: DIM, metric: "euclidean" })).body.id;
  await server.stop();
  const store = new VectorDb(server.dataDir);
  let upTo = 0;
  const labels = new Float64Array(N);
  const t0 = performance.now();
  for (let start = 0; start < N; start += 10_000) {
    const items = [];
    for (let i = start; i < Math.min(N, start + 10_000); i++)
      items.push({ id: String(i), embedding: data.subarray(i * DIM, (i + 1) * DIM), metadata: { g: i % 10 }, delete_protection: false });
    const written = await store.upsert(index, items);
    written.forEach((w, j) => {
      labels[start + j] = w.label;
      upTo = Math.max(upTo, w.seq);
    });
  }
  await store.close();
  process.stdout.write(`stored ${N} vectors in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  const graphs = path.join(server.dataDir, "vector-graphs");
  for (const f of fs.readdirSync(graphs)) fs.rmSync(path.join(graphs, f));
  const ids = Array.from({ length: N }, (_, i) => String(i));
  await writeVectorFile(path.join(graphs, `${index}.vectors`), { dim: DIM, upTo, slots: N, live: N, vecs: data, labels, ids }, () => true);
  const p: Prepared = { dataDir: server.dataDir, key: server.key, index };
  fs.writeFileSync(path.join(DIR, "prepared.json"), JSON.stringify(p));
  return p;
}

fs.mkdirSync(DIR, { recursive: true });
const { data, queries } = mixture(N, DIM, 42 + DIM, ROUNDS);
const saved = path.join(DIR, "prepared.json");
const p: Prepared = fs.existsSync(saved) ? (JSON.parse(fs.readFileSync(saved, "utf8")) as Prepared) : await prepare(data);
/** The exact top-10 ids among the vectors with g = 3 (every tenth, from the fourth). */
function filteredTopK(q: Float32Array): string[] {
  const rows = Array.from({ length: Math.ceil((N - 3) / 10) }, (_, j) => j * 10 + 3);
  const packed = new Float32Array(rows.length * DIM);
  rows.forEach((i, j) => {
    packed.set(data.subarray(i * DIM, (i + 1) * DIM), j * DIM);
  });
  return (exactTopK(packed, DIM, [q], 10, 2)[0] as number[]).map((j) => String(rows[j]));
}
const vectorsFile = path.join(p.dataDir, "vector-graphs", `${p.index}.vectors`);
for (let r = 0; r < ROUNDS; r++) {
  const q = queries.subarray(r * DIM, (r + 1) * DIM);
  const want = FILTER ? filteredTopK(q) : (exactTopK(data, DIM, [q], 10, 2)[0] as number[]).map(String);
  // The state a graceful stop leaves: the vectors file, no graph (the last round's is removed).
  for (const f of fs.readdirSync(path.dirname(vectorsFile)))
    if (!f.endsWith(".vectors")) fs.rmSync(path.join(path.dirname(vectorsFile), f), { force: true });
  const s0 = performance.now();
  const server: TestServer = await startServer({ dataDir: p.dataDir, key: p.key, env: ENV });
  const health = performance.now() - s0;
  try {
    const call = keepAliveClient(server, 1);
    const t = performance.now();
    const res = await call<{ hits: Array<{ id: string }> }>(
      "POST",
      `/v1/vectors/${p.index}/search`,
      JSON.stringify({ vector: vec(queries, DIM, r), top_k: 10, ...(FILTER ? { filter: { g: 3 } } : {}) }),
    );
    const first = performance.now() - t;
    const t2 = performance.now();
    await call("POST", `/v1/vectors/${p.index}/search`, JSON.stringify({ vector: vec(queries, DIM, (r + 1) % ROUNDS), top_k: 10 }));
    const second = performance.now() - t2;
    const exact = res.status === 200 && res.body.hits.map((h) => h.id).join() === want.join();
    const line = (msg: string) =>
      server
        .logs()
        .split("\n")
        .find((l) => l.includes(msg));
    const src = /"from":"(\w+)".*"scan_ms":(\d+)/.exec(line("first search of a loading vector index") ?? "");
    const file = /"ms":(\d+)/.exec(line("vectors file in use") ?? "");
    process.stdout.write(
      `round ${r + 1}${FILTER ? " (filtered)" : ""}: /health after ${health.toFixed(0)} ms; first search ${first.toFixed(0)} ms after it (${res.status}, from ${src?.[1]}, scan ${src?.[2]} ms, file read ${file?.[1]} ms), exact top-10: ${exact}; second ${second.toFixed(0)} ms; load average ${loadAverage()}\n`,
    );
  } finally {
    // Killed, not stopped: a graceful stop would wait for the load and save the graph.
    await server.crash();
  }
}
process.exit(0);
