// A deployment's requests through any node of a cluster (an API-only node and two executors, as
// startClusterServer() runs them): a create through the API node is placed on an executor, and its
// status, chat completions (whole and streamed), embeddings, the list, the gateway's model list and
// its delete are answered through the API node and through the executor that does not run it,
// forwarded to the one that does; the executors' own model is listed and answered through the API
// node too. Executor 1 declares a GPU (AGENTBOX_NODE_GPUS), executor 2 none:
// a deployment asking for it is placed on executor 1, a second one is refused while it is held.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { writeTinyLlama } from "./helpers/gguf.js";
import { until } from "./helpers/leftovers.js";
import { client, type TestServer } from "./helpers/server.js";

interface DeploymentItem {
  deployment_id: string;
  deployment_name: string;
  status: string;
  node_id: string | null;
  replicas: { replica_id: string; state: string; pid: number | null }[];
}

let cluster: TestCluster;
let modelDir: string;
let api: TestServer;
const executors = new Map<string, TestServer>();

before(async () => {
  modelDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-model-"));
  const model = path.join(modelDir, "tiny.gguf");
  writeTinyLlama(model);
  fs.chmodSync(model, 0o644);
  // The executors have the model (as a pulled model would be on each); the API node runs none.
  const env = {
    AGENTBOX_MODEL: model,
    AGENTBOX_REPLICA_THREADS: "1",
    AGENTBOX_REPLICA_MEMORY_MB: "1024",
    AGENTBOX_REPLICA_HEALTH_INTERVAL_MS: "500",
  };
  // Generous: no node is meant to be lost here, also on a loaded machine.
  cluster = await startCluster({ leaseMs: 15_000 });
  api = await cluster.node("api", "api", { AGENTBOX_WARM_POOL: "0" });
  const gpus: Record<string, string> = { "exec-1": "1:Tesla T4", "exec-2": "none" };
  for (const id of ["exec-1", "exec-2"])
    executors.set(id, await cluster.node(id, "executor", { ...env, AGENTBOX_NODE_GPUS: gpus[id] as string }));
  // The API node's view of the cluster is a heartbeat old: a create placed before it sees an executor is a 503.
  await until("the API node sees both executors", 60_000, async () => {
    const res = await client({ url: api.url, key: cluster.adminKey })<{ nodes: { roles: string; state: string }[] }>(
      "GET",
      "/v1/admin/nodes",
    );
    return res.body.nodes.filter((n) => n.roles === "executor" && n.state === "up").length === 2 ? true : undefined;
  });
});

after(async () => {
  await cluster?.dispose();
  if (modelDir) fs.rmSync(modelDir, { recursive: true, force: true });
});

const chat = (url: string, model: string) =>
  client({ url, key: cluster.key })<{ model: string; choices: { message: { content: string } }[] }>(
    "POST",
    "/v1/inference/chat/completions",
    { model, messages: [{ role: "user", content: "hello world the cat" }], max_tokens: 4, temperature: 0 },
  );

