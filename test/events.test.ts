// End to end: a sandbox's lifecycle events (created, timeout_extended, ended with its reason and
// who asked), served for live and ended sandboxes of the caller's tenant only; the list's filters
// by state and metadata (AND-ed, paginated, validated); and the ends a restart of the service
// records (expired while it was down; could not be re-adopted).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError, createSandbox, type EventBody, SANDBOX_KEYS, sandboxEvents } from "./helpers/api.js";
import { createKey } from "./helpers/leftovers.js";
import { client, startServer, type TestServer, testCluster } from "./helpers/server.js";

let server: TestServer;
let call: ReturnType<typeof client>;

before(async () => {
  server = await startServer();
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

const events = (id: string, c = call) => sandboxEvents(c, id);

describe("sandbox events", () => {
  test("created, timeout_extended, ended (killed by api): in order, and still served after the end", async () => {
    const id = await createSandbox(call, { timeout: 120 });
    const extended = await call("POST", `/v1/agents/sandboxes/${id}/timeout`, { timeout: 600 });
    assert.equal(extended.status, 200);
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);

    const res = await events(id);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.map((e) => e.type),
      ["created", "timeout_extended", "ended"],
    );
    for (const e of res.body) {
      assert.deepEqual(Object.keys(e).sort(), ["at", "detail", "reason", "type"]);
      assert.ok(!Number.isNaN(Date.parse(e.at)), e.at);
    }
    const [created, ext, ended] = res.body as [EventBody, EventBody, EventBody];
    assert.equal(created.reason, null);
    assert.equal(ext.detail.timeout, 600);
    assert.equal(ext.detail.timeout_at, extended.body.timeout_at);
    assert.equal(ended.reason, "killed");
    assert.equal(ended.detail.by, "api");

    // The sandbox object keeps exactly its public keys; the status says how it ended.
    const got = await call<Record<string, unknown>>("GET", `/v1/agents/sandboxes/${id}`);
    assert.deepEqual(Object.keys(got.body).sort(), SANDBOX_KEYS);
    assert.equal(got.body.status, "terminated");
    assert.equal(got.body.ended_at, ended.at);
  });

  test("another tenant's sandbox has no events for the caller; an unknown one is 404", async () => {
    const id = await createSandbox(call);
    const other = client({ url: server.url, key: createKey(server.dataDir, "events-other").key });
    assertError(await events(id, other), 404, "sandbox_not_found");
    assertError(await events("no-such-sandbox"), 404, "sandbox_not_found");
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });
});

