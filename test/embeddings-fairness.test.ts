// End to end: the built-in embedding model is shared fairly between tenants. Tenant A sends two
// requests of 2,048 inputs (the most one request may carry); tenant B's one-word request is
// answered while A's first request is still being embedded, A's third big request is refused at
// once (429, its bound), and when A's client goes away the work queued for it is dropped (the jobs
// metrics and an empty queue show it) and B is served at once. The model is loaded at start, with
// no request. A request that cannot be embedded within its deadline is a 503 with Retry-After.
// Tenants and their keys are made through the admin API.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertError } from "./helpers/api.js";
import { eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

/** 2,048 different sentences of ~100 characters: ~64 jobs of the model, seconds of its time each request. */
const bigInput = (tag: string) =>
  Array.from(
    { length: 2048 },
    (_, i) => `${tag} sentence ${i}: the quick brown fox jumps over the lazy dog by the river bank at dawn, again and again.`,
  );

async function tenantKey(server: TestServer, tenantId: string): Promise<string> {
  const admin = client({ url: server.url, key: server.adminKey });
  const res = await admin<{ key: string; tenant_id: string }>("POST", "/v1/admin/keys", { name: tenantId, tenant_id: tenantId });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.tenant_id, tenantId);
  return res.body.key;
}

/** One sample of a Prometheus metric from GET /metrics (0 when absent). */
async function metric(server: TestServer, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(" ")[1]) : Number.NaN;
}

/** POST /v1/inference/embeddings with a key, cancellable; resolves with the status and when it came. */
function embed(server: TestServer, key: string, input: string | string[], signal?: AbortSignal) {
  return fetch(`${server.url}/v1/inference/embeddings`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ input }),
    signal,
  }).then(async (res) => ({
    status: res.status,
    headers: res.headers,
    body: (await res.json()) as Record<string, unknown>,
    at: Date.now(),
  }));
}

describe("embeddings shared between tenants", () => {
  let server: TestServer;
  let keyA: string;
  let keyB: string;

  before(async () => {
    // This file starts no sandbox: no warm pool (its two sandboxes would take ~1.5 s of CPU from the tests).
    server = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
    keyA = await tenantKey(server, "embed-heavy");
    keyB = await tenantKey(server, "embed-light");
  });
  after(async () => {
    await server?.dispose();
  });

  test("the model is loaded at start, before any request", async () => {
    // A bound, not a speed: two suites at once on two cores took over 60 s to load it (seconds quiet).
    assert.ok(
      await eventually(async () => (await metric(server, "agentbox_embedding_model_loaded")) === 1, 240_000, 200),
      "agentbox_embedding_model_loaded becomes 1 with no embedding request",
    );
  });

  test("one tenant's big batches do not hold up another's small request; a cancelled request's queued work is dropped", async () => {
    const abortA = new AbortController();
    const a1 = embed(server, keyA, bigInput("first"), abortA.signal);
    const a1Done: { at?: number } = {};
    a1.then(
      (r) => {
        a1Done.at = r.at;
      },
      () => {},
    );
    const a2 = embed(server, keyA, bigInput("second"), abortA.signal);
    // Both of A's requests are in the scheduler's queue (2 x 64 jobs, minus the one running).
    assert.ok(
      await eventually(async () => (await metric(server, "agentbox_embedding_jobs_queued")) >= 100, 30_000, 50),
      "A's jobs are queued",
    );

    // A has 4,096 inputs waiting or being embedded, its bound: a third request of the same size is
    // refused at once. (A small one may fit as soon as A's first job has ended and freed its 32: the
    // bound counts what is still to be done. The scheduler's unit tests hold a full bound exactly.)
    const third = await embed(server, keyA, bigInput("third"));
    assertError(third, 429, "rate_limited");
    assert.ok(Number(third.headers.get("retry-after")) >= 1);

    // B's one-word request is answered while A's first request is still being embedded.
    const sent = Date.now();
    const b = await embed(server, keyB, "hello");
    assert.equal(b.status, 200, JSON.stringify(b.body));
    assert.equal(((b.body.data as Array<{ embedding: number[] }>)[0]?.embedding ?? []).length, 512);
    assert.equal(a1Done.at, undefined, "A's first request is still running when B is answered");
    assert.ok(Date.now() - sent < 30_000, `B waited ${Date.now() - sent} ms`);
    assert.ok((await metric(server, "agentbox_embedding_jobs_queued")) >= 32, "A still has work queued");

    // A's client goes away: everything still queued for it is dropped, not embedded.
    abortA.abort();
    await assert.rejects(a1);
    await assert.rejects(a2);
    assert.ok(
      await eventually(async () => (await metric(server, "agentbox_embedding_jobs_queued")) === 0, 10_000, 50),
      "the queue is empty once A's client has gone",
    );
    assert.ok(
      await eventually(async () => (await metric(server, "agentbox_embedding_jobs_total", '{outcome="cancelled"}')) >= 100, 10_000, 50),
      "A's queued jobs are counted as cancelled",
    );
    const b2 = await embed(server, keyB, "world");
    assert.equal(b2.status, 200, JSON.stringify(b2.body));
    // A's bound is free again.
    const again = await embed(server, keyA, "back again");
    assert.equal(again.status, 200, JSON.stringify(again.body));
  });
});

describe("embedding deadline", () => {
  test("a request that cannot be embedded within the deadline is a 503 with Retry-After, and its work is dropped", async () => {
    const server = await startServer({ env: { AGENTBOX_WARM_POOL: "0", AGENTBOX_EMBEDDING_TIMEOUT_S: "1" } });
    try {
      const key = await tenantKey(server, "embed-deadline");
      const res = await embed(server, key, bigInput("late"));
      assertError(res, 503, "at_capacity");
      assert.ok(Number(res.headers.get("retry-after")) >= 1);
      assert.match(String((res.body.error as { message: string }).message), /within 1 s/);
      assert.ok(
        await eventually(async () => (await metric(server, "agentbox_embedding_jobs_queued")) === 0, 10_000, 50),
        "nothing of it stays queued",
      );
      assert.ok((await metric(server, "agentbox_embedding_jobs_total", '{outcome="expired"}')) >= 1);
    } finally {
      await server.dispose();
    }
  });
});
