// End to end: the /v1/vectors routes in the real service with its real SQLite store. Index
// lifecycle, every vector route, each filter operator checked against a brute-force evaluation,
// tenant isolation, bad inputs refused with nothing written, kill -9 during a stream of upserts,
// and recall of the ANN index on a clustered set.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError } from "./helpers/api.js";
import { createKey, eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { gaussian, rng } from "./helpers/vectors-data.js";

type Call = ReturnType<typeof client>;
interface Hit {
  id: string;
  score: number;
  values?: number[];
  metadata?: Record<string, unknown>;
}

/** Points around `clusters` random centres (a Gaussian mixture). */
function clustered(n: number, dim: number, clusters: number, seed: number): number[][] {
  const r = rng(seed);
  const gauss = gaussian(r);
  const centres = Array.from({ length: clusters }, () => Array.from({ length: dim }, () => gauss()));
  return Array.from({ length: n }, () => {
    const c = centres[Math.floor(r() * clusters)] as number[];
    return c.map((x, j) => x + 0.4 * 0.93 ** j * gauss());
  });
}

const dist2 = (a: number[], b: number[]) => a.reduce((s, x, i) => s + (x - (b[i] as number)) ** 2, 0);

async function createIndex(call: Call, body: Record<string, unknown>): Promise<{ id: string; name: string }> {
  const res = await call<{ id: string; name: string }>("POST", "/v1/vectors/indexes", body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

describe("vectors", () => {
  let server: TestServer;
  let call: Call;

  before(async () => {
    // This file starts no sandbox: no warm pool (its two sandboxes would take ~1.5 s of CPU from the tests).
    server = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
    call = client(server);
  });
  after(async () => {
    await server?.dispose();
  });

  test("index lifecycle: create, list with pages, get by id and name, update, protected delete", async () => {
    const a = await createIndex(call, {
      name: "life-a",
      dimension: 3,
      metric: "dot_product",
      cloud_provider: "AWS",
      region: "us-east-1",
      index_type: "serverless",
      metadata: { team: "x" },
      delete_protection: true,
    });
    const got = await call<Record<string, unknown>>("GET", `/v1/vectors/indexes/${a.id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.metric, "dotproduct");
    assert.equal(got.body.cloud_provider, "AWS");
    assert.equal(got.body.region, "us-east-1");
    assert.equal(got.body.index_type, "serverless");
    assert.equal(got.body.vector_type, "dense");
    assert.deepEqual(got.body.metadata, { team: "x" });
    assert.equal((await call("GET", "/v1/vectors/indexes/life-a")).body.id, a.id);
    assertError(await call("POST", "/v1/vectors/indexes", { name: "life-a", dimension: 3 }), 409, "conflict");
    await createIndex(call, { name: "life-b", dimension: 2 });
    await createIndex(call, { name: "life-c", dimension: 2, metric: "euclidean" });
    const p1 = await call<{ indexes: Array<{ name: string }>; pagination: { total: number; total_pages: number } }>(
      "GET",
      "/v1/vectors/indexes?page=1&page_size=2",
    );
    const p2 = await call<{ indexes: Array<{ name: string }> }>("GET", "/v1/vectors/indexes?page=2&page_size=2");
    const names = [...p1.body.indexes, ...p2.body.indexes].map((i) => i.name);
    for (const n of ["life-a", "life-b", "life-c"]) assert.ok(names.includes(n), names.join());
    assert.equal(p1.body.indexes.length, 2);
    assert.ok(p1.body.pagination.total >= 3);
    assertError(await call("DELETE", `/v1/vectors/indexes/${a.id}`), 409, "conflict");
    const upd = await call<Record<string, unknown>>("PUT", `/v1/vectors/indexes/${a.id}`, {
      delete_protection: false,
      metadata: { team: "y" },
    });
    assert.equal(upd.status, 200);
    assert.deepEqual(upd.body.metadata, { team: "y" });
    assert.equal((await call("DELETE", `/v1/vectors/indexes/${a.id}`)).status, 200);
    assertError(await call("GET", `/v1/vectors/indexes/${a.id}`), 404, "index_not_found");
  });

  test("every vector route: upsert, batch, fetch, list, get, update, search, delete", async () => {
    const idx = await createIndex(call, { name: "routes", dimension: 3, metric: "cosine" });
    const base = `/v1/vectors/${idx.id}`;
    const one = await call<{ ids: string[]; count: number }>("POST", `${base}/upsert`, { embedding: [1, 0, 0], metadata: { k: "one" } });
    assert.equal(one.status, 200);
    assert.equal(one.body.count, 1);
    const generated = one.body.ids[0] as string;
    assert.ok(generated.length > 0);
    const batch = await call<{ upserted_count: number }>("POST", `${base}/batch`, {
      vectors: [
        { id: "b", embedding: [0, 1, 0], metadata: { k: "b" } },
        { id: "c", embedding: [0.9, 0.1, 0], metadata: { k: "c" }, delete_protection: true },
      ],
    });
    assert.equal(batch.body.upserted_count, 2);
    const fetched = await call<{ vectors: Array<{ id: string; embedding: number[] }> }>("GET", `${base}/fetch?vector_ids=b,c,nope`);
    assert.deepEqual(fetched.body.vectors.map((v) => v.id).sort(), ["b", "c"]);
    const list = await call<{ vectors: Array<{ id: string }>; pagination: { total: number } }>("GET", `${base}/list?page=1&page_size=2`);
    assert.equal(list.body.vectors.length, 2);
    assert.equal(list.body.pagination.total, 3);
    const b = await call<{ id: string; embedding: number[]; metadata: Record<string, unknown> }>("GET", `${base}/b`);
    assert.deepEqual(b.body.embedding, [0, 1, 0]);
    assertError(await call("GET", `${base}/nope`), 404, "vector_not_found");

    const search = await call<{ hits: Hit[]; query_time_ms: number }>("POST", `${base}/search`, {
      vector: [1, 0, 0],
      top_k: 2,
      include_values: true,
    });
    assert.equal(search.status, 200);
    assert.deepEqual(
      search.body.hits.map((h) => h.id),
      [generated, "c"],
    );
    assert.ok(Math.abs((search.body.hits[0] as Hit).score - 1) < 1e-5);
    assert.deepEqual((search.body.hits[0] as Hit).values, [1, 0, 0]);
    assert.deepEqual((search.body.hits[0] as Hit).metadata, { k: "one" });
    assert.equal(typeof search.body.query_time_ms, "number");

    // An update of the metadata is what the next filtered search sees.
    const upd = await call("PUT", `${base}/b`, { metadata: { k: "changed" } });
    assert.equal(upd.status, 200);
    const filtered = await call<{ hits: Hit[] }>("POST", `${base}/search`, { vector: [1, 0, 0], top_k: 5, filter: { k: "changed" } });
    assert.deepEqual(
      filtered.body.hits.map((h) => h.id),
      ["b"],
    );
    // Replacing a vector moves it; the next search sees the new place.
    await call("POST", `${base}/upsert`, { vectors: [{ id: "b", embedding: [1, 0.01, 0] }] });
    const moved = await call<{ hits: Hit[] }>("POST", `${base}/search`, { vector: [1, 0, 0], top_k: 1 });
    assert.ok(["b", generated].includes((moved.body.hits[0] as Hit).id));
    assert.equal((await call<{ pagination: { total: number } }>("GET", `${base}/list`)).body.pagination.total, 3);

    // Deleting is all or nothing: a protected vector refuses the whole request.
    assertError(await call("POST", `${base}/delete`, { vector_ids: ["b", "c"] }), 409, "conflict");
    assert.equal((await call("GET", `${base}/b`)).status, 200);
    const del = await call<{ deleted_count: number }>("POST", `${base}/delete`, { vector_ids: ["b", generated] });
    assert.equal(del.body.deleted_count, 2);
    const after = await call<{ hits: Hit[] }>("POST", `${base}/search`, { vector: [1, 0, 0], top_k: 10 });
    assert.deepEqual(
      after.body.hits.map((h) => h.id),
      ["c"],
    );
  });

  test("filters: each operator, and $and/$or, match a brute-force evaluation", async () => {
    const idx = await createIndex(call, { name: "filters", dimension: 8, metric: "euclidean" });
    const r = rng(7);
    const colours = ["red", "green", "blue"];
    const vecs = clustered(600, 8, 6, 11);
    const items = vecs.map((embedding, i) => {
      const metadata: Record<string, unknown> = { n: i % 50, colour: colours[i % 3], flag: i % 2 === 0 };
      if (i % 5 === 0) metadata.rare = "yes";
      return { id: `v${i}`, embedding, metadata };
    });
    assert.equal((await call("POST", `/v1/vectors/${idx.id}/batch`, { vectors: items })).status, 200);
    const cases: Array<[unknown, (m: Record<string, unknown>) => boolean]> = [
      [{ colour: "red" }, (m) => m.colour === "red"],
      [{ colour: { $eq: "blue" } }, (m) => m.colour === "blue"],
      [{ colour: { $ne: "blue" } }, (m) => m.colour !== "blue"],
      [{ n: { $gt: 40 } }, (m) => (m.n as number) > 40],
      [{ n: { $gte: 40 } }, (m) => (m.n as number) >= 40],
      [{ n: { $lt: 3 } }, (m) => (m.n as number) < 3],
      [{ n: { $lte: 3 } }, (m) => (m.n as number) <= 3],
      [{ n: { $in: [1, 2, 49] } }, (m) => [1, 2, 49].includes(m.n as number)],
      [{ colour: { $nin: ["red", "green"] } }, (m) => !["red", "green"].includes(m.colour as string)],
      [{ rare: { $exists: true } }, (m) => m.rare !== undefined],
      [{ rare: { $exists: false } }, (m) => m.rare === undefined],
      [{ flag: true }, (m) => m.flag === true],
      [{ $and: [{ flag: false }, { n: { $gte: 10, $lt: 20 } }] }, (m) => m.flag === false && (m.n as number) >= 10 && (m.n as number) < 20],
      [{ $or: [{ colour: "green" }, { n: 0 }] }, (m) => m.colour === "green" || m.n === 0],
    ];
    for (const [filter, pred] of cases) {
      const q = vecs[Math.floor(r() * vecs.length)] as number[];
      const expected = items
        .filter((it) => pred(it.metadata))
        .map((it) => ({ id: it.id, d: dist2(q, it.embedding) }))
        .sort((a, b) => a.d - b.d)
        .slice(0, 20)
        .map((x) => x.id);
      const res = await call<{ hits: Hit[] }>("POST", `/v1/vectors/${idx.id}/search`, { vector: q, top_k: 20, filter });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.hits.map((h) => h.id),
        expected,
        JSON.stringify(filter),
      );
      for (const h of res.body.hits) assert.ok(pred(h.metadata as Record<string, unknown>));
    }
  });

  test("bad inputs: clear 4xx in the error envelope, nothing written", async () => {
    const idx = await createIndex(call, { name: "bad", dimension: 4 });
    const base = `/v1/vectors/${idx.id}`;
    const good = { id: "ok", embedding: [1, 2, 3, 4] };
    assertError(await call("POST", `${base}/batch`, { vectors: [good, { id: "short", embedding: [1, 2] }] }), 400, "invalid_request");
    assertError(await call("POST", `${base}/batch`, '{"vectors":[{"id":"nan","embedding":[1,2,3,NaN]}]}'), 400, "invalid_request");
    assertError(
      await call("POST", `${base}/batch`, { vectors: [good, { id: "big", embedding: [1, 2, 3, 1e39] }] }),
      400,
      "invalid_request",
    );
    assertError(
      await call("POST", `${base}/batch`, { vectors: [good, { id: "m", embedding: [1, 2, 3, 4], metadata: { x: "y".repeat(50_000) } }] }),
      400,
      "invalid_request",
    );
    const huge = JSON.stringify({ vectors: [{ id: "h", embedding: [1, 2, 3, 4], metadata: { x: "y".repeat(10 * 2 ** 20) } }] });
    assertError(await call("POST", `${base}/batch`, huge), 400, "invalid_request");
    assertError(await call("POST", `${base}/batch`, "x".repeat(65 * 2 ** 20)), 413, "payload_too_large");
    assert.equal((await call<{ pagination: { total: number } }>("GET", `${base}/list`)).body.pagination.total, 0);

    await call("POST", `${base}/upsert`, good);
    const q = { vector: [1, 2, 3, 4] };
    assertError(await call("POST", `${base}/search`, { ...q, top_k: 0 }), 400, "invalid_request");
    assertError(await call("POST", `${base}/search`, { ...q, top_k: 5000 }), 400, "invalid_request");
    assertError(await call("POST", `${base}/search`, { vector: [1, 2] }), 400, "invalid_request");
    assertError(await call("POST", `${base}/search`, { ...q, filter: { a: { $regex: "x" } } }), 400, "invalid_request");
    assertError(await call("POST", `${base}/search`, { ...q, filter: { $nor: [{ a: 1 }] } }), 400, "invalid_request");
    let deep: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < 9; i++) deep = { $and: [deep] };
    assertError(await call("POST", `${base}/search`, { ...q, filter: deep }), 400, "invalid_request");
    assertError(await call("POST", "/v1/vectors/indexes", { name: "d0", dimension: 0 }), 400, "invalid_request");
    assertError(await call("POST", "/v1/vectors/indexes", { name: "d1", dimension: 2001 }), 400, "invalid_request");
    assertError(await call("POST", "/v1/vectors/indexes", { name: "m1", dimension: 3, metric: "manhattan" }), 400, "invalid_request");
    assertError(await call("POST", "/v1/vectors/nope/search", q), 404, "index_not_found");
    assert.equal((await call<{ pagination: { total: number } }>("GET", `${base}/list`)).body.pagination.total, 1);
  });

  test("tenant isolation: another tenant's index is not found, its names are its own", async () => {
    const mine = await createIndex(call, { name: "shared-name", dimension: 2 });
    await call("POST", `/v1/vectors/${mine.id}/upsert`, { id: "secret", embedding: [1, 1] });
    const other = createKey(server.dataDir, "other", "tenant-other");
    const theirs = client({ url: server.url, key: other.key });
    for (const [method, path, body] of [
      ["GET", `/v1/vectors/indexes/${mine.id}`, undefined],
      ["GET", "/v1/vectors/indexes/shared-name", undefined],
      ["PUT", `/v1/vectors/indexes/${mine.id}`, { metadata: {} }],
      ["DELETE", `/v1/vectors/indexes/${mine.id}`, undefined],
      ["POST", `/v1/vectors/${mine.id}/search`, { vector: [1, 1] }],
      ["POST", `/v1/vectors/${mine.id}/upsert`, { embedding: [1, 1] }],
      ["GET", `/v1/vectors/${mine.id}/secret`, undefined],
      ["GET", `/v1/vectors/${mine.id}/fetch?vector_ids=secret`, undefined],
      ["POST", `/v1/vectors/${mine.id}/delete`, { vector_ids: ["secret"] }],
    ] as const) {
      assertError(await theirs(method, path, body), 404, "index_not_found");
    }
    const list = await theirs<{ indexes: unknown[] }>("GET", "/v1/vectors/indexes");
    assert.equal(list.body.indexes.length, 0);
    // The same name is free for the other tenant.
    assert.equal((await theirs("POST", "/v1/vectors/indexes", { name: "shared-name", dimension: 2 })).status, 200);
    assert.equal((await call("GET", `/v1/vectors/${mine.id}/secret`)).status, 200);
  });

  test("recall@10 of the ANN index on 20,000 clustered vectors of 64 dimensions is at least 0.95, also filtered", async () => {
    const dim = 64;
    const idx = await createIndex(call, { name: "recall", dimension: dim, metric: "euclidean" });
    const data = clustered(20_000, dim, 40, 3);
    for (let i = 0; i < data.length; i += 1000) {
      const vectors = data.slice(i, i + 1000).map((embedding, j) => ({ id: String(i + j), embedding, metadata: { half: (i + j) % 2 } }));
      assert.equal((await call("POST", `/v1/vectors/${idx.id}/batch`, { vectors })).status, 200);
    }
    // Wait until every vector is in the graph, so this measures the ANN search, not exact scoring.
    await eventually(async () => (await call("GET", `/v1/vectors/indexes/${idx.id}`)).body.status === "ready", 60_000);
    const queries = clustered(50, dim, 40, 3).map((q, i) => q.map((x) => x + 0.05 * Math.sin(i + x)));
    let found = 0;
    let foundFiltered = 0;
    for (const q of queries) {
      const ranked = data.map((v, i) => ({ i, d: dist2(q, v) })).sort((a, b) => a.d - b.d);
      const exact = ranked.slice(0, 10).map((x) => String(x.i));
      const res = await call<{ hits: Hit[] }>("POST", `/v1/vectors/${idx.id}/search`, { vector: q, top_k: 10, include_metadata: false });
      const got = new Set(res.body.hits.map((h) => h.id));
      found += exact.filter((id) => got.has(id)).length;
      // A filter matching half the vectors: too many to score exactly, so the graph search is widened.
      const exactOdd = ranked
        .filter((x) => x.i % 2 === 1)
        .slice(0, 10)
        .map((x) => String(x.i));
      const odd = await call<{ hits: Hit[] }>("POST", `/v1/vectors/${idx.id}/search`, { vector: q, top_k: 10, filter: { half: 1 } });
      assert.equal(odd.body.hits.length, 10);
      for (const h of odd.body.hits) assert.equal(h.metadata?.half, 1);
      const gotOdd = new Set(odd.body.hits.map((h) => h.id));
      foundFiltered += exactOdd.filter((id) => gotOdd.has(id)).length;
    }
    const recall = found / (queries.length * 10);
    assert.ok(recall >= 0.95, `recall@10 = ${recall}`);
    const recallFiltered = foundFiltered / (queries.length * 10);
    assert.ok(recallFiltered >= 0.95, `filtered recall@10 = ${recallFiltered}`);
  });
});

describe("vectors survive kill -9", () => {
  test("every acknowledged upsert is there after a crash and restart, no batch half-written", async () => {
    let server = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
    try {
      let call = client(server);
      const idx = await createIndex(call, { name: "crash", dimension: 16 });
      const data = clustered(4000, 16, 8, 5);
      const acked: string[][] = [];
      const sent: string[][] = [];
      let stop = false;
      const writer = (async () => {
        for (let b = 0; !stop && b * 20 < data.length; b++) {
          const vectors = data.slice(b * 20, b * 20 + 20).map((embedding, j) => ({ id: `c${b}-${j}`, embedding, metadata: { b } }));
          sent.push(vectors.map((v) => v.id));
          try {
            const res = await call("POST", `/v1/vectors/${idx.id}/batch`, { vectors });
            if (res.status === 200) acked.push(vectors.map((v) => v.id));
          } catch {
            return; // the connection died with the service
          }
        }
      })();
      await eventually(async () => acked.length >= 20, 20_000);
      await server.crash();
      stop = true;
      await writer;
      server = await startServer({ dataDir: server.dataDir, key: server.key, env: { AGENTBOX_WARM_POOL: "0" } });
      call = client(server);
      const total = (await call<{ pagination: { total: number } }>("GET", `/v1/vectors/${idx.id}/list?page_size=1`)).body.pagination.total;
      let present = 0;
      for (const batch of sent) {
        const res = await call<{ vectors: Array<{ id: string; embedding: number[] }> }>(
          "GET",
          `/v1/vectors/${idx.id}/fetch?vector_ids=${batch.join(",")}`,
        );
        const n = res.body.vectors.length;
        assert.ok(n === 0 || n === batch.length, `batch ${batch[0]} is half-written: ${n} of ${batch.length}`);
        present += n;
      }
      for (const batch of acked) {
        const res = await call<{ vectors: unknown[] }>("GET", `/v1/vectors/${idx.id}/fetch?vector_ids=${batch.join(",")}`);
        assert.equal(res.body.vectors.length, batch.length, `acknowledged batch ${batch[0]} lost`);
      }
      assert.equal(total, present);
      // And search finds them (the index was rebuilt from the store).
      const q = data[0] as number[];
      const hit = await call<{ hits: Hit[] }>("POST", `/v1/vectors/${idx.id}/search`, { vector: q, top_k: 1 });
      assert.equal((hit.body.hits[0] as Hit).id, "c0-0");
      // A clean restart reloads the saved graph and still answers the same.
      await server.stop();
      server = await startServer({ dataDir: server.dataDir, key: server.key, env: { AGENTBOX_WARM_POOL: "0" } });
      call = client(server);
      const again = await call<{ hits: Hit[] }>("POST", `/v1/vectors/${idx.id}/search`, { vector: q, top_k: 1 });
      assert.equal((again.body.hits[0] as Hit).id, "c0-0");
      assert.equal((await call<{ vector_count: number }>("GET", `/v1/vectors/indexes/${idx.id}`)).body.vector_count, present);
      // A delete after the saved graph, then a crash: the restart replays it onto the saved graph.
      assert.equal((await call("POST", `/v1/vectors/${idx.id}/delete`, { vector_ids: ["c0-0"] })).status, 200);
      await server.crash();
      server = await startServer({
        dataDir: server.dataDir,
        key: server.key,
        env: { AGENTBOX_WARM_POOL: "0", AGENTBOX_LOG_LEVEL: "info" },
      });
      call = client(server);
      const afterCrash = await call<{ hits: Hit[] }>("POST", `/v1/vectors/${idx.id}/search`, { vector: q, top_k: 5 });
      assert.equal(afterCrash.body.hits.length, 5);
      assert.ok(!afterCrash.body.hits.some((h) => h.id === "c0-0"), "a deleted vector came back after the restart");
      assert.ok(await eventually(() => server.logs().includes('"from_saved_graph":true'), 5000), "the saved graph was not used");
      // A damaged graph file is not loaded (usearch trusts its contents): the graph is rebuilt.
      await server.stop();
      fs.appendFileSync(path.join(server.dataDir, "vector-graphs", `${idx.id}.usearch`), "damaged");
      server = await startServer({
        dataDir: server.dataDir,
        key: server.key,
        env: { AGENTBOX_WARM_POOL: "0", AGENTBOX_LOG_LEVEL: "info" },
      });
      call = client(server);
      const rebuilt = await call<{ hits: Hit[] }>("POST", `/v1/vectors/${idx.id}/search`, { vector: q, top_k: 5 });
      assert.deepEqual(
        rebuilt.body.hits.map((h) => h.id),
        afterCrash.body.hits.map((h) => h.id),
      );
      assert.ok(await eventually(() => server.logs().includes('"from_saved_graph":false'), 5000), "the damaged graph was loaded");
    } finally {
      await server.dispose();
    }
  });
});