describe("list filters", () => {
  test("state and metadata (AND-ed), with pagination; bad filters are 400", async () => {
    const tenant = client({ url: server.url, key: createKey(server.dataDir, "filters").key });
    const a = await createSandbox(tenant, { metadata: { user: "abc", team: "x", n: 7 } });
    const b = await createSandbox(tenant, { metadata: { user: "abc", team: "y" } });
    const c = await createSandbox(tenant, { metadata: { user: "def" } });
    assert.equal((await tenant("DELETE", `/v1/agents/sandboxes/${b}`)).status, 200);

    type List = { sandboxes: { sandbox_id: string; status: string }[]; total: number };
    const ids = async (query: string) => {
      const res = await tenant<List>("GET", `/v1/agents/sandboxes?${query}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return { ids: res.body.sandboxes.map((s) => s.sandbox_id).sort(), total: res.body.total };
    };
    assert.deepEqual(await ids("metadata.user=abc"), { ids: [a, b].sort(), total: 2 });
    assert.deepEqual(await ids("state=running&metadata.user=abc"), { ids: [a], total: 1 });
    assert.deepEqual(await ids("state=terminated"), { ids: [b], total: 1 });
    assert.deepEqual(await ids("metadata.user=abc&metadata.team=y"), { ids: [b], total: 1 });
    assert.deepEqual(await ids("metadata.user=abc&metadata.team=z"), { ids: [], total: 0 });
    assert.deepEqual(await ids("metadata.n=7"), { ids: [a], total: 1 });
    assert.deepEqual(await ids("state=running"), { ids: [a, c].sort(), total: 2 });
    // Pagination is kept: one per page, the total counts them all.
    const first = await ids("state=running&limit=1&offset=0");
    const second = await ids("state=running&limit=1&offset=1");
    assert.equal(first.total, 2);
    assert.deepEqual([...first.ids, ...second.ids].sort(), [a, c].sort());
    // The other tenant sees none of them.
    const mine = await call<List>("GET", "/v1/agents/sandboxes?metadata.user=abc");
    assert.equal(mine.body.total, 0);

    // Paused is a state of its own (and the pause and resume are events).
    assert.equal((await tenant("POST", `/v1/agents/sandboxes/${a}/pause`)).status, 200);
    assert.deepEqual(await ids("state=paused"), { ids: [a], total: 1 });
    assert.deepEqual(await ids("state=running"), { ids: [c], total: 1 });
    assert.equal((await tenant("POST", `/v1/agents/sandboxes/${a}/resume`)).status, 200);
    assert.deepEqual(await ids("state=paused"), { ids: [], total: 0 });
    assert.deepEqual(
      (await events(a, tenant)).body.map((e) => e.type),
      ["created", "paused", "resumed"],
    );

    assertError(await tenant("GET", "/v1/agents/sandboxes?state=sleeping"), 400, "invalid_request");
    assertError(await tenant("GET", "/v1/agents/sandboxes?metadata.bad%20key=1"), 400, "invalid_request");
    assertError(await tenant("GET", "/v1/agents/sandboxes?metadata.user=a&metadata.user=b"), 400, "invalid_request");
    assertError(await tenant("GET", `/v1/agents/sandboxes?metadata.user=${"x".repeat(300)}`), 400, "invalid_request");
    await tenant("DELETE", `/v1/agents/sandboxes/${a}`);
    await tenant("DELETE", `/v1/agents/sandboxes/${c}`);
  });
});

// Not in a cluster: the sabotage below finds the sandbox's workspace in the one node's workspace dir.
describe("across a restart", { skip: testCluster && "reaches into one node's workspace dir" }, () => {
  test("expired while down: timed_out at its deadline; not re-adoptable: host_restart; the rest re-adopted", async () => {
    const short = (await call<{ sandbox_id: string; timeout_at: string }>("POST", "/v1/agents/sandboxes", { timeout: 2 })).body;
    const lost = await createSandbox(call, { timeout: 300 });
    const kept = await createSandbox(call, { timeout: 300 });
    await server.stop();
    // Sabotage: the workspace of `lost` becomes a plain file, so its sandbox cannot be started again.
    const dir = path.join(server.workspaceDir, lost);
    execFileSync("umount", ["-l", dir]);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.writeFileSync(dir, "not a workspace");
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(short.timeout_at) - Date.now() + 100)));
    server = await startServer({ dataDir: server.dataDir, key: server.key, workspaceDir: server.workspaceDir });
    call = client(server);

    const endOf = async (id: string) => (await events(id)).body.filter((e) => e.type === "ended");
    const [expired] = await endOf(short.sandbox_id);
    assert.equal(expired?.reason, "timed_out");
    assert.equal(expired?.detail.while_down, true);
    assert.equal(expired?.at, short.timeout_at);
    const [gone] = await endOf(lost);
    assert.equal(gone?.reason, "host_restart");
    assert.equal(typeof gone?.detail.message, "string");
    assert.equal((await call<{ status: string }>("GET", `/v1/agents/sandboxes/${lost}`)).body.status, "terminated");
    assert.deepEqual(await endOf(kept), []);
    assert.equal((await call<{ status: string }>("GET", `/v1/agents/sandboxes/${kept}`)).body.status, "running");
    await call("DELETE", `/v1/agents/sandboxes/${kept}`);
  });
});
