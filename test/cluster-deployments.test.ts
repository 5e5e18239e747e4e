// Deployments across the nodes of a cluster (PostgreSQL, Redis, two executors): a deployment runs
// its replica on the node its create was placed on; when that node is killed (-9) the other
// executor takes it over, exactly once (a conditional claim of its row), starts its replica and
// answers its chat requests, and the deployment's record names the node that runs it now.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import pg from "pg";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { writeTinyLlama } from "./helpers/gguf.js";
import { startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { client, type TestServer } from "./helpers/server.js";
import { until } from "./helpers/leftovers.js";
import { sign } from "../src/cluster/channel-auth.js";

const LEASE_MS = 3000;

interface DeploymentItem {
  deployment_id: string;
  status: string;
  node_id: string | null;
  replicas: { replica_id: string; state: string; pid: number | null }[];
}

let postgres: TestPostgres;
let databaseUrl: string;
let cluster: TestCluster;
let modelDir: string;
let env: Record<string, string>;

before(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.createDatabase("agentbox");
  modelDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-model-"));
  const model = path.join(modelDir, "tiny.gguf");
  writeTinyLlama(model);
  fs.chmodSync(model, 0o644);
  // Each node has the model (as a pulled model would be on every executor).
  env = {
    AGENTBOX_MODEL: model,
    AGENTBOX_REPLICA_THREADS: "1",
    AGENTBOX_REPLICA_MEMORY_MB: "1024",
    AGENTBOX_REPLICA_HEALTH_INTERVAL_MS: "500",
  };
  cluster = await startCluster({ leaseMs: LEASE_MS, databaseUrl });
});

after(async () => {
  await cluster?.dispose();
  await postgres?.stop();
  if (modelDir) fs.rmSync(modelDir, { recursive: true, force: true });
});

const chat = (call: ReturnType<typeof client>, model: string) =>
  call<{ model: string; choices: { message: { content: string } }[] }>("POST", "/v1/inference/chat/completions", {
    model,
    messages: [{ role: "user", content: "hello world the cat" }],
    max_tokens: 4,
    temperature: 0,
  });

test("a killed node's deployment is taken over by the other executor, once, and answers through it", async (t) => {
  const nodes = new Map<string, TestServer>();
  for (const id of ["node-a", "node-b"]) nodes.set(id, await cluster.node(id, "both", env));
  const callA = client({ url: (nodes.get("node-a") as TestServer).url, key: cluster.key });

  // Placed by load on either node; answered through node A wherever it runs.
  const made = await callA<{ deployment_id: string }>("POST", "/v1/deployments/create", {
    deployment_name: "moving",
    model_name: "tiny",
    hw_type: "cpu",
    min_replicas: 1,
    max_replicas: 1,
  });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const id = made.body.deployment_id;
  const first = await until("the first replica", 60_000, async () => {
    const res = await callA<DeploymentItem>("GET", `/v1/deployments/${id}`);
    return res.body.status === "running" && res.body.replicas.some((r) => r.state === "ready") ? res.body : undefined;
  });
  const lost = first.node_id as string;
  assert.ok(nodes.has(lost), `runs on a node of the cluster, not on ${lost}`);
  const survivor = lost === "node-a" ? "node-b" : "node-a";
  const callSurvivor = client({ url: (nodes.get(survivor) as TestServer).url, key: cluster.key });
  assert.equal((await chat(callA, "moving")).status, 200);

  await (nodes.get(lost) as TestServer).crash();
  const killedAt = Date.now();
  const taken = await until("the replica on the surviving node", LEASE_MS + 60_000, async () => {
    const res = await callSurvivor<DeploymentItem>("GET", `/v1/deployments/${id}`);
    return res.status === 200 &&
      res.body.node_id === survivor &&
      res.body.status === "running" &&
      res.body.replicas.some((r) => r.state === "ready")
      ? res.body
      : undefined;
  });
  t.diagnostic(`running on ${survivor} ${Date.now() - killedAt} ms after ${lost} was killed (lease ${LEASE_MS} ms)`);
  assert.equal(taken.replicas.length, 1);
  const answer = await chat(callSurvivor, "moving");
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.model, "moving");
  assert.ok(typeof answer.body.choices[0]?.message.content === "string");

  // Once: the row names the survivor, and the list has the deployment once.
  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  try {
    const rows = (await sql.query<{ node_id: string }>("SELECT node_id FROM deployments WHERE id = $1", [id])).rows;
    assert.deepEqual(rows, [{ node_id: survivor }]);
  } finally {
    await sql.end();
  }
  const list = await callSurvivor<{ deployments: DeploymentItem[] }>("GET", "/v1/deployments/list");
  assert.deepEqual(
    list.body.deployments.map((d) => d.deployment_id),
    [id],
  );

  // The killed node started again under its old name does not start it a second time: asked as a
  // node would (not forwarded), it runs no replica of it; asked as a client, it forwards to the survivor.
  const again = await cluster.node(lost, "both", { ...env });
  await new Promise((r) => setTimeout(r, LEASE_MS));
  const route = `/v1/deployments/${id}`;
  const own = await client({ url: again.url, key: cluster.key })<DeploymentItem>(
    "GET",
    route,
    undefined,
    sign(cluster.secret, survivor, "GET", route),
  );
  assert.equal(own.status, 200, JSON.stringify(own.body));
  assert.deepEqual([own.body.node_id, own.body.replicas], [survivor, []]);
  const forwarded = await client({ url: again.url, key: cluster.key })<DeploymentItem>("GET", route);
  assert.equal(forwarded.body.node_id, survivor);
  assert.equal(forwarded.body.replicas.length, 1);
});