test("a deployment created through the API node runs on an executor and answers through every node", async () => {
  const callApi = client({ url: api.url, key: cluster.key });
  const made = await callApi<{ deployment_id: string; status: string }>("POST", "/v1/deployments/create", {
    deployment_name: "everywhere",
    model_name: "tiny",
    hw_type: "cpu",
    min_replicas: 1,
    max_replicas: 1,
  });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  assert.equal(made.body.status, "creating");
  const id = made.body.deployment_id;

  // Its status through the API node is its node's own (forwarded: the replica and its state are there).
  const running = await until("the deployment running, seen through the API node", 60_000, async () => {
    const res = await callApi<DeploymentItem>("GET", `/v1/deployments/${id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.status === "running" && res.body.replicas.some((r) => r.state === "ready") ? res.body : undefined;
  });
  const runner = running.node_id as string;
  assert.ok(executors.has(runner), `placed on an executor, not on ${runner}`);
  assert.equal(running.replicas.length, 1);
  const other = [...executors.keys()].find((n) => n !== runner) as string;
  const otherUrl = (executors.get(other) as TestServer).url;
  const callOther = client({ url: otherUrl, key: cluster.key });

  // The executor that does not run it answers its status as the one that does.
  const seen = await callOther<DeploymentItem>("GET", `/v1/deployments/${id}`);
  assert.equal(seen.status, 200, JSON.stringify(seen.body));
  assert.equal(seen.body.node_id, runner);
  assert.deepEqual(
    seen.body.replicas.map((r) => [r.replica_id, r.state]),
    running.replicas.map((r) => [r.replica_id, "ready"]),
  );

  // The list is the cluster's, through any node.
  for (const url of [api.url, otherUrl]) {
    const list = await client({ url, key: cluster.key })<{ deployments: DeploymentItem[] }>("GET", "/v1/deployments/list");
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.deployments.map((d) => [d.deployment_id, d.deployment_name, d.node_id]),
      [[id, "everywhere", runner]],
    );
  }

  // Chat, whole, through the API node and through the other executor.
  for (const url of [api.url, otherUrl]) {
    const answer = await chat(url, "everywhere");
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.model, "everywhere");
    assert.equal(typeof answer.body.choices[0]?.message.content, "string");
  }

  // The gateway's model list names it once through every node (the API node runs no deployment).
  for (const url of [api.url, otherUrl, (executors.get(runner) as TestServer).url]) {
    const models = await client({ url, key: cluster.key })<{ data: { id: string; owned_by: string; capabilities: string[] }[] }>(
      "GET",
      "/v1/inference/models",
    );
    assert.equal(models.status, 200, JSON.stringify(models.body));
    const listed = models.body.data.filter((m) => m.id === "everywhere");
    assert.deepEqual(
      listed.map((m) => [m.owned_by, m.capabilities]),
      [["deployment", ["chat", "completions"]]],
      url,
    );
  }

  // The executors' own model (AGENTBOX_MODEL; the API node has none) is listed through the API node
  // once, and a completion naming it is answered by an executor.
  const listed = await callApi<{ data: { id: string }[] }>("GET", "/v1/inference/models");
  assert.deepEqual(listed.body.data.filter((m) => m.id === "tiny").length, 1, JSON.stringify(listed.body.data.map((m) => m.id)));
  const local = await chat(api.url, "tiny");
  assert.equal(local.status, 200, JSON.stringify(local.body));
  assert.equal(typeof local.body.choices[0]?.message.content, "string");

  // Embeddings naming it are answered by its node, as there: it is known, and it is no embedding model.
  for (const url of [api.url, otherUrl]) {
    const embed = await client({ url, key: cluster.key })<{ error: { code: string; message: string } }>(
      "POST",
      "/v1/inference/embeddings",
      { model: "everywhere", input: "hello" },
    );
    assert.equal(embed.status, 400, JSON.stringify(embed.body));
    assert.match(embed.body.error.message, /does not serve embeddings/);
  }

  // A forwarded completion counts once against the key's requests per minute (the forwarding node
  // counted it; the node that answers, whose RateLimit headers come back, does not count it again).
  const remaining = async () => {
    const answer = await chat(api.url, "everywhere");
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const left = answer.headers.get("ratelimit-remaining");
    assert.ok(left !== null, "the answer carries the key's RateLimit headers");
    return Number(left);
  };
  let counts: number[] = [];
  // Two in a row within one window (the window is a fixed minute: if it ended between them, again).
  for (let i = 0; i < 3 && !(counts.length === 2 && (counts[1] as number) <= (counts[0] as number)); i++)
    counts = [await remaining(), await remaining()];
  assert.equal((counts[0] as number) - (counts[1] as number), 1, `remaining ${counts.join(" then ")}`);

  // Chat, streamed, through the API node: the node's events as they come, to the end.
  const stream = await fetch(`${api.url}/v1/inference/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${cluster.key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "everywhere",
      messages: [{ role: "user", content: "hello world the cat" }],
      max_tokens: 4,
      temperature: 0,
      stream: true,
    }),
  });
  const text = await stream.text();
  assert.equal(stream.status, 200, text);
  assert.match(stream.headers.get("content-type") ?? "", /^text\/event-stream/);
  const data = text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice(6));
  assert.equal(data.at(-1), "[DONE]");
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as { object: string; model: string });
  assert.ok(chunks.length >= 1, text);
  for (const c of chunks) {
    assert.equal(c.object, "chat.completion.chunk");
    assert.equal(c.model, "everywhere");
  }

  // Deleted through the executor that does not run it: its node stops it, every node then says so.
  const deleted = await callOther<{ deployment_id: string; status: string }>("DELETE", `/v1/deployments/delete/${id}`);
  assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
  assert.equal(deleted.body.deployment_id, id);
  await until("the deployment gone, through the API node", 60_000, async () =>
    (await callApi("GET", `/v1/deployments/${id}`)).status === 404 ? true : undefined,
  );
  assert.equal((await callOther("GET", `/v1/deployments/${id}`)).status, 404);
  const gone = await chat(api.url, "everywhere");
  assert.equal(gone.status, 404, JSON.stringify(gone.body));
  assert.equal((gone.body as unknown as { error: { code: string } }).error.code, "model_not_found");
  assert.deepEqual((await callApi<{ deployments: DeploymentItem[] }>("GET", "/v1/deployments/list")).body.deployments, []);
});

