// End to end, in a cluster: an executor node runs under its sandbox host, and its API process is
// killed with SIGKILL while a client sends runs through the API node. The executor's sandbox is
// not lost: its kernel keeps its variable, and a run forwarded by the API node succeeds again
// within a bound (the measured figure is printed). The lease is longer than a take-over, so the
// executor is never counted lost.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createSandbox, pythonStdout } from "./helpers/api.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { client, type TestServer } from "./helpers/server.js";
import { standbyLoaded } from "./helpers/standby.js";

const RECOVERY_BOUND_MS = 15_000;
let cluster: TestCluster;
let api: TestServer;
let executor: TestServer;

before(async () => {
  cluster = await startCluster({ leaseMs: 20_000 });
  api = await cluster.node("node-api", "api");
  // The helper starts a node under its sandbox host when the test process says so.
  process.env.AGENTBOX_TEST_SANDBOX_HOST = "1";
  try {
    executor = await cluster.node("node-exec", "executor");
  } finally {
    delete process.env.AGENTBOX_TEST_SANDBOX_HOST;
  }
});

after(async () => {
  await cluster?.dispose();
});

test("kill -9 of an executor's API process: its sandbox keeps its kernel, and forwarded runs succeed again", async (t) => {
  const call = client({ url: api.url, key: cluster.key });
  let sandbox = "";
  // The API node places creates from its view of the nodes, a heartbeat old.
  for (let i = 0; i < 100 && !sandbox; i++) {
    sandbox = await createSandbox(call).catch(() => "");
    if (!sandbox) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(sandbox, "a sandbox on the executor");
  await pythonStdout(call, sandbox, "secret = 'kept'");

  let load = true;
  const loader = (async () => {
    while (load) {
      await call("POST", `/v1/agents/sandboxes/${sandbox}/code/run`, { language: "python", code: "print(1)" }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  await standbyLoaded(executor.process.pid as number);
  const apiPid = executor.apiPid();
  process.kill(apiPid, "SIGKILL");
  const killedAt = Date.now();
  let recovered = 0;
  for (;;) {
    const res = await call<{ logs: { stdout: string }; error: string | null }>("POST", `/v1/agents/sandboxes/${sandbox}/code/run`, {
      language: "python",
      code: "print(secret)",
    }).catch(() => undefined);
    if (res?.status === 200 && res.body.error === null) {
      recovered = Date.now() - killedAt;
      assert.equal(res.body.logs.stdout, "kept\n", "the kernel kept its variable");
      break;
    }
    assert.ok(
      Date.now() - killedAt < RECOVERY_BOUND_MS,
      `no answer ${RECOVERY_BOUND_MS} ms after the kill:\n${executor.logs().slice(-4000)}`,
    );
    await new Promise((r) => setTimeout(r, 50));
  }
  load = false;
  await loader;
  t.diagnostic(`forwarded run answered ${recovered} ms after kill -9 of the executor's API process`);
  assert.notEqual(executor.apiPid(), apiPid, "a new API process on the executor");
  const got = await call<{ status: string }>("GET", `/v1/agents/sandboxes/${sandbox}`);
  assert.equal(got.body.status, "running");
});
