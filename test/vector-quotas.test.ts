// End to end: the vector quotas. A tenant's max_vector_indexes, max_vectors and vector_storage_mb
// (set and shown by the admin API and the CLI) refuse a write past them with 429 quota_exceeded and
// keep nothing of the refused batch; deletes free quota; another tenant is unaffected; and the
// node's bound on vector bytes in memory (AGENTBOX_VECTOR_MEMORY_MB) refuses upserts with 503.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { TenantJson } from "../src/cli/admin-client.js";
import { assertError } from "./helpers/api.js";
import { cli } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

type Call = ReturnType<typeof client>;

/** Metadata of about 39 KB as JSON (under the 40 KB bound per vector). */
const BIG = { text: "x".repeat(39_000) };
const vec = (id: string, metadata: Record<string, unknown> = {}) => ({ id, embedding: [1, 0.5, 0.25, 0.125], metadata });

describe("vector quotas", () => {
  let server: TestServer;
  let admin: Call;
  let a: Call;
  let b: Call;

  const keyFor = async (tenant: string): Promise<Call> => {
    const res = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: tenant, tenant_id: tenant });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return client({ url: server.url, key: res.body.key });
  };
  const count = async (call: Call, index: string) =>
    (await call<{ vector_count: number }>("GET", `/v1/vectors/indexes/${index}`)).body.vector_count;
  const fetchIds = async (call: Call, index: string, ids: string[]) =>
    (await call<{ vectors: Array<{ id: string }> }>("GET", `/v1/vectors/${index}/fetch?vector_ids=${ids.join(",")}`)).body.vectors.map(
      (v) => v.id,
    );
  /** The status, with the start of the answer when it is not the one expected. */
  const ok = (res: { status: number; body: unknown }) => assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 300));
  const refused = (res: { status: number; body: unknown; headers: Headers }, status: number, code: string) => {
    assert.equal(res.status, status, JSON.stringify(res.body).slice(0, 300));
    assertError(res, status, code);
    assert.ok(Number(res.headers.get("retry-after")) >= 1, "Retry-After");
  };

  before(async () => {
    // 2 MiB of vectors on the whole node: two tenants with metadata-heavy vectors reach it quickly.
    server = await startServer({ env: { AGENTBOX_VECTOR_MEMORY_MB: "2", AGENTBOX_WARM_POOL: "0" } });
    admin = client({ url: server.url, key: server.adminKey });
    a = await keyFor("vq-a");
    b = await keyFor("vq-b");
  });
  after(async () => {
    await server?.dispose();
  });

  test("the admin API sets and shows the vector quotas; the CLI does too", async () => {
    const fresh = await admin<TenantJson>("GET", "/v1/admin/tenants/vq-never");
    assert.equal(fresh.body.quotas.max_vector_indexes, null);
    assert.equal(fresh.body.quotas.max_vectors, null);
    assert.equal(fresh.body.quotas.vector_storage_mb, null);
    assert.equal(fresh.body.effective.max_vector_indexes, 100, "the default");
    assert.equal(fresh.body.effective.vector_storage_mb, 16, "half the node's vector memory, at least 16 MiB");
    assert.ok(Number.isInteger(fresh.body.effective.max_vectors) && fresh.body.effective.max_vectors >= 10_000);

    const put = await admin<TenantJson>("PUT", "/v1/admin/tenants/vq-a", { max_vector_indexes: 1, max_vectors: 5, vector_storage_mb: 1 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const got = await admin<TenantJson>("GET", "/v1/admin/tenants/vq-a");
    for (const t of [put.body, got.body]) {
      assert.equal(t.quotas.max_vector_indexes, 1);
      assert.equal(t.quotas.max_vectors, 5);
      assert.equal(t.quotas.vector_storage_mb, 1);
      assert.equal(t.effective.max_vectors, 5);
    }
    assertError(await admin("PUT", "/v1/admin/tenants/vq-a", { max_vectors: -1 }), 400, "invalid_request");

    const env = { AGENTBOX_URL: server.url, AGENTBOX_ADMIN_KEY: server.adminKey };
    const set = cli(server.dataDir, ["tenants", "set", "vq-cli", "--max-vectors", "7", "--vector-storage-mb", "3", "--json"], env);
    assert.equal(set.status, 0, set.stderr);
    const shown = JSON.parse(set.stdout) as TenantJson;
    assert.equal(shown.quotas.max_vectors, 7);
    assert.equal(shown.quotas.vector_storage_mb, 3);
    const text = cli(server.dataDir, ["tenants", "get", "vq-cli"], env);
    assert.match(text.stdout, /max_vector_indexes\s+100\s+\(default\)/);
    assert.match(text.stdout, /max_vectors\s+7\s+\(set\)/);
    const reset = cli(server.dataDir, ["tenants", "set", "vq-cli", "--max-vectors", "default", "--json"], env);
    assert.equal((JSON.parse(reset.stdout) as TenantJson).quotas.max_vectors, null);
  });

  test("max_vector_indexes: one index too many is 429; another tenant is unaffected; deleting frees it", async () => {
    ok(await a("POST", "/v1/vectors/indexes", { name: "a1", dimension: 4 }));
    refused(await a("POST", "/v1/vectors/indexes", { name: "a2", dimension: 4 }), 429, "quota_exceeded");
    assert.equal((await a<{ indexes: unknown[] }>("GET", "/v1/vectors/indexes")).body.indexes.length, 1, "nothing created");
    ok(await b("POST", "/v1/vectors/indexes", { name: "b1", dimension: 4 }));
    ok(await b("POST", "/v1/vectors/indexes", { name: "b2", dimension: 4 }));
    ok(await a("DELETE", "/v1/vectors/indexes/a1"));
    ok(await a("POST", "/v1/vectors/indexes", { name: "a2", dimension: 4 }));
  });

  test("max_vectors: a batch past it is 429 and keeps nothing; replacements are free; deletes free quota", async () => {
    const up = (vectors: unknown[]) => a("POST", "/v1/vectors/a2/upsert", { vectors });
    ok(await up(["v1", "v2", "v3", "v4"].map((id) => vec(id))));
    // Two new ones: six, over five. The first of the batch would have fitted: nothing of it is kept.
    refused(await up([vec("v5"), vec("v6")]), 429, "quota_exceeded");
    assert.deepEqual(await fetchIds(a, "a2", ["v5", "v6"]), []);
    assert.equal(await count(a, "a2"), 4);
    // A replacement and one new vector: five.
    ok(await up([vec("v1", { k: 1 }), vec("v5")]));
    refused(await up([vec("v6")]), 429, "quota_exceeded");
    ok(await a("POST", "/v1/vectors/a2/delete", { vector_ids: ["v1", "v2"] }));
    ok(await up([vec("v6"), vec("v7")]));
    assert.equal(await count(a, "a2"), 5);
  });

  test("vector_storage_mb: metadata bytes count; a batch past it is 429 and keeps nothing; another tenant is unaffected", async () => {
    // A larger vector count, applied at once: the bytes are now the limit (1 MiB, ~26 vectors of 39 KB).
    ok(await admin("PUT", "/v1/admin/tenants/vq-a", { max_vectors: 1000 }));
    const batch = (n: number, from: number) => Array.from({ length: n }, (_, i) => vec(`big${from + i}`, BIG));
    ok(await a("POST", "/v1/vectors/a2/upsert", { vectors: batch(10, 0) }));
    ok(await a("POST", "/v1/vectors/a2/upsert", { vectors: batch(10, 10) }));
    const before = await count(a, "a2");
    refused(await a("POST", "/v1/vectors/a2/upsert", { vectors: batch(10, 20) }), 429, "quota_exceeded");
    assert.equal(await count(a, "a2"), before);
    assert.deepEqual(await fetchIds(a, "a2", ["big20", "big25", "big29"]), []);
    const search = await a<{ hits: Array<{ id: string }> }>("POST", "/v1/vectors/a2/search", { vector: [1, 0.5, 0.25, 0.125], top_k: 100 });
    assert.equal(search.body.hits.length, before, "the refused batch is not searchable either");
    // 26 of these fit in 1 MiB (39,032 bytes each with their 16 bytes of embedding and their id), not 27.
    ok(await a("POST", "/v1/vectors/a2/upsert", { vectors: batch(6, 20) }));
    refused(await a("POST", "/v1/vectors/a2/upsert", { vectors: batch(1, 26) }), 429, "quota_exceeded");
    // Growing a small vector's metadata counts too.
    refused(await a("PUT", "/v1/vectors/a2/v3", { metadata: { ...BIG, n: 1 } }), 429, "quota_exceeded");
    assert.deepEqual((await a<{ metadata: unknown }>("GET", "/v1/vectors/a2/v3")).body.metadata, {}, "unchanged");
    // The other tenant writes the same batch.
    ok(await b("POST", "/v1/vectors/b1/upsert", { vectors: batch(10, 20) }));
    // Deleting frees bytes: the refused batch now fits.
    const del = await a<{ deleted_count: number }>("POST", "/v1/vectors/a2/delete", {
      vector_ids: Array.from({ length: 10 }, (_, i) => `big${i}`),
    });
    assert.equal(del.body.deleted_count, 10);
    ok(await a("POST", "/v1/vectors/a2/upsert", { vectors: batch(10, 26) }));
  });

  test("the node's vector memory: past AGENTBOX_VECTOR_MEMORY_MB upserts are 503 at_capacity; deleting frees it", async () => {
    // vq-a holds ~1 MB, vq-b ~0.4 MB of the node's 2 MiB; vq-b's own quota (16 MiB) is far away.
    const batch = (n: number, from: number) => Array.from({ length: n }, (_, i) => vec(`n${from + i}`, BIG));
    let refusedAt = -1;
    for (let i = 0; i < 10; i++) {
      const res = await b("POST", "/v1/vectors/b2/upsert", { vectors: batch(5, i * 5) });
      if (res.status === 200) continue;
      refused(res, 503, "at_capacity");
      refusedAt = i;
      break;
    }
    assert.ok(refusedAt > 0, "some batches fit, then the node is full");
    assert.deepEqual(await fetchIds(b, "b2", [`n${refusedAt * 5}`]), [], "nothing of the refused batch");
    // A write that adds no bytes still passes; deletes free the node.
    ok(await b("POST", "/v1/vectors/b2/upsert", { vectors: [vec("n0", BIG)] }));
    ok(await b("DELETE", "/v1/vectors/indexes/b1"));
    ok(await b("POST", "/v1/vectors/b2/upsert", { vectors: batch(5, refusedAt * 5) }));
  });
});