test("a deployment asking for a GPU goes to the executor that has it free; then 503 while it is held, 400 for a GPU no node has", async () => {
  const admin = client({ url: api.url, key: cluster.adminKey });
  const callApi = client({ url: api.url, key: cluster.key });
  type Nodes = { nodes: { id: string; gpus: { model: string; count: number; free: number }[] }[] };
  const gpusOf = async () => Object.fromEntries((await admin<Nodes>("GET", "/v1/admin/nodes")).body.nodes.map((n) => [n.id, n.gpus]));
  const seen = await gpusOf();
  assert.deepEqual(seen["exec-1"], [{ model: "Tesla T4", count: 1, free: 1 }]);
  assert.deepEqual(seen["exec-2"], []);
  assert.deepEqual(seen.api, []);

  const body = (name: string, gpu = "nvidia-t4") => ({
    deployment_name: name,
    model_name: "tiny",
    hw_type: "gpu",
    gpu_model: gpu,
    gpu_count: 1,
    min_replicas: 1,
    max_replicas: 1,
  });
  const made = await callApi<{ deployment_id: string }>("POST", "/v1/deployments/create", body("on-gpu"));
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const id = made.body.deployment_id;
  const one = await callApi<DeploymentItem>("GET", `/v1/deployments/${id}`);
  assert.equal(one.body.node_id, "exec-1", JSON.stringify(one.body));

  // Its heartbeat reports the GPU held; a second deployment asking for it waits (503, Retry-After).
  await until("executor 1 reports its GPU held", 30_000, async () => ((await gpusOf())["exec-1"]?.[0]?.free === 0 ? true : undefined));
  const busy = await callApi<{ error: { code: string } }>("POST", "/v1/deployments/create", body("second-gpu"));
  assert.equal(busy.status, 503, JSON.stringify(busy.body));
  assert.equal(busy.body.error.code, "at_capacity");
  assert.ok(Number(busy.headers.get("retry-after")) > 0);
  const none = await callApi<{ error: { code: string; message: string } }>("POST", "/v1/deployments/create", body("no-such", "h100"));
  assert.equal(none.status, 400, JSON.stringify(none.body));
  assert.equal(none.body.error.code, "invalid_request");
  assert.match(none.body.error.message, /No executor node of the cluster has a GPU 'h100'/);
  assert.deepEqual(
    (await callApi<{ deployments: DeploymentItem[] }>("GET", "/v1/deployments/list")).body.deployments.map((d) => d.deployment_name),
    ["on-gpu"],
  );

  assert.equal((await callApi("DELETE", `/v1/deployments/delete/${id}`)).status, 200);
  await until("the GPU free again once the deployment is gone", 60_000, async () =>
    (await gpusOf())["exec-1"]?.[0]?.free === 1 ? true : undefined,
  );
});
