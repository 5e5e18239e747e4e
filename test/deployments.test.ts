// End to end: deployments of the tiny GGUF model (test/helpers/gguf.ts, written by the suite) with
// their own replica processes behind the gateway: requests served, a replica killed with SIGKILL
// comes back and no request is lost (the router sends a request whose replica failed once more, to
// another replica or the restarted one), scale-up under concurrent load, scale-down when idle, a
// full queue answered 429 with Retry-After, delete while busy (running requests finish, then the
// replicas are gone), accelerators, tenant scoping and bad input.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError } from "./helpers/api.js";
import { writeTinyLlama } from "./helpers/gguf.js";
import { createKey, eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface Replica {
  replica_id: string;
  state: string;
  pid: number | null;
  in_flight: number;
  restarts: number;
}

interface DeploymentItem {
  deployment_id: string;
  deployment_name: string;
  model_name: string;
  status: string;
  reason: string | null;
  min_replicas: number;
  max_replicas: number;
  replicas: Replica[];
  queued: number;
}

const QUEUE = 3;

/** An OpenAI-compatible server (the kind an operator allows, like llama-server): it echoes the last message. */
const ECHO_SERVER = `
import http from "node:http";
http.createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  let body = "";
  req.on("data", (d) => (body += d));
  req.on("end", () => {
    const r = JSON.parse(body);
    const text = "echo: " + r.messages.at(-1).content;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ id: "x", object: "chat.completion", created: 1, model: r.model,
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
  });
}).listen(Number(process.argv[2]), "127.0.0.1");
`;
const IDLE_S = 3;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("deployments", () => {
  let server: TestServer;
  let call: ReturnType<typeof client>;
  let other: ReturnType<typeof client>;

  before(async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-test-"));
    fs.mkdirSync(path.join(dataDir, "models"));
    // A context long enough for answers that take a while (one thread: ~1 s for 512 tokens here).
    writeTinyLlama(path.join(dataDir, "models", "tiny.gguf"), { contextLength: 4096 });
    const second = createKey(dataDir, "other-tenant", "tenant-b");
    // Server commands the operator allows: a small OpenAI-compatible server, and one that dies at start.
    const echo = path.join(dataDir, "echo-server.mjs");
    fs.writeFileSync(echo, ECHO_SERVER);
    const servers = {
      "echo-server": { command: [process.execPath, echo, "{port}"], tools: true },
      broken: { command: [process.execPath, "-e", "console.error('cannot open /dev/nvidia0'); process.exit(2)", "{port}"] },
    };
    server = await startServer({
      dataDir,
      env: {
        AGENTBOX_DEPLOYMENT_IDLE_S: String(IDLE_S),
        AGENTBOX_DEPLOYMENT_QUEUE: String(QUEUE),
        AGENTBOX_DEPLOYMENT_MAX_REPLICAS: "4",
        AGENTBOX_MAX_REPLICAS: "3",
        AGENTBOX_REPLICA_HEALTH_INTERVAL_MS: "500",
        AGENTBOX_REPLICA_THREADS: "1",
        AGENTBOX_REPLICA_MEMORY_MB: "1024",
        AGENTBOX_WARM_POOL: "0",
        AGENTBOX_DEPLOYMENT_SERVERS: JSON.stringify(servers),
      },
    });
    call = client(server);
    other = client({ url: server.url, key: second.key });
  });

  after(async () => {
    await server?.dispose();
  });

  const get = async (id: string) => call<DeploymentItem>("GET", `/v1/deployments/${id}`);

  async function create(name: string, min: number, max: number): Promise<string> {
    const res = await call<{ deployment_id: string; message: string; status: string }>("POST", "/v1/deployments/create", {
      deployment_name: name,
      model_name: "tiny",
      hw_type: "cpu",
      min_replicas: min,
      max_replicas: max,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    // The hosted API's keys, and what the Python client's model requires (deployment_name, created_at).
    for (const key of ["deployment_id", "message", "status", "deployment_name", "created_at", "min_replicas", "max_replicas"])
      assert.ok(key in res.body, key);
    assert.equal(res.body.status, "creating");
    const id = res.body.deployment_id;
    assert.ok(
      await eventually(async () => (await get(id)).body.status === "running", 60_000, 100),
      `deployment never ran: ${JSON.stringify((await get(id)).body)}`,
    );
    return id;
  }

  const chat = (model: string, maxTokens: number, who = call) =>
    who<{ model: string; choices: Array<{ message: { content: string }; finish_reason: string }>; usage: { completion_tokens: number } }>(
      "POST",
      "/v1/inference/chat/completions",
      { model, messages: [{ role: "user", content: "hello world the cat" }], max_tokens: maxTokens, temperature: 0 },
    );

  test("accelerators: this host's CPU, and GPUs only when nvidia-smi reports some", async () => {
    const res = await call<{ accelerators: Array<Record<string, unknown>> }>("GET", "/v1/accelerators");
    assert.equal(res.status, 200);
    const cpu = res.body.accelerators.find((a) => a.accelerator_id === "cpu");
    assert.ok(cpu, JSON.stringify(res.body));
    assert.equal(cpu.hw_model, os.cpus()[0]?.model.trim());
    assert.equal(cpu.count, os.availableParallelism());
    assert.ok(Number.isInteger(cpu.hw_memory) && (cpu.hw_memory as number) > 0);
    for (const key of ["accelerator_id", "pricing", "hw_model", "hw_link", "hw_memory", "provider", "status", "updated_at"])
      assert.ok(key in cpu, key);
    // Documented in the OpenAPI document like every route.
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    for (const p of [
      "/v1/deployments/create",
      "/v1/deployments/list",
      "/v1/deployments/{deployment_id}",
      "/v1/deployments/delete/{deployment_id}",
      "/v1/accelerators",
    ])
      assert.ok(p in doc.paths, p);
    const hasSmi = (process.env.PATH ?? "").split(":").some((d) => fs.existsSync(path.join(d, "nvidia-smi")));
    if (!hasSmi) assert.equal(res.body.accelerators.length, 1);
  });

  test("bad input is a clear 4xx", async () => {
    const base = { deployment_name: "bad", model_name: "tiny", hw_type: "cpu" };
    const post = (body: Record<string, unknown>) => call("POST", "/v1/deployments/create", body);
    assertError(await post({ ...base, min_replicas: 0 }), 400, "invalid_request");
    assertError(await post({ ...base, min_replicas: -1 }), 400, "invalid_request");
    assertError(await post({ ...base, max_replicas: 0 }), 400, "invalid_request");
    const minMax = assertError(await post({ ...base, min_replicas: 3, max_replicas: 2 }), 400, "invalid_request");
    assert.match(minMax.error.message, /min_replicas/);
    assert.match(assertError(await post({ ...base, max_replicas: 5 }), 400, "invalid_request").error.message, /limit of 4/);
    // Within the per-deployment limit, but min_replicas alone would pass the host's cap of 3 replicas.
    const host = await post({ ...base, min_replicas: 4, max_replicas: 4 });
    assert.match(assertError(host, 503, "at_capacity").error.message, /at most 3 replicas/);
    assert.ok(Number(host.headers.get("retry-after")) > 0);
    assertError(await post({ ...base, model_name: "no-such-model" }), 404, "model_not_found");
    assert.match(
      assertError(await post({ ...base, hw_type: "dedicated", gpu_model: "NVIDIA H100", gpu_count: 1 }), 400, "invalid_request").error
        .message,
      /no GPU 'NVIDIA H100'/,
    );
    assertError(await post({ ...base, hw_type: "tpu" }), 400, "invalid_request");
    assertError(await post({ ...base, gpu_model: "NVIDIA_T4_16GB", max_replicas: 0 }), 400, "invalid_request");
    assertError(await post({ ...base, deployment_name: "../x" }), 400, "invalid_request");
    assertError(await post({ model_name: "tiny" }), 400, "invalid_request");
    assertError(await call("GET", "/v1/deployments/dep_nope"), 404, "not_found");
    assertError(await call("DELETE", "/v1/deployments/delete/dep_nope"), 404, "not_found");
    // A file that is not a GGUF model is refused before any replica starts.
    fs.writeFileSync(path.join(server.dataDir, "models", "junk.gguf"), "not a model");
    assertError(await post({ ...base, model_name: "junk" }), 400, "invalid_request");
    assert.equal((await call<{ deployments: unknown[] }>("GET", "/v1/deployments/list")).body.deployments.length, 0);
  });

  test("a server command the operator allowed is a model; one that cannot start fails with its reason", async () => {
    const echoId = (
      await call<{ deployment_id: string }>("POST", "/v1/deployments/create", {
        deployment_name: "echo",
        model_name: "echo-server",
        // How the Python client always sends it: a "dedicated" deployment on this host's CPU.
        hw_type: "dedicated",
        gpu_model: "cpu",
        gpu_count: 1,
      })
    ).body.deployment_id;
    assert.ok(await eventually(async () => (await get(echoId)).body.status === "running", 30_000, 100), "not within the time allowed");
    const res = await call<{ choices: Array<{ message: { content: string } }> }>("POST", "/v1/inference/chat/completions", {
      model: "echo",
      messages: [{ role: "user", content: "ping" }],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.choices[0]?.message.content, "echo: ping");

    const brokenId = (
      await call<{ deployment_id: string }>("POST", "/v1/deployments/create", { deployment_name: "gpu", model_name: "broken" })
    ).body.deployment_id;
    assert.ok(await eventually(async () => (await get(brokenId)).body.status === "failed", 30_000, 100), "not within the time allowed");
    const failed = (await get(brokenId)).body;
    assert.match(failed.reason ?? "", /cannot open \/dev\/nvidia0/);
    assert.deepEqual(failed.replicas, []);
    const refused = await call("POST", "/v1/inference/chat/completions", { model: "gpu", messages: [{ role: "user", content: "x" }] });
    assertError(refused, 503, "upstream_unavailable");
    for (const d of [echoId, brokenId]) assert.equal((await call("DELETE", `/v1/deployments/delete/${d}`)).status, 200);
    assert.ok(
      await eventually(async () => (await get(echoId)).status === 404 && (await get(brokenId)).status === 404, 10_000),
      "not within the time allowed",
    );
  });

  test("a GGUF stored in /v1/files is a model: the deployment serves its own copy", async () => {
    const form = new FormData();
    form.append("purpose", "user_data");
    form.append("file", new Blob([fs.readFileSync(path.join(server.dataDir, "models", "tiny.gguf"))]), "tiny.gguf");
    const up = await fetch(`${server.url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${server.key}` }, body: form });
    assert.equal(up.status, 200);
    const fileId = ((await up.json()) as { id: string }).id;
    // Another tenant's file id is not a model of this tenant.
    assertError(await other("POST", "/v1/deployments/create", { deployment_name: "f", model_name: fileId }), 404, "file_not_found");
    const created = await call<{ deployment_id: string }>("POST", "/v1/deployments/create", {
      deployment_name: "from-file",
      model_name: fileId,
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const depId = created.body.deployment_id;
    // The stored file may go: the deployment has its own copy.
    assert.equal((await call("DELETE", `/v1/files/${fileId}`)).status, 200);
    assert.ok(
      await eventually(async () => (await get(depId)).body.status === "running", 60_000, 100),
      JSON.stringify((await get(depId)).body),
    );
    const res = await chat("from-file", 4);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.usage.completion_tokens, 4);
    assert.equal((await call("DELETE", `/v1/deployments/delete/${depId}`)).status, 200);
    const copy = path.join(server.dataDir, "deployment-models", `${depId}.gguf`);
    assert.equal(fs.statSync(path.dirname(copy)).mode & 0o777, 0o700);
    assert.ok(
      await eventually(async () => (await get(depId)).status === 404 && !fs.existsSync(copy), 15_000),
      "not within the time allowed",
    );
  });

  let id = "";

  test("a deployment (min 1, max 2) serves through the gateway, for its tenant only", async () => {
    id = await create("tiny-chat", 1, 2);
    // Each replica runs unprivileged (nobody: the model is a file anyone may read, given as a
    // descriptor), in its own memory cgroup with the configured limit.
    const first = (await get(id)).body.replicas[0] as Replica;
    const uids = /^Uid:\s+(\d+)\s+(\d+)/m.exec(fs.readFileSync(`/proc/${first.pid}/status`, "utf8"));
    assert.deepEqual([uids?.[1], uids?.[2]], ["65534", "65534"]);
    // ... and in a network namespace of its own (it serves on a unix socket; it reaches no network).
    assert.notEqual(fs.readlinkSync(`/proc/${first.pid}/ns/net`), fs.readlinkSync(`/proc/${server.process.pid}/ns/net`));
    const memLine = fs
      .readFileSync(`/proc/${first.pid}/cgroup`, "utf8")
      .split("\n")
      .find((l) => l.split(":")[1]?.split(",").includes("memory"));
    if (memLine) {
      const group = memLine.split(":")[2] as string;
      assert.ok(group.endsWith(`/agentbox-replicas/${first.replica_id}`), group);
      const limit = fs.readFileSync(path.join("/sys/fs/cgroup/memory", group, "memory.limit_in_bytes"), "utf8");
      assert.equal(Number(limit), 1024 * 2 ** 20);
    }
    const res = await chat("tiny-chat", 8);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.model, "tiny-chat");
    assert.equal(res.body.usage.completion_tokens, 8);
    assert.ok(res.body.choices[0]?.message.content.length);

    const text = await call<{ object: string; model: string; choices: Array<{ text: string }> }>("POST", "/v1/inference/completions", {
      model: "tiny-chat",
      prompt: "the cat",
      max_tokens: 4,
      temperature: 0,
    });
    assert.equal(text.status, 200, JSON.stringify(text.body));
    assert.equal(text.body.object, "text_completion");
    assert.ok(text.body.choices[0]?.text.length);

    const stream = await fetch(`${server.url}/v1/inference/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 5, stream: true }),
    });
    assert.equal(stream.status, 200);
    const events = await stream.text();
    assert.ok(events.trimEnd().endsWith("data: [DONE]"), events);

    const models = await call<{ data: Array<{ id: string; owned_by: string }> }>("GET", "/v1/inference/models");
    assert.ok(models.body.data.some((m) => m.id === "tiny-chat" && m.owned_by === "deployment"));
    const list = await call<{ deployments: DeploymentItem[] }>("GET", "/v1/deployments/list");
    assert.deepEqual(
      list.body.deployments.map((d) => [d.deployment_id, d.deployment_name, d.model_name, d.status]),
      [[id, "tiny-chat", "tiny", "running"]],
    );
    const dup = assertError(
      await call("POST", "/v1/deployments/create", { deployment_name: "tiny-chat", model_name: "tiny" }),
      409,
      "conflict",
    );
    assert.match(dup.error.message, /already exists/);

    // Another tenant sees none of it, and its `model: tiny-chat` is not this deployment.
    assert.equal((await other<{ deployments: unknown[] }>("GET", "/v1/deployments/list")).body.deployments.length, 0);
    assertError(await other("GET", `/v1/deployments/${id}`), 404, "not_found");
    assertError(await chat("tiny-chat", 4, other), 404, "model_not_found");
    const theirs = await other<{ data: Array<{ id: string }> }>("GET", "/v1/inference/models");
    assert.ok(!theirs.body.data.some((m) => m.id === "tiny-chat"));
  });

  test("scale-up under concurrent load, never past max_replicas; scale-down after idle", async () => {
    let most = 0;
    let bothBusy = false;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const replicas = (await get(id)).body.replicas;
        most = Math.max(most, replicas.filter((r) => r.state !== "stopping").length);
        if (replicas.filter((r) => r.state === "ready" && r.in_flight > 0).length === 2) bothBusy = true;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    // 1 + QUEUE clients sending requests back to back: one runs, the others wait in the queue, which
    // makes the deployment start a second replica; the load goes on until both serve at once.
    const deadline = Date.now() + 90_000;
    const client = async () => {
      while (!bothBusy && Date.now() < deadline) {
        const a = await chat("tiny-chat", 300);
        assert.equal(a.status, 200, JSON.stringify(a.body));
      }
    };
    await Promise.all(Array.from({ length: 1 + QUEUE }, client));
    watching = false;
    await watch;
    assert.ok(bothBusy, "the second replica never served");
    assert.equal(most, 2, `replicas seen at most: ${most}`);
    const served = (await get(id)).body.replicas;

    // Idle for IDLE_S seconds: back to min_replicas (one), and the retired process is gone.
    const retired = served.map((r) => r.pid as number);
    assert.ok(await eventually(async () => (await get(id)).body.replicas.length === 1, 30_000, 200), JSON.stringify((await get(id)).body));
    const left = (await get(id)).body.replicas[0] as Replica;
    assert.ok(await eventually(() => retired.filter((p) => p !== left.pid).every((p) => !alive(p)), 10_000), "not within the time allowed");
    assert.equal((await chat("tiny-chat", 4)).status, 200);
  });

  test("a full queue is 429 with Retry-After; the admitted requests are all served", async () => {
    // Each answer takes ~2 s here (longer on a busy machine, where the eight also arrive further
    // apart): the queue is full before the first admitted ones are done, however slow the machine.
    const answers = await Promise.all(Array.from({ length: 8 }, () => chat("tiny-chat", 1000)));
    const limited = answers.filter((a) => a.status === 429);
    assert.ok(limited.length >= 1, answers.map((a) => a.status).join(","));
    for (const a of limited) {
      assertError(a, 429, "rate_limited");
      assert.ok(Number(a.headers.get("retry-after")) >= 1);
    }
    for (const a of answers.filter((x) => x.status !== 429)) assert.equal(a.status, 200, JSON.stringify(a.body));
  });

  test("a replica killed with SIGKILL comes back, and no request is lost", async () => {
    const before = (await get(id)).body.replicas.filter((r) => r.state === "ready");
    assert.ok(before.length >= 1);
    // Idle first: the last test's answers are still counted in flight for a moment after they
    // reach the client, and the replica killed below must be one serving this test's requests.
    const idle = (d: DeploymentItem) => d.queued === 0 && d.replicas.every((r) => r.in_flight === 0);
    assert.ok(await eventually(async () => idle((await get(id)).body), 10_000, 20), "not within the time allowed");
    // Requests running and queued when the replica dies: each is served (sent once more if its replica died under it).
    const pending = Array.from({ length: 3 }, () => chat("tiny-chat", 600));
    assert.ok(
      await eventually(async () => (await get(id)).body.replicas.some((r) => r.in_flight > 0), 10_000, 20),
      "not within the time allowed",
    );
    const busy = (await get(id)).body.replicas.find((r) => r.in_flight > 0) as Replica;
    process.kill(busy.pid as number, "SIGKILL");
    const answers = await Promise.all(pending);
    for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
    // The request running on the killed replica was sent once more (the router's one retry), not lost.
    assert.match(server.logs(), /replica failed a request: sending it to another/);
    assert.ok(
      await eventually(
        async () => {
          const r = (await get(id)).body.replicas.find((x) => x.replica_id === busy.replica_id);
          // The same replica again (or retired as idle after its restart): never the dead process.
          return r === undefined || (r.state === "ready" && r.restarts >= 1 && r.pid !== busy.pid);
        },
        30_000,
        100,
      ),
      JSON.stringify((await get(id)).body),
    );
    assert.ok(!alive(busy.pid as number));
    assert.equal((await chat("tiny-chat", 4)).status, 200);
    // The service itself never noticed beyond its log.
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
  });

  test("delete while busy: running requests finish, then the deployment and its replicas are gone", async () => {
    const pids = (await get(id)).body.replicas.map((r) => r.pid as number);
    const pending = Array.from({ length: 2 }, () => chat("tiny-chat", 800));
    assert.ok(
      await eventually(async () => (await get(id)).body.replicas.some((r) => r.in_flight > 0), 10_000, 20),
      "not within the time allowed",
    );
    const del = await call<{ deployment_id: string; status: string }>("DELETE", `/v1/deployments/delete/${id}`);
    assert.equal(del.status, 200);
    assert.equal(del.body.status, "deleting");
    // New requests no longer reach it; the name is free at once... for the gateway.
    assertError(await chat("tiny-chat", 4), 404, "model_not_found");
    for (const a of await Promise.all(pending)) assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.ok(await eventually(async () => (await get(id)).status === 404, 30_000, 100), "not within the time allowed");
    assert.ok(await eventually(() => pids.every((p) => !alive(p)), 10_000), "not within the time allowed");
    assert.equal((await call<{ deployments: unknown[] }>("GET", "/v1/deployments/list")).body.deployments.length, 0);
  });
});
