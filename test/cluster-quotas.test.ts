// A tenant's quotas over a cluster: two executors sharing one SQLite database file and a private
// Redis. max_sandboxes: creates placed on each node in turn, and at once on both, get exactly the
// quota together, then 429 quota_exceeded on both nodes; a sandbox ended on one node frees its
// place for a create on the other. Stored bytes: a file stored through one node counts on the
// other, and its deletion gives the room back there. Executions at once: runs held on one node
// count against the tenant's max_concurrent_runs on the other. (A key's per-minute rate limit
// across nodes: test/cluster.test.ts.)
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { sign } from "../src/cluster/channel-auth.js";
import { assertError } from "./helpers/api.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { multipartUpload } from "./helpers/multipart.js";
import { client, type TestServer } from "./helpers/server.js";

const QUOTA = 3;
const TENANT = "t-quota";
const CREATE = "/v1/agents/sandboxes";
/** The tenant's stored bytes (files and snapshots), MiB: two files of FILE_BYTES do not fit. */
const FILES_MB = 1;
const FILE_BYTES = 600 * 1024;
let cluster: TestCluster;
let b: TestServer;
let c: TestServer;
let key: string;

const call = (node: TestServer) => client({ url: node.url, key });

/**
 * A create sent to `node` as the node that placed it there sends it (signed with the cluster's
 * secret): made on `node`, not placed again, so the test decides which node each sandbox runs on.
 */
const createOn = (node: TestServer) =>
  call(node)<{ sandbox_id: string }>("POST", CREATE, {}, sign(cluster.secret, "placer", "POST", CREATE));

/** Sandboxes the node runs now, from its own metrics. */
async function liveOn(node: TestServer): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  const m = /^agentbox_live_sandboxes (\d+)$/m.exec(text);
  assert.ok(m, "agentbox_live_sandboxes in the node's metrics");
  return Number(m[1]);
}

async function refused(node: TestServer, placedHere: boolean): Promise<void> {
  const res = placedHere ? await createOn(node) : await call(node)("POST", CREATE, {});
  assertError(res, 429, "quota_exceeded");
  assert.ok(Number(res.headers.get("retry-after")) > 0, "Retry-After");
}

async function killAll(ids: string[]): Promise<void> {
  for (const id of ids) assert.equal((await call(b)("DELETE", `${CREATE}/${id}`)).status, 200);
  ids.length = 0;
}

before(async () => {
  cluster = await startCluster({ leaseMs: 3000 });
  // The default quota is the same: a node holds it even before it hears of the tenant's own.
  const env = {
    AGENTBOX_MAX_SANDBOXES_PER_TENANT: String(QUOTA),
    AGENTBOX_TENANT_FILES_MB: String(FILES_MB),
    AGENTBOX_WARM_POOL: "2",
  };
  b = await cluster.node("node-b", "executor", env);
  c = await cluster.node("node-c", "executor", env);
  const admin = client({ url: b.url, key: cluster.adminKey });
  const made = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "quota", tenant_id: TENANT });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  key = made.body.key;
  assert.equal((await admin("PUT", `/v1/admin/tenants/${TENANT}`, { max_sandboxes: QUOTA })).status, 200);
});

after(async () => {
  await cluster?.dispose();
});

test("creates on each node in turn: the tenant gets its quota over both nodes together, then 429 on both; an end on one frees a place on the other", async () => {
  const ids: string[] = [];
  for (let i = 0; i < QUOTA; i++) {
    const res = await createOn(i % 2 === 0 ? b : c);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    ids.push(res.body.sandbox_id);
  }
  assert.deepEqual([await liveOn(b), await liveOn(c)], [2, 1]);
  // Node C runs one sandbox of the tenant's, but the tenant has its three.
  for (const node of [b, c]) {
    await refused(node, true);
    await refused(node, false);
  }
  // One of node B's ends: node C may make one more, and then neither may.
  assert.equal((await call(c)("DELETE", `${CREATE}/${ids.shift()}`)).status, 200);
  const again = await createOn(c);
  assert.equal(again.status, 201, JSON.stringify(again.body));
  ids.push(again.body.sandbox_id);
  assert.deepEqual([await liveOn(b), await liveOn(c)], [1, 2]);
  await refused(b, true);
  await refused(c, true);
  await killAll(ids);
});

