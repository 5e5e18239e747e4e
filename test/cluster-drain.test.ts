// A drain moves a node's sandboxes to the other executors by snapshot (a private Redis, a shared
// SQLite file, a real S3 server on loopback; an API-only node and two executors): the drained node
// leaves within seconds instead of waiting for its sandboxes to end, and each sandbox answers
// through the API node under its own id, with its files, from the other executor. A running one
// runs again at once (its kernel state lost, as its `resumed` event says), a paused one stays
// paused until resumed; each move's events are announced once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createSandbox, type EventBody, pythonStdout, sandboxEvents } from "./helpers/api.js";
import { untilExecutorsUp } from "./helpers/cluster.js";
import { useClusterRig } from "./helpers/cluster-s3.js";
import { until } from "./helpers/leftovers.js";
import { client, type TestServer } from "./helpers/server.js";

const LEASE_MS = 3000;
const BUCKET = "agentbox-drain";

const rig = useClusterRig(BUCKET, LEASE_MS);

interface NodeBody {
  id: string;
  state: string;
  live_sandboxes: number;
  moved_sandboxes: number;
  remaining_sandboxes: number;
}

async function nodeOf(via: TestServer, id: string): Promise<NodeBody | undefined> {
  const res = await client({ url: via.url, key: rig.cluster.adminKey })<{ nodes: NodeBody[] }>("GET", "/v1/admin/nodes");
  return res.body.nodes?.find((n) => n.id === id);
}

test("a drained node's sandboxes move to another executor and answer there under their own ids", async () => {
  // Executor 1 alone first, so that every sandbox is its own (created through it: it places them on itself).
  const e1 = await rig.cluster.node("node-1", "executor", rig.s3.env);
  const direct1 = client({ url: e1.url, key: rig.cluster.key });
  const running: string[] = [];
  for (const n of [1, 2]) {
    const id = await createSandbox(direct1);
    await pythonStdout(direct1, id, `open('/home/user/kept.txt', 'w').write('written before the drain ${n}')\nx = ${n}`);
    assert.equal(await pythonStdout(direct1, id, "print(x)"), `${n}\n`);
    running.push(id);
  }
  const paused = await createSandbox(direct1);
  await pythonStdout(direct1, paused, "open('/home/user/kept.txt', 'w').write('paused before the drain')");
  assert.equal((await direct1("POST", `/v1/agents/sandboxes/${paused}/pause`)).status, 200);
  for (const id of [...running, paused]) assert.equal(await rig.ownerOf(id), "node-1");
  const epoch1 = (await rig.redis.hget("abx:node:node-1", "epoch")) ?? "";

  // Then the API node and executor 2, together (the shared records exist already); executor 2 with
  // no warm pool, which a moved sandbox does not use (it starts from its snapshot).
  const [api, e2] = await Promise.all([
    rig.cluster.node("node-api", "api", rig.s3.env),
    rig.cluster.node("node-2", "executor", { ...rig.s3.env, AGENTBOX_WARM_POOL: "0" }),
  ]);
  const call = client({ url: api.url, key: rig.cluster.key });
  await untilExecutorsUp(api, rig.cluster.adminKey, 2);
  // Node 1 sees node 2 up too (asking for the list renews its view).
  await until("node 1 sees node 2", 30_000, async () => ((await nodeOf(e1, "node-2"))?.state === "up" ? true : undefined));

  const drained = await client({ url: api.url, key: rig.cluster.adminKey })<NodeBody>("POST", "/v1/admin/nodes/node-1/drain");
  assert.equal(drained.status, 200, JSON.stringify(drained.body));
  assert.equal(drained.body.state, "draining");
  // The drain finishes by moving, not by waiting for the sandboxes to end (they would live for minutes).
  const gone = await until("node 1 drained", 60_000, async () => {
    const n = await nodeOf(api, "node-1");
    return n?.state === "drained" ? n : undefined;
  });
  assert.equal(gone.moved_sandboxes, 3, JSON.stringify(gone));
  assert.equal(gone.remaining_sandboxes, 0, JSON.stringify(gone));
  assert.equal(gone.live_sandboxes, 0, JSON.stringify(gone));
  // Node 1 holds none: no route, nothing under its epoch; node 2 owns them all.
  assert.equal(await rig.redis.scard(`abx:owned:node-1:${epoch1}`), 0);
  for (const id of [...running, paused]) assert.equal(await rig.ownerOf(id), "node-2", id);
  assert.equal((await nodeOf(api, "node-2"))?.state, "up");

  for (const [n, id] of running.entries()) {
    const record = await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`);
    assert.equal(record.status, 200, JSON.stringify(record.body));
    assert.equal(record.body.status, "running");
    // Its files came along; its processes did not (a hibernated sandbox's kernel state is lost).
    assert.equal(await pythonStdout(call, id, "print(open('/home/user/kept.txt').read())"), `written before the drain ${n + 1}\n`);
    assert.equal(await pythonStdout(call, id, "print('x' in globals())"), "False\n");
    const events = (await sandboxEvents(call, id)).body;
    const drainEvents = events.filter((e: EventBody) => e.detail.reason === "drain").map((e: EventBody) => e.type);
    assert.deepEqual(drainEvents, ["paused", "resumed"], JSON.stringify(events));
    const resumed = events.find((e: EventBody) => e.type === "resumed");
    assert.equal(resumed?.detail.kernel_state, "lost");
    assert.equal(events.filter((e: EventBody) => e.type === "snapshotted").length, 1, JSON.stringify(events));
    assert.ok(!events.some((e: EventBody) => e.type === "ended"), JSON.stringify(events));
  }

  // The paused one is still paused, on node 2; a resume starts it there with its files.
  assert.equal((await call<{ status: string }>("GET", `/v1/agents/sandboxes/${paused}`)).body.status, "paused");
  const resumed = await call<{ status: string; kernel_state: string }>("POST", `/v1/agents/sandboxes/${paused}/resume`);
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
  assert.equal(resumed.body.kernel_state, "lost");
  assert.equal(await pythonStdout(call, paused, "print(open('/home/user/kept.txt').read())"), "paused before the drain\n");

  // Node 2 runs them: asked directly, it answers them itself.
  const direct = client({ url: e2.url, key: rig.cluster.key });
  for (const id of [...running, paused]) assert.equal(await pythonStdout(direct, id, "print('on node 2')"), "on node 2\n");
  // The snapshots the moves went through are gone with their resumes (their records first, then
  // their archives; the bucket is not listed here: s3rver fails on a listing that meets a delete).
  await until("the move snapshots removed", 10_000, async () => {
    const list = await call<{ snapshots: unknown[] }>("GET", "/v1/agents/snapshots");
    return list.body.snapshots.length === 0 ? true : undefined;
  });
  for (const id of [...running, paused]) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
});
