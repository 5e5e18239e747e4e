// Vector indexes are available at once after a restart: a graceful stop saves every changed graph
// (the next start loads it, nothing to rebuild); after a crash with no saved graph, writes are
// acknowledged at once and searches answer exactly while the graph is rebuilt in the background;
// each index reports its measured recall and search width, and takes a recall target; after a
// crash that followed writes to a saved index, its first searches read its vectors file and the
// writes after it (from its side log of acknowledged writes).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { exactNearest } from "../src/vectors/exact.js";
import { readVectorFileHeader } from "../src/vectors/vector-file.js";
import { readVectorLog } from "../src/vectors/vector-log.js";
import { eventually } from "./helpers/leftovers.js";
import { client, startServer } from "./helpers/server.js";
import { clustered } from "./helpers/vectors-data.js";

const N = 50_000;
const DIM = 32;
const SMALL = 100;
const NOTE = "a sentence of the kind a record's metadata keeps beside its embedding, ".repeat(3);
const BATCH = 1000;

type Call = ReturnType<typeof client>;
interface IndexView {
  status: string;
  vector_count: number;
  search_width: number;
  target_recall: number;
  estimated_recall: number | null;
}

const view = async (call: Call, id: string) => (await call<IndexView>("GET", `/v1/vectors/indexes/${id}`)).body;
const vec = (data: Float32Array, i: number) => Array.from(data.subarray(i * DIM, (i + 1) * DIM));

