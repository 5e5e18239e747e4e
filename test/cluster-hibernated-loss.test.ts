// A hibernated sandbox (paused past AGENTBOX_PAUSED_MAX_S: its files in a snapshot, its processes
// ended) whose node is lost, in a cluster whose snapshot archives are in S3 (a private Redis, a
// shared SQLite file, a real S3 server on loopback): it ends with reason `node_lost` like the
// node's other sandboxes, but its `ended` event names its snapshot (`snapshot_id`), which is kept,
// and a sandbox started from it through another node has its files.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createSandbox, type EventBody, pythonStdout, sandboxEvents } from "./helpers/api.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { until } from "./helpers/leftovers.js";
import { startS3, type TestS3 } from "./helpers/s3.js";
import { client, type TestServer } from "./helpers/server.js";

const LEASE_MS = 3000;
const BUCKET = "agentbox-hibernated";

let cluster: TestCluster;
let s3: TestS3;

before(async () => {
  s3 = await startS3(BUCKET);
  cluster = await startCluster({ leaseMs: LEASE_MS });
});

after(async () => {
  await cluster?.dispose();
  await s3?.stop();
});

test("a lost node's hibernated sandbox names its snapshot in S3, which starts on another node with its files", async () => {
  // Node A alone first, so the sandbox is A's; paused for a second, it hibernates.
  const a: TestServer = await cluster.node("node-a", "both", { ...s3.env, AGENTBOX_PAUSED_MAX_S: "1" });
  const callA = client({ url: a.url, key: cluster.key });
  const id = await createSandbox(callA);
  await pythonStdout(callA, id, "open('/home/user/kept.txt', 'w').write('hibernated on node A')");
  assert.equal((await callA("POST", `/v1/agents/sandboxes/${id}/pause`)).status, 200);
  const snapshotId = await until("the sandbox hibernated", 60_000, async () => {
    const list = await callA<{ snapshots: { snapshot_id: string; sandbox_id: string; kind: string }[] }>("GET", "/v1/agents/snapshots");
    return list.body.snapshots.find((s) => s.sandbox_id === id && s.kind === "hibernate")?.snapshot_id;
  });
  assert.deepEqual(await s3.keys(), [`snapshots/${snapshotId}`]);

  const b: TestServer = await cluster.node("node-b", "both", s3.env);
  const callB = client({ url: b.url, key: cluster.key });
  await a.crash();
  const ended = await until("the sandbox ended as lost", LEASE_MS + 30_000, async () =>
    (await sandboxEvents(callB, id)).body.find?.((e: EventBody) => e.type === "ended"),
  );
  assert.equal(ended.reason, "node_lost", JSON.stringify(ended));
  assert.equal(ended.detail.snapshot_id, snapshotId, JSON.stringify(ended));

  // The snapshot is kept, and starts through B, on B, with the files it had on A.
  const restored = await callB<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { snapshot_id: snapshotId });
  assert.equal(restored.status, 201, JSON.stringify(restored.body));
  assert.equal(await pythonStdout(callB, restored.body.sandbox_id, "print(open('/home/user/kept.txt').read())"), "hibernated on node A\n");
});
