// Snapshots across the nodes of a cluster (PostgreSQL, Redis, two executors, a real S3 server on
// loopback): a snapshot taken on node A is kept in the object store, not on A's disk; once A is
// killed (-9) a sandbox is started from it through node B, on B, with A's files byte for byte, and
// forked there; deleting the snapshot through B removes its archive from the store.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { Redis } from "ioredis";
import { createSandbox, pythonStdout } from "./helpers/api.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { until } from "./helpers/leftovers.js";
import { startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { startS3, type TestS3 } from "./helpers/s3.js";
import { client, type TestServer } from "./helpers/server.js";

const LEASE_MS = 3000;
const BUCKET = "agentbox-cluster";

let postgres: TestPostgres;
let cluster: TestCluster;
let redis: Redis;
let s3: TestS3;

before(async () => {
  postgres = await startPostgres();
  s3 = await startS3(BUCKET);
  cluster = await startCluster({ leaseMs: LEASE_MS, databaseUrl: await postgres.createDatabase("agentbox") });
  redis = new Redis(cluster.redis.url);
});

after(async () => {
  redis?.disconnect();
  await cluster?.dispose();
  await s3?.stop();
  await postgres?.stop();
});

/** Files of several sizes (one past S3's 5 MiB part, so the archive is a multipart upload), and their digest. */
const WRITE = `
import hashlib, os
os.makedirs('/home/user/work/deep', exist_ok=True)
open('/home/user/work/notes.txt', 'w').write('written on node A\\n')
data = os.urandom(6 * 1024 * 1024 + 123)
open('/home/user/work/deep/random.bin', 'wb').write(data)
print(hashlib.sha256(data).hexdigest())
`;
const READ = `
import hashlib
print(open('/home/user/work/notes.txt').read().strip())
print(hashlib.sha256(open('/home/user/work/deep/random.bin', 'rb').read()).hexdigest())
`;

const ownerOf = async (id: string) => (await redis.get(`abx:route:${id}`))?.split(" ")[0];

test("a snapshot taken on node A is started and forked on node B after A is killed", async () => {
  // Node A alone first, so the sandbox is A's.
  const a: TestServer = await cluster.node("node-a", "both", s3.env);
  const callA = client({ url: a.url, key: cluster.key });
  const source = await createSandbox(callA);
  assert.equal(await ownerOf(source), "node-a");
  const digest = (await pythonStdout(callA, source, WRITE)).trim();
  const snap = await callA<{ snapshot_id: string; sha256: string; size_bytes: number }>("POST", `/v1/agents/sandboxes/${source}/snapshots`);
  assert.equal(snap.status, 201, JSON.stringify(snap.body));
  const snapshotId = snap.body.snapshot_id;
  // In the object store, under its own prefix; nothing of it left on A's disk.
  assert.deepEqual(await s3.keys(), [`snapshots/${snapshotId}`]);
  const left = fs.readdirSync(path.join(a.dataDir, "snapshots")).filter((f) => f.includes(snapshotId.slice(5)));
  assert.deepEqual(left, [], "the archive is not kept on the node that wrote it");

  const b: TestServer = await cluster.node("node-b", "both", s3.env);
  const callB = client({ url: b.url, key: cluster.key });
  const adminB = client({ url: b.url, key: cluster.adminKey });
  await a.crash();
  await until("node A lost", LEASE_MS + 20_000, async () => {
    const nodes = await adminB<{ nodes: { id: string; state: string }[] }>("GET", "/v1/admin/nodes");
    return nodes.body.nodes?.find((n) => n.id === "node-a")?.state === "lost" ? true : undefined;
  });

  // Started from the snapshot through B, on B: A's files, byte for byte.
  const restored = await callB<{ sandbox_id: string; kernel_state: string }>("POST", "/v1/agents/sandboxes", {
    snapshot_id: snapshotId,
  });
  assert.equal(restored.status, 201, JSON.stringify(restored.body));
  assert.equal(restored.body.kernel_state, "lost");
  const copy = restored.body.sandbox_id;
  assert.equal(await ownerOf(copy), "node-b");
  assert.equal(await pythonStdout(callB, copy, READ), `written on node A\n${digest}\n`);

  // Forked on B: each copy has them too.
  const forked = await callB<{ sandboxes: { sandbox_id: string }[] }>("POST", `/v1/agents/sandboxes/${copy}/fork`, { count: 2 });
  assert.equal(forked.status, 201, JSON.stringify(forked.body));
  assert.equal(forked.body.sandboxes.length, 2);
  for (const s of forked.body.sandboxes) {
    assert.equal(await ownerOf(s.sandbox_id), "node-b");
    assert.equal(await pythonStdout(callB, s.sandbox_id, READ), `written on node A\n${digest}\n`);
  }

  // A second snapshot, taken on B, is in the store too; deleting snapshots through B removes their archives.
  const second = await callB<{ snapshot_id: string }>("POST", `/v1/agents/sandboxes/${copy}/snapshots`);
  assert.equal(second.status, 201, JSON.stringify(second.body));
  assert.deepEqual(await s3.keys(), [`snapshots/${snapshotId}`, `snapshots/${second.body.snapshot_id}`].sort());
  for (const id of [snapshotId, second.body.snapshot_id]) {
    assert.equal((await callB("DELETE", `/v1/agents/snapshots/${id}`)).status, 200);
  }
  assert.deepEqual(await s3.keys(), []);
});