test("creates at once on both nodes: exactly the quota is made, the others are refused with 429", async () => {
  const settled = await Promise.all(Array.from({ length: 2 * QUOTA }, (_, i) => createOn(i % 2 === 0 ? b : c)));
  const ids = settled.filter((r) => r.status === 201).map((r) => r.body.sandbox_id);
  assert.equal(ids.length, QUOTA, JSON.stringify(settled.map((r) => [r.status, r.body])));
  for (const res of settled) if (res.status !== 201) assertError(res, 429, "quota_exceeded");
  assert.equal((await liveOn(b)) + (await liveOn(c)), QUOTA);
  const running = await call(c)<{ total: number }>("GET", `${CREATE}?state=running`);
  assert.equal(running.body.total, QUOTA, JSON.stringify(running.body));
  await killAll(ids);
});

test("stored bytes: a file stored through one node counts on the other; its deletion gives the room back there", async () => {
  const upload = (node: TestServer) =>
    multipartUpload({
      port: node.port,
      path: "/v1/files",
      key,
      before: { purpose: "assistants" },
      file: { filename: "part.bin", size: FILE_BYTES, chunks: [Buffer.alloc(FILE_BYTES, 7)] },
    });
  const first = await upload(b);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  // Node C has stored nothing for the tenant, but the tenant holds 600 KiB of its 1 MiB.
  assertError(await upload(c), 429, "quota_exceeded");
  const { id } = first.body as { id: string };
  assert.equal((await call(b)("DELETE", `/v1/files/${id}`)).status, 200);
  const again = await upload(c);
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assertError(await upload(b), 429, "quota_exceeded");
});

test("executions at once: runs held on one node count against the tenant's max_concurrent_runs on the other", async () => {
  const RUNS = 2;
  const admin = client({ url: b.url, key: cluster.adminKey });
  assert.equal((await admin("PUT", `/v1/admin/tenants/${TENANT}`, { max_concurrent_runs: RUNS })).status, 200);
  const ids: string[] = [];
  for (const node of [b, c]) {
    const res = await createOn(node);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    ids.push(res.body.sandbox_id);
  }
  const [onB, onC] = ids as [string, string];
  const run = (node: TestServer, id: string, code: string) =>
    call(node)<{ logs: { stdout: string }; error: string | null }>("POST", `${CREATE}/${id}/code/run`, { language: "python", code });
  // Warm node C's kernel first: its quick runs below then take a moment each.
  assert.equal((await run(c, onC, "print(1)")).status, 200);
  // The tenant's whole quota is held on node B (two runs in its one sandbox: one runs, one queues
  // for the kernel; both hold a slot). Node C hears of them within an exchange or two.
  const held = Array.from({ length: RUNS }, () => run(b, onB, "import time; time.sleep(6); print('held')"));
  let refusedOnC: Awaited<ReturnType<typeof run>> | undefined;
  for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
    const res = await run(c, onC, "print(2)");
    if (res.status === 429) {
      refusedOnC = res;
      break;
    }
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(refusedOnC, "a run on node C is refused while the tenant's quota is held on node B");
  assertError(refusedOnC, 429, "rate_limited");
  assert.ok(Number(refusedOnC.headers.get("retry-after")) > 0, "Retry-After");
  // Once node B's runs end, node C runs again.
  for (const res of await Promise.all(held)) assert.equal(res.status, 200, JSON.stringify(res.body));
  let again = await run(c, onC, "print(3)");
  for (const deadline = Date.now() + 5000; again.status === 429 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 100));
    again = await run(c, onC, "print(3)");
  }
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(again.body.logs.stdout, "3\n");
  assert.equal((await admin("PUT", `/v1/admin/tenants/${TENANT}`, { max_concurrent_runs: null })).status, 200);
  await killAll(ids);
});