test("restarts: a graceful stop leaves no graph to rebuild; after a crash, writes are acknowledged at once and searches are exact while the graph is rebuilt", async () => {
  const env = { AGENTBOX_LOG_LEVEL: "info" };
  let server = await startServer({ env });
  try {
    let call = client(server);
    const created = await call<{ id: string } & IndexView>("POST", "/v1/vectors/indexes", {
      name: "restart",
      dimension: DIM,
      metric: "euclidean",
      target_recall: 0.98,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = created.body.id;
    assert.equal(created.body.target_recall, 0.98);
    assert.equal(created.body.estimated_recall, null);
    const data = clustered(N + 20, DIM, 40, 3);
    for (let b = 0; b < N / BATCH; b++) {
      // With metadata, as most records have (loading the index reads it all; a search needs none).
      const vectors = Array.from({ length: BATCH }, (_, j) => ({
        id: `v${b * BATCH + j}`,
        embedding: vec(data, b * BATCH + j),
        metadata: { n: b * BATCH + j, text: NOTE },
      }));
      assert.equal((await call("POST", `/v1/vectors/${id}/batch`, { vectors })).status, 200);
    }
    // Built, then its recall measured on its own vectors (and the width chosen for the target). On a
    // loaded machine the measure may come while the last batches still wait for the graph
    // ("indexing"): both are waited for.
    const settled = async () => {
      const v = await view(call, id);
      return v.estimated_recall !== null && v.status === "ready";
    };
    assert.ok(await eventually(settled, 120_000, 250), `recall never measured on a ready index: ${JSON.stringify(await view(call, id))}`);
    const measured = await view(call, id);
    assert.equal(measured.status, "ready");
    assert.ok((measured.estimated_recall as number) >= 0.98, JSON.stringify(measured));
    // A search may ask for the exact answer, or a width of its own.
    const probe = vec(data, N + 5);
    const exact = await call<{ hits: Array<{ id: string }> }>("POST", `/v1/vectors/${id}/search`, {
      vector: probe,
      top_k: 10,
      exact: true,
    });
    assert.deepEqual(
      exact.body.hits.map((h) => h.id),
      exactNearest(data.subarray(0, N * DIM), DIM, Float32Array.from(probe), 10, "euclidean").map((i) => `v${i}`),
    );
    const wide = await call("POST", `/v1/vectors/${id}/search`, { vector: probe, top_k: 10, search_width: 512 });
    assert.equal(wide.status, 200);
    assert.equal((await call("POST", `/v1/vectors/${id}/search`, { vector: probe, search_width: 5000 })).status, 400);

    // A small index beside the large one (created after it: loaded after it at start).
    const small = (await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "small", dimension: DIM, metric: "euclidean" })).body
      .id;
    const smallData = clustered(SMALL + 1, DIM, 4, 5);
    const smallVectors = Array.from({ length: SMALL }, (_, i) => ({ id: `s${i}`, embedding: vec(smallData, i) }));
    assert.equal((await call("POST", `/v1/vectors/${small}/batch`, { vectors: smallVectors })).status, 200);

    // A graceful stop right after the writes (well within the periodic save): the graph is saved,
    // and the next start loads it instead of rebuilding.
    // Searches do not wait for the records to load: the small index answers while the large one is
    // still loading, and so does the large one, exactly, from its stored records (before, a search
    // waited until every record of its index was in memory).
    const searchThenLargeStatus = async (index: string, query: number[]) => {
      const res = await call<{ hits: Array<{ id: string }> }>("POST", `/v1/vectors/${index}/search`, { vector: query, top_k: 10 });
      return { res, large: (await view(call, id)).status };
    };
    const smallProbe = vec(smallData, SMALL);
    // The large index loads in about a second from the start; a stall of the whole machine in
    // that second (as on a loaded CI host) can let the load finish before the searches are even
    // sent, which proves nothing either way: such a start is tried again, up to three times.
    let first: Awaited<ReturnType<typeof searchThenLargeStatus>> | undefined;
    let firstSmall: Awaited<ReturnType<typeof searchThenLargeStatus>> | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      await server.stop();
      server = await startServer({ dataDir: server.dataDir, key: server.key, env });
      call = client(server);
      const sentAt = performance.now();
      [first, firstSmall] = await Promise.all([searchThenLargeStatus(id, probe), searchThenLargeStatus(small, smallProbe)]);
      if (first.large === "loading" && firstSmall.large === "loading") break;
      const loaded = server.logs().match(/"records_ms":(\d+),"ms":\d+,"msg":"vector index loaded"/g) ?? [];
      console.log(`start ${attempt + 1}: the large index had loaded by the time the searches answered`, {
        searchesMs: Math.round(performance.now() - sentAt),
        loaded,
      });
    }
    assert.ok(first && firstSmall);
    assert.equal(firstSmall.res.status, 200);
    assert.equal(firstSmall.large, "loading", "the small index answered only once the large one had loaded");
    assert.deepEqual(
      firstSmall.res.body.hits.map((h) => h.id),
      exactNearest(smallData.subarray(0, SMALL * DIM), DIM, Float32Array.from(smallProbe), 10, "euclidean").map((i) => `s${i}`),
    );
    assert.equal(first.res.status, 200);
    assert.equal(first.large, "loading", "the first search of the large index waited for its records");
    assert.deepEqual(
      first.res.body.hits.map((h) => h.id),
      exact.body.hits.map((h) => h.id),
      "the search answered while loading was not exact",
    );
    // Answered from the index's vectors file (written by the graceful stop), not by a pass over its
    // stored records.
    assert.ok(
      await eventually(() => server.logs().includes(`"index":"${id}","from":"file"`), 10_000),
      "the first search while loading did not read the vectors file",
    );
    const write = await call("POST", `/v1/vectors/${id}/batch`, { vectors: [{ id: "after-stop", embedding: vec(data, N) }] });
    assert.equal(write.status, 200);
    assert.ok(await eventually(async () => (await view(call, id)).status === "ready", 30_000), "not ready after a graceful restart");
    // (The log line may arrive after the answer that showed the status.)
    assert.ok(await eventually(() => server.logs().includes('"from_saved_graph":true'), 10_000), "the saved graph was not loaded");
    assert.ok(!server.logs().includes("rebuilding"), "the graph was rebuilt after a graceful stop");
    // The width measured before the stop is kept with the graph.
    const reloaded = await view(call, id);
    assert.equal(reloaded.search_width, measured.search_width);
    assert.equal(reloaded.estimated_recall, measured.estimated_recall);

    // A crash that left no saved graph (as when the service is killed before its first save):
    // the graph is rebuilt from the records in the background.
    await server.crash();
    fs.rmSync(path.join(server.dataDir, "vector-graphs"), { recursive: true, force: true });
    server = await startServer({ dataDir: server.dataDir, key: server.key, env });
    call = client(server);
    // Writes do not wait for the index to load (a generous bound on a busy machine; a load and
    // rebuild of this index takes far longer than the write).
    const t0 = performance.now();
    const early = await call("POST", `/v1/vectors/${id}/batch`, { vectors: [{ id: "after-crash", embedding: vec(data, N + 1) }] });
    const writeMs = performance.now() - t0;
    assert.equal(early.status, 200);
    // Acknowledged before the index could answer from its graph: the write did not wait for the
    // records to load or the graph to be rebuilt (before, the first write waited for both).
    const afterWrite = (await view(call, id)).status;
    assert.ok(afterWrite === "loading" || afterWrite === "building", `status right after the first write: ${afterWrite}`);
    const stored = data.subarray(0, (N + 2) * DIM);
    const ids = (i: number) => (i < N ? `v${i}` : i === N ? "after-stop" : "after-crash");
    let exactWhileBuilding = 0;
    let sawBuilding = false;
    for (let q = 0; q < 200; q++) {
      const before = (await view(call, id)).status;
      if (before === "ready") break;
      const query = data.subarray((q % N) * DIM, ((q % N) + 1) * DIM).map((x, j) => x + ((j + q) % 3) * 0.3);
      const res = await call<{ hits: Array<{ id: string }> }>("POST", `/v1/vectors/${id}/search`, { vector: Array.from(query), top_k: 10 });
      assert.equal(res.status, 200);
      const after = (await view(call, id)).status;
      if (before === "building" && after === "building") {
        sawBuilding = true;
        const truth = exactNearest(stored, DIM, query, 10, "euclidean").map(ids);
        assert.deepEqual(
          res.body.hits.map((h) => h.id),
          truth,
          "a search while the graph was rebuilt was not exact",
        );
        exactWhileBuilding++;
      }
    }
    assert.ok(sawBuilding, "the rebuild was over before any search (nothing was checked)");
    assert.ok(writeMs < 3000, `the first write after the crash took ${Math.round(writeMs)} ms`);
    assert.ok(await eventually(async () => (await view(call, id)).status === "ready", 120_000, 250), "the graph was never rebuilt");
    const final = await view(call, id);
    assert.equal(final.vector_count, N + 2);
    // The target can be changed; the index measures again for it.
    const raised = await call<IndexView>("PUT", `/v1/vectors/indexes/${id}`, { target_recall: 0.99 });
    assert.equal(raised.status, 200);
    assert.equal(raised.body.target_recall, 0.99);
    assert.equal((await call("PUT", `/v1/vectors/indexes/${id}`, { target_recall: 1.5 })).status, 400);
    console.log({ writeMs: Math.round(writeMs), exactWhileBuilding, final });
  } finally {
    await server.dispose();
  }
});

