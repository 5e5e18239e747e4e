// A tenant's activity numbers in a cluster (a private Redis, a shared SQLite file, an API-only node
// and two executors): GET /v1/agents/stats and /v1/admin/stats through the API node, which runs no
// sandbox, sum what every node counts (its sandboxes, its runs); a node that does not answer in
// time (frozen) is left out and named in `missing_nodes`, and the answer still comes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Redis } from "ioredis";
import { createSandbox } from "./helpers/api.js";
import { startCluster, type TestCluster, untilExecutorsUp } from "./helpers/cluster.js";
import { client, type TestServer } from "./helpers/server.js";

interface Stats {
  live_sandboxes: number;
  runs_per_second: number;
  series: { runs: number; errors: number; live_sandboxes: number }[];
  runs_by_language: { language: string; runs: number; errors: number }[];
  tenants?: { tenant_id: string; live_sandboxes: number; runs: number; errors: number }[];
  missing_nodes?: string[];
}

let cluster: TestCluster;
let redis: Redis;
let api: TestServer;
const executors = new Map<string, TestServer>();

before(async () => {
  // Long leases: a node frozen for a moment here is slow, not lost.
  cluster = await startCluster({ leaseMs: 15_000 });
  redis = new Redis(cluster.redis.url);
  // Generous, so that a node slow on a loaded machine is not taken for one that does not answer.
  api = await cluster.node("api", "api", { AGENTBOX_CLUSTER_STATS_TIMEOUT_MS: "10000" });
  for (const id of ["exec-1", "exec-2"]) executors.set(id, await cluster.node(id, "executor"));
  await untilExecutorsUp(api, cluster.adminKey, 2);
});

after(async () => {
  redis?.disconnect();
  await cluster?.dispose();
});

test("stats through an API-only node sum every node's; a node that does not answer is named", async () => {
  const call = client({ url: api.url, key: cluster.key });
  const admin = client({ url: api.url, key: cluster.adminKey });
  const sandboxes = [await createSandbox(call), await createSandbox(call)];
  for (const [code, ok] of [
    ["1 + 1", true],
    ["undefined_name", false],
    ["2 + 2", true],
  ] as const) {
    const res = await call<{ error: unknown }>("POST", `/v1/agents/sandboxes/${sandboxes[0]}/code/run`, { language: "python", code });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.error === null, ok, JSON.stringify(res.body));
  }
  const bash = await call("POST", `/v1/agents/sandboxes/${sandboxes[1]}/code/run`, { language: "bash", code: "echo hi" });
  assert.equal(bash.status, 200, JSON.stringify(bash.body));

  const own = await call<Stats>("GET", "/v1/agents/stats");
  assert.equal(own.status, 200, JSON.stringify(own.body));
  assert.equal(own.body.live_sandboxes, 2);
  assert.deepEqual(own.body.runs_by_language, [
    { language: "python", runs: 3, errors: 1 },
    { language: "bash", runs: 1, errors: 0 },
  ]);
  assert.equal(own.body.missing_nodes, undefined, "every node answered");
  assert.equal(own.body.tenants, undefined);
  assert.ok(own.body.runs_per_second > 0, JSON.stringify(own.body));
  for (const p of own.body.series) assert.ok(p.live_sandboxes <= 2 && p.runs <= 4, JSON.stringify(p));

  const all = await admin<Stats>("GET", "/v1/admin/stats");
  assert.equal(all.status, 200, JSON.stringify(all.body));
  assert.equal(all.body.live_sandboxes, 2);
  assert.deepEqual(
    all.body.tenants?.map((t) => [t.live_sandboxes, t.runs, t.errors]),
    [[2, 4, 1]],
  );

  // The node of the first sandbox frozen: left out, named, and the answer comes all the same.
  const owner = (await redis.get(`abx:route:${sandboxes[0]}`))?.split(" ")[0];
  const frozen = executors.get(owner ?? "");
  assert.ok(frozen, `the owner of ${sandboxes[0]}: ${owner}`);
  frozen.process.kill("SIGSTOP");
  try {
    const partial = await call<Stats>("GET", "/v1/agents/stats");
    assert.equal(partial.status, 200, JSON.stringify(partial.body));
    assert.deepEqual(partial.body.missing_nodes, [owner]);
    const other = await redis.get(`abx:route:${sandboxes[1]}`);
    assert.equal(partial.body.live_sandboxes, other?.startsWith(`${owner} `) ? 0 : 1, JSON.stringify(partial.body));
    assert.ok(!partial.body.runs_by_language.some((l) => l.language === "python"), JSON.stringify(partial.body));
  } finally {
    frozen.process.kill("SIGCONT");
  }
  const again = await call<Stats>("GET", "/v1/agents/stats");
  assert.equal(again.body.live_sandboxes, 2);
  assert.equal(again.body.missing_nodes, undefined);
});
