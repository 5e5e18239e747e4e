// End to end with AGENTBOX_DATABASE_URL: the real service on a private PostgreSQL 15 keeps its keys,
// tenants, sandbox records (with their owner node), snapshots, network policies, events, webhooks
// and their deliveries and stored files' records there, not in its SQLite file; a second node on the
// same database, with a data directory of its own, serves the same keys and records and leaves the
// first node's running sandboxes (and their network policies) alone; the CLI's local commands write
// to the same database.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import pg from "pg";
import { createSandbox, type EventBody, pythonStdout, sandboxEvents } from "./helpers/api.js";
import { cli, eventually } from "./helpers/leftovers.js";
import { multipartUpload } from "./helpers/multipart.js";
import { startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

describe("durable state in PostgreSQL", () => {
  let postgres: TestPostgres;
  let databaseUrl: string;
  let sql: pg.Client;
  let nodeA: TestServer;
  let nodeB: TestServer | undefined;
  let receiver: http.Server;
  let received = 0;
  let receiverUrl: string;
  let key: string;
  let call: ReturnType<typeof client>;

  const env = (nodeId: string) => ({ AGENTBOX_DATABASE_URL: databaseUrl, AGENTBOX_NODE_ID: nodeId, AGENTBOX_WEBHOOK_ALLOW_PRIVATE: "1" });

  before(async () => {
    postgres = await startPostgres();
    databaseUrl = await postgres.createDatabase("agentbox");
    sql = new pg.Client({ connectionString: databaseUrl });
    await sql.connect();
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        received++;
        res.end("ok");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    nodeA = await startServer({ env: env("node-a") });
  });

  after(async () => {
    await nodeB?.dispose();
    await nodeA?.dispose();
    receiver?.close();
    await sql?.end();
    await postgres?.stop();
  });

  const rows = async <T extends Record<string, unknown>>(text: string, params: unknown[] = []) => (await sql.query<T>(text, params)).rows;

  let endedId: string;
  let webhookId: string;
  let snapshotId: string;

  test("keys, tenants, sandboxes, snapshots, network policies, files, events and webhooks: all in PostgreSQL, none in SQLite", async () => {
    const admin = client({ url: nodeA.url, key: nodeA.adminKey });
    const made = await admin<{ key: string; id: string }>("POST", "/v1/admin/keys", { name: "pg", tenant_id: "team-a" });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    key = made.body.key;
    call = client({ url: nodeA.url, key });
    assert.equal((await admin("PUT", "/v1/admin/tenants/team-a", { max_sandboxes: 5 })).status, 200);

    const hook = await call<{ id: string }>("POST", "/v1/agents/webhooks", { url: receiverUrl, events: ["created", "ended"] });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    webhookId = hook.body.id;

    endedId = await createSandbox(call, { metadata: { purpose: "pg" }, network: { allow_out: ["pypi.test"] } });
    assert.equal(await pythonStdout(call, endedId, "print(6 * 7)"), "42\n");
    const written = await call("POST", `/v1/agents/sandboxes/${endedId}/files/write`, { path: "note.txt", content: "kept" });
    assert.equal(written.status, 200, JSON.stringify(written.body));
    const read = await call<{ content: string }>("POST", `/v1/agents/sandboxes/${endedId}/files/read`, { path: "note.txt" });
    assert.equal(read.body.content, "kept");
    const upload = await multipartUpload({
      port: nodeA.port,
      path: "/v1/files",
      key,
      before: { purpose: "assistants" },
      file: { filename: "a.txt", size: 5, chunks: [Buffer.from("hello")] },
    });
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    const snapshot = await call<{ snapshot_id: string }>("POST", `/v1/agents/sandboxes/${endedId}/snapshots`);
    assert.equal(snapshot.status, 201, JSON.stringify(snapshot.body));
    snapshotId = snapshot.body.snapshot_id;
    const policies = await rows<{ tenant_id: string; policy: string }>(
      "SELECT tenant_id, policy FROM sandbox_network WHERE sandbox_id = $1",
      [endedId],
    );
    assert.deepEqual(
      policies.map((r) => [r.tenant_id, (JSON.parse(r.policy) as { allowOut: string[] }).allowOut]),
      [["team-a", ["pypi.test"]]],
    );
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${endedId}`)).status, 200);
    const events = await sandboxEvents(call, endedId);
    assert.deepEqual(
      events.body.map((e: EventBody) => e.type),
      ["created", "snapshotted", "ended"],
    );
    assert.ok(await eventually(() => received >= 2, 15_000), "both webhook deliveries arrived");

    // What the service acknowledged is in PostgreSQL.
    assert.deepEqual(await rows("SELECT tenant_id, name FROM api_keys WHERE id = $1", [made.body.id]), [
      { tenant_id: "team-a", name: "pg" },
    ]);
    assert.deepEqual(await rows("SELECT max_sandboxes FROM tenants WHERE id = 'team-a'"), [{ max_sandboxes: 5 }]);
    assert.deepEqual(await rows("SELECT tenant_id, status, node_id FROM sandboxes WHERE id = $1", [endedId]), [
      { tenant_id: "team-a", status: "terminated", node_id: "node-a" },
    ]);
    assert.deepEqual(
      (await rows<{ type: string }>("SELECT type FROM sandbox_events WHERE sandbox_id = $1 ORDER BY id", [endedId])).map((r) => r.type),
      ["created", "snapshotted", "ended"],
    );
    assert.deepEqual(await rows("SELECT sandbox_id, kind FROM snapshots WHERE id = $1", [snapshotId]), [
      { sandbox_id: endedId, kind: "manual" },
    ]);
    assert.deepEqual(await rows("SELECT filename, bytes::int AS bytes FROM stored_files WHERE tenant_id = 'team-a'"), [
      { filename: "a.txt", bytes: 5 },
    ]);
    assert.ok(
      await eventually(
        async () =>
          (await rows("SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1 AND state = 'delivered'", [webhookId])).length === 2,
        10_000,
      ),
      "both deliveries recorded as delivered",
    );
    const areas = (await rows<{ area: string }>("SELECT DISTINCT area FROM schema_migrations ORDER BY area")).map((r) => r.area);
    for (const area of [
      "deployments",
      "events",
      "files",
      "keys",
      "network",
      "sandboxes",
      "snapshots",
      "templates",
      "tenants",
      "usage",
      "vectors",
      "webhooks",
    ])
      assert.ok(areas.includes(area), `${area} migrated (${areas.join(", ")})`);

    // ... and not in the node's SQLite file.
    const local = new Database(path.join(nodeA.dataDir, "agentbox.db"), { readonly: true });
    try {
      for (const table of ["api_keys", "sandboxes"])
        assert.equal((local.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n, 0, `${table} empty in SQLite`);
    } finally {
      local.close();
    }
  });

  test("a second node on the same database serves the same keys and records, and leaves the first node's sandboxes running", async () => {
    const liveId = await createSandbox(call, { network: { allow_out: ["pypi.test"] } });
    const policyOf = (id: string) => rows("SELECT tenant_id, policy FROM sandbox_network WHERE sandbox_id = $1", [id]);
    const livePolicy = await policyOf(liveId);
    assert.equal(livePolicy.length, 1, "node A stored the live sandbox's network policy");
    nodeB = await startServer({ env: env("node-b") });
    const callB = client({ url: nodeB.url, key });

    // The key made through node A works on node B; the records and events it wrote are there.
    const ended = await callB<{ status: string; metadata: Record<string, unknown> }>("GET", `/v1/agents/sandboxes/${endedId}`);
    assert.equal(ended.status, 200, JSON.stringify(ended.body));
    assert.deepEqual([ended.body.status, ended.body.metadata], ["terminated", { purpose: "pg" }]);
    assert.deepEqual(
      (await sandboxEvents(callB, endedId)).body.map((e) => e.type),
      ["created", "snapshotted", "ended"],
    );
    const files = await callB<{ data: { filename: string }[] }>("GET", "/v1/files");
    assert.deepEqual(
      files.body.data.map((f) => f.filename),
      ["a.txt"],
    );
    const snapshots = await callB<{ snapshots: { snapshot_id: string }[] }>("GET", "/v1/agents/snapshots");
    assert.deepEqual(
      snapshots.body.snapshots.map((s) => s.snapshot_id),
      [snapshotId],
    );
    const hooks = await callB<{ webhooks: { id: string }[] }>("GET", "/v1/agents/webhooks");
    assert.deepEqual(
      hooks.body.webhooks.map((h) => h.id),
      [webhookId],
    );

    // Node B's start re-adopted or ended only its own sandboxes (none): node A's live one is not
    // taken over by B, and still runs on A.
    const metricsB = await (await fetch(`${nodeB.url}/metrics`)).text();
    assert.match(metricsB, /^agentbox_live_sandboxes 0$/m, "node B runs no sandbox");
    assert.deepEqual(await rows("SELECT status, node_id FROM sandboxes WHERE id = $1", [liveId]), [
      { status: "running", node_id: "node-a" },
    ]);
    // ... nor its network policy: node B's start sweeps only the policies of sandboxes that ended
    // or were its own, and node A needs this one to give the sandbox its policy back when it restarts.
    assert.deepEqual(await policyOf(liveId), livePolicy);
    assert.equal(await pythonStdout(call, liveId, "print('still here')"), "still here\n");
    assert.deepEqual(
      (await sandboxEvents(call, liveId)).body.map((e) => e.type),
      ["created"],
    );
  });

  test("template records in PostgreSQL: a template saved on node A is node B's to list, and B refuses its sandboxes (its files are on A)", async () => {
    assert.ok(nodeB);
    const callB = client({ url: nodeB.url, key });
    const boxId = await createSandbox(call);
    assert.equal((await call("POST", `/v1/agents/sandboxes/${boxId}/files/write`, { path: "kept.txt", content: "from A" })).status, 200);
    const saved = await call<{ id: string }>("POST", `/v1/agents/sandboxes/${boxId}/template`, { name: "saved-on-a" });
    assert.equal(saved.status, 201, JSON.stringify(saved.body));
    assert.deepEqual(await rows("SELECT name, state FROM templates WHERE id = $1", [saved.body.id]), [
      { name: "saved-on-a", state: "ready" },
    ]);
    // The name is taken for the tenant on every node.
    const again = await callB("POST", `/v1/agents/sandboxes/${boxId}/template`, { name: "saved-on-a" });
    assert.equal(again.status, 409, JSON.stringify(again.body));
    const listed = await callB<{ templates: { id: string }[] }>("GET", "/v1/agents/templates");
    const ids = listed.body.templates.map((t) => t.id);
    assert.ok(ids.includes(saved.body.id), JSON.stringify(listed.body));
    // Its sandboxes start on A, with the saved files; B says clearly that it cannot start one.
    const fromA = await createSandbox(call, { template: saved.body.id });
    const read = await call<{ content: string }>("POST", `/v1/agents/sandboxes/${fromA}/files/read`, { path: "kept.txt" });
    assert.equal(read.body.content, "from A");
    const onB = await callB<{ error: { code: string } }>("POST", "/v1/agents/sandboxes", { template: saved.body.id });
    assert.equal(onB.status, 503, JSON.stringify(onB.body));
    assert.equal(onB.body.error.code, "node_unavailable");
    for (const id of [fromA, boxId]) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });

  test("vector records in PostgreSQL: each node sees the other's writes, and answers the same searches once the node that wrote them is killed", async () => {
    assert.ok(nodeB);
    const callB = client({ url: nodeB.url, key });
    type Hit = { id: string; score: number; metadata?: Record<string, unknown> };
    const made = await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "docs", dimension: 4, metric: "cosine" });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const base = `/v1/vectors/${made.body.id}`;
    const vectors = Array.from({ length: 60 }, (_, i) => ({
      id: `v${i}`,
      embedding: [Math.cos(i), Math.sin(i), (i % 7) / 7, 1],
      metadata: { g: i % 3 },
    }));
    assert.equal((await call("POST", `${base}/batch`, { vectors })).status, 200);
    const queries = [
      { vector: [1, 0, 0, 1], top_k: 5 },
      { vector: [0, 1, 0.5, 1], top_k: 10, filter: { g: 1 } },
      { vector: [-1, 0.2, 1, 0], top_k: 3, include_values: true },
    ];
    const answers = async (c: typeof call) =>
      Promise.all(
        queries.map(async (q) => {
          const res = await c<{ hits: Hit[] }>("POST", `${base}/search`, q);
          assert.equal(res.status, 200, JSON.stringify(res.body));
          return res.body.hits.map((h) => [h.id, Math.round(h.score * 1e5), h.metadata]);
        }),
      );
    const onA = await answers(call);
    assert.equal(onA[0]?.length, 5);
    // Node B was running before the index existed: it finds it, by name too, and answers the same.
    assert.equal((await callB<{ id: string }>("GET", "/v1/vectors/indexes/docs")).body.id, made.body.id);
    assert.deepEqual(await answers(callB), onA);

    // A's later writes (a replacement, a delete, a metadata update) are what B's next search sees.
    await call("POST", `${base}/upsert`, { vectors: [{ id: "v1", embedding: [1, 0, 0, 1], metadata: { g: 1 } }] });
    assert.equal((await call("POST", `${base}/delete`, { vector_ids: ["v0", "v7"] })).status, 200);
    assert.equal((await call("PUT", `${base}/v2`, { metadata: { g: 9 } })).status, 200);
    const changed = await answers(call);
    assert.notDeepEqual(changed, onA);
    assert.deepEqual(await answers(callB), changed);
    // And B's writes are A's to see.
    await callB("POST", `${base}/upsert`, { vectors: [{ id: "fromB", embedding: [1, 0.01, 0, 1], metadata: { g: 1 } }] });
    const withB = await answers(call);
    assert.ok(
      withB[0]?.some((h) => h[0] === "fromB"),
      JSON.stringify(withB[0]),
    );
    assert.deepEqual(await answers(callB), withB);
    const rowsNow = await rows<{ n: number }>("SELECT COUNT(*)::int AS n FROM vectors WHERE index_id = $1", [made.body.id]);
    assert.deepEqual(rowsNow, [{ n: 59 }]);

    // The node that wrote and served them dies without a word: the other answers the same searches
    // from the records in PostgreSQL (nothing acknowledged was only in A's memory or files).
    await nodeA.crash();
    assert.deepEqual(await answers(callB), withB);
    const listed = await callB<{ pagination: { total: number } }>("GET", `${base}/list`);
    assert.equal(listed.body.pagination.total, 59);
    nodeA = await startServer({ env: env("node-a"), dataDir: nodeA.dataDir, workspaceDir: nodeA.workspaceDir });
    call = client({ url: nodeA.url, key });
  });

  test("the CLI's local commands write to PostgreSQL: a key bootstrapped there works on the nodes", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-cli-"));
    try {
      const res = cli(dir, ["keys", "bootstrap", "--name", "from-cli", "--tenant", "team-c", "--json"], {
        AGENTBOX_DATABASE_URL: databaseUrl,
      });
      assert.equal(res.status, 0, res.stderr);
      const made = JSON.parse(res.stdout) as { key: string; id: string };
      assert.deepEqual(await rows("SELECT tenant_id FROM api_keys WHERE id = $1", [made.id]), [{ tenant_id: "team-c" }]);
      const listed = await client({ url: nodeA.url, key: made.key })("GET", "/v1/agents/sandboxes");
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
