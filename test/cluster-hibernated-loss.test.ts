// A hibernated sandbox (paused past AGENTBOX_PAUSED_MAX_S: its files in a snapshot, its processes
// ended) whose node is lost, in a cluster whose snapshot archives are in S3 (a private Redis, a
// shared SQLite file, a real S3 server on loopback). With an executor up, that executor takes it
// over: it stays paused, and a resume through any node starts it there, under its own id, with
// its files. With no executor to take it (an API-only node handles the loss), it ends with reason
// `node_lost`, its snapshot is kept and its `ended` event names it (`snapshot_id`), so a sandbox
// started from it later has its files.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createSandbox, type EventBody, pythonStdout, sandboxEvents } from "./helpers/api.js";
import { useClusterRig } from "./helpers/cluster-s3.js";
import { until } from "./helpers/leftovers.js";
import { client, type TestServer } from "./helpers/server.js";

const LEASE_MS = 3000;
const BUCKET = "agentbox-hibernated";
const WRITE = "open('/home/user/kept.txt', 'w').write('hibernated on the lost node')";
const READ = "print(open('/home/user/kept.txt').read())";

const rig = useClusterRig(BUCKET, LEASE_MS);

/** A sandbox on `node` with a file written, paused until it hibernates; the hibernation snapshot's id. */
async function hibernated(node: TestServer): Promise<{ id: string; snapshotId: string }> {
  const call = client({ url: node.url, key: rig.cluster.key });
  const id = await createSandbox(call);
  await pythonStdout(call, id, WRITE);
  assert.equal((await call("POST", `/v1/agents/sandboxes/${id}/pause`)).status, 200);
  const snapshotId = await until("the sandbox hibernated", 60_000, async () => {
    const list = await call<{ snapshots: { snapshot_id: string; sandbox_id: string; kind: string }[] }>("GET", "/v1/agents/snapshots");
    return list.body.snapshots.find((s) => s.sandbox_id === id && s.kind === "hibernate")?.snapshot_id;
  });
  assert.ok((await rig.s3.keys()).includes(`snapshots/${snapshotId}`));
  return { id, snapshotId };
}

async function untilLost(via: TestServer, nodeId: string): Promise<void> {
  const admin = client({ url: via.url, key: rig.cluster.adminKey });
  await until(`${nodeId} lost`, LEASE_MS + 30_000, async () => {
    const nodes = await admin<{ nodes: { id: string; state: string }[] }>("GET", "/v1/admin/nodes");
    return nodes.body.nodes?.find((n) => n.id === nodeId)?.state === "lost" ? true : undefined;
  });
}

test("a lost node's hibernated sandbox is taken over by an executor and resumes there under its own id", async () => {
  // Node A alone first, so the sandbox is A's.
  const a = await rig.cluster.node("node-a", "both", { ...rig.s3.env, AGENTBOX_PAUSED_MAX_S: "1" });
  const { id } = await hibernated(a);
  assert.equal(await rig.ownerOf(id), "node-a");

  const b = await rig.cluster.node("node-b", "both", rig.s3.env);
  const callB = client({ url: b.url, key: rig.cluster.key });
  await a.crash();
  await untilLost(b, "node-a");
  await until("node B owns the sandbox", 30_000, async () => ((await rig.ownerOf(id)) === "node-b" ? true : undefined));
  const record = await callB<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`);
  assert.equal(record.body.status, "paused", JSON.stringify(record.body));
  assert.ok(!(await sandboxEvents(callB, id)).body.some((e: EventBody) => e.type === "ended"), "not ended");

  const resumed = await callB<{ status: string; kernel_state: string }>("POST", `/v1/agents/sandboxes/${id}/resume`);
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
  assert.equal(resumed.body.kernel_state, "lost");
  assert.equal(await pythonStdout(callB, id, READ), "hibernated on the lost node\n");
  assert.equal((await callB("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
});

test("with no executor to take it over, it ends as node_lost and names its kept snapshot", async () => {
  // The first test's node B gone first, so that node C is the only executor and runs the sandbox.
  await rig.cluster.nodes[1]?.crash();
  const c = await rig.cluster.node("node-c", "both", { ...rig.s3.env, AGENTBOX_PAUSED_MAX_S: "1" });
  await untilLost(c, "node-b");
  const { id, snapshotId } = await hibernated(c);
  assert.equal(await rig.ownerOf(id), "node-c");
  // An API-only node is left alone to handle the loss of the only executor.
  const api = await rig.cluster.node("node-api", "api", rig.s3.env);
  const callApi = client({ url: api.url, key: rig.cluster.key });
  await c.crash();
  await untilLost(api, "node-c");
  const ended = await until("the sandbox ended as lost", 30_000, async () =>
    (await sandboxEvents(callApi, id)).body.find?.((e: EventBody) => e.type === "ended"),
  );
  assert.equal(ended.reason, "node_lost", JSON.stringify(ended));
  assert.equal(ended.detail.snapshot_id, snapshotId, JSON.stringify(ended));

  // An executor again: the snapshot starts there, with the files the sandbox had.
  const d = await rig.cluster.node("node-d", "both", rig.s3.env);
  const callD = client({ url: d.url, key: rig.cluster.key });
  const restored = await callD<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { snapshot_id: snapshotId });
  assert.equal(restored.status, 201, JSON.stringify(restored.body));
  assert.equal(await pythonStdout(callD, restored.body.sandbox_id, READ), "hibernated on the lost node\n");
});