test("a graph is saved once its index is idle: a crash after that leaves nothing to rebuild", async () => {
  const env = { AGENTBOX_LOG_LEVEL: "info", AGENTBOX_VECTOR_SAVE_IDLE_S: "1" };
  let server = await startServer({ env });
  try {
    let call = client(server);
    const created = await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "idle", dimension: DIM, metric: "euclidean" });
    const id = created.body.id;
    const data = clustered(3000, DIM, 10, 4);
    for (let b = 0; b < 3; b++) {
      const vectors = Array.from({ length: BATCH }, (_, j) => ({ id: `v${b * BATCH + j}`, embedding: vec(data, b * BATCH + j) }));
      assert.equal((await call("POST", `/v1/vectors/${id}/batch`, { vectors })).status, 200);
    }
    // Saved without a stop (the state file is written after the graph file).
    const state = path.join(server.dataDir, "vector-graphs", `${id}.json`);
    assert.ok(await eventually(() => fs.existsSync(state), 30_000, 100), "the idle graph was not saved");
    await server.crash();
    server = await startServer({ dataDir: server.dataDir, key: server.key, env });
    call = client(server);
    assert.ok(await eventually(() => server.logs().includes('"from_saved_graph":true'), 30_000), "the saved graph was not loaded");
    assert.equal((await view(call, id)).vector_count, 3000);
  } finally {
    await server.dispose();
  }
});

test("after a kill -9 that followed writes to a saved index, its first searches read the vectors file with those writes, exactly", async () => {
  // Saved a second after the last write; after the crash not at all (the file stays the old one).
  let server = await startServer({ env: { AGENTBOX_LOG_LEVEL: "info", AGENTBOX_VECTOR_SAVE_IDLE_S: "1" } });
  const env = { AGENTBOX_LOG_LEVEL: "info", AGENTBOX_VECTOR_SAVE_IDLE_S: "3600" };
  try {
    let call = client(server);
    const id = (await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "crash", dimension: DIM, metric: "euclidean" })).body.id;
    const data = clustered(N + 20, DIM, 40, 6);
    /** What the index holds: id -> its vector and metadata. */
    const live = new Map<string, { v: number[]; n: number }>();
    const upsert = async (items: Array<{ id: string; v: number[]; n: number }>) => {
      const vectors = items.map((x) => ({ id: x.id, embedding: x.v, metadata: { n: x.n, text: NOTE } }));
      const res = await call("POST", `/v1/vectors/${id}/batch`, { vectors });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      for (const x of items) live.set(x.id, { v: x.v, n: x.n });
    };
    for (let b = 0; b < N / BATCH; b++)
      await upsert(Array.from({ length: BATCH }, (_, j) => ({ id: `v${b * BATCH + j}`, v: vec(data, b * BATCH + j), n: b * BATCH + j })));
    // The index's vectors file, written once it was idle: it holds every write so far.
    const file = path.join(server.dataDir, "vector-graphs", `${id}.vectors`);
    assert.ok(await eventually(() => readVectorFileHeader(file)?.upTo === N, 60_000, 100), "the vectors file was not written");

    const probe = vec(data, N + 5);
    const truth = () => {
      const ids = [...live.keys()];
      const packed = new Float32Array(ids.length * DIM);
      ids.forEach((k, j) => {
        packed.set((live.get(k) as { v: number[] }).v, j * DIM);
      });
      return exactNearest(packed, DIM, Float32Array.from(probe), 10, "euclidean").map((j) => ids[j] as string);
    };
    // After the file: the three nearest deleted, the fourth moved far away (its old vector, under
    // its old label, must not answer), a far one moved next to the probe, two new ones near it.
    const nearest = truth();
    const far = vec(data, N + 15).map((x) => x + 50);
    const near = (k: number) => probe.map((x, j) => x + ((j + k) % 5) * 0.01);
    assert.equal((await call("POST", `/v1/vectors/${id}/delete`, { vector_ids: nearest.slice(0, 3) })).status, 200);
    for (const k of nearest.slice(0, 3)) live.delete(k);
    const moved = nearest[3] as string;
    const farOne = "v7";
    assert.ok(!nearest.includes(farOne));
    await upsert([
      { id: moved, v: far, n: -1 },
      { id: farOne, v: near(1), n: -2 },
      { id: "late1", v: near(2), n: -3 },
      { id: "late2", v: near(3), n: -4 },
    ]);
    const want = truth();
    assert.ok(want.includes(farOne) && want.includes("late1") && !want.includes(moved));
    // Both batches after the file are in its side log (appended once acknowledged): the crash
    // below leaves them there.
    const log = `${file}.log`;
    assert.ok(await eventually(() => readVectorLog(log, DIM).length >= 2, 10_000, 50), "the writes after the file were not logged");

    // The index is big enough to be still loading at the first search; on a stalled machine the
    // load can be over first, which proves nothing: such a start is tried again (another crash
    // writes nothing either).
    let first: { hits: Array<{ id: string; metadata: { n: number } }> } | undefined;
    let status = "";
    let writeMs = 0;
    for (let attempt = 0; attempt < 3; attempt++) {
      await server.crash();
      server = await startServer({ dataDir: server.dataDir, key: server.key, env });
      call = client(server);
      // A write at once: acknowledged without waiting for the load (passed to the scanner too).
      const t0 = performance.now();
      await upsert([{ id: "after-crash", v: near(4), n: -5 }]);
      writeMs = performance.now() - t0;
      const res = await call<{ hits: Array<{ id: string; metadata: { n: number } }> }>("POST", `/v1/vectors/${id}/search`, {
        vector: probe,
        top_k: 10,
        include_metadata: true,
      });
      assert.equal(res.status, 200);
      first = res.body;
      status = (await view(call, id)).status;
      if (status === "loading") break;
      console.log(`start ${attempt + 1}: the index had loaded by the time the search answered`);
    }
    assert.equal(status, "loading", "the index was never still loading at its first search");
    const hits = (first as { hits: Array<{ id: string; metadata: { n: number } }> }).hits;
    assert.deepEqual(
      hits.map((h) => h.id),
      truth(),
      "the first search after the crash was not exact",
    );
    // Each hit's metadata as written last.
    for (const h of hits) assert.equal(h.metadata.n, live.get(h.id)?.n);
    // From the vectors file and the writes after it, not by a pass over the index's rows.
    assert.ok(
      await eventually(() => server.logs().includes(`"index":"${id}","from":"file"`), 10_000),
      `the first search while loading did not read the vectors file: ${server.logs().match(/.*vectors file.*|.*first search of a loading.*/g)}`,
    );
    const inUse = server
      .logs()
      .match(new RegExp(`"index":"${id}","up_to":${N},"logged":(\\d+),"written_since":(\\d+),"dropped_since":(\\d+)`));
    assert.ok(inUse, "the file's catch-up was not logged");
    // From the log: the 3 deletes and the 4 upserts after the file (7 writes; with the earlier
    // attempts' writes after the crash, more).
    assert.ok(Number(inUse[1]) >= 7, inUse[0]);
    assert.ok(writeMs < 3000, `the first write after the crash took ${Math.round(writeMs)} ms`);
    console.log({ writeMs: Math.round(writeMs), catchUp: inUse[0] });
  } finally {
    await server.dispose();
  }
});
