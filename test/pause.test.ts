// End to end: pause and resume. A paused sandbox's processes are frozen (a busy loop's CPU time
// stops growing), its kernel state survives (a python variable), its life clock stops (timeout_at
// moves on by the paused time), and everything that would run in it is a clear 409 until it is
// resumed; on_timeout "pause" pauses instead of ending, and a resume gives it a new life.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError, createSandbox } from "./helpers/api.js";
import { cgroupsOf, eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface PauseBody {
  sandbox_id: string;
  status: string;
  timeout_at: string;
  kernel_state: string;
}

let server: TestServer;
let call: ReturnType<typeof client>;

before(async () => {
  server = await startServer();
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU time (ns) the sandbox's processes used so far, from its cgroup. */
function cpuNs(id: string): number {
  // Its group under its tenant's (a create answers before the move out of the pool's group is done).
  const dir = cgroupsOf(id).find((d) => d.includes("/cpuacct/") && d.includes("/t-"));
  assert.ok(dir, "the sandbox has a cpuacct group under its tenant's");
  return Number(fs.readFileSync(path.join(dir, "cpuacct.usage"), "utf8"));
}

async function run(id: string, code: string) {
  return call<{ logs: { stdout: string[] | string }; results: { text?: string }[]; error: unknown }>(
    "POST",
    `/v1/agents/sandboxes/${id}/code/run`,
    { code, language: "python" },
  );
}

const pause = (id: string) => call<PauseBody>("POST", `/v1/agents/sandboxes/${id}/pause`);
const resume = (id: string) => call<PauseBody>("POST", `/v1/agents/sandboxes/${id}/resume`);

describe("pause and resume", () => {
  test("a paused sandbox uses no CPU, refuses work with 409, and resumes with its python state", async () => {
    const id = await createSandbox(call);
    assert.equal((await run(id, "x = 41")).status, 200);
    const bg = await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
      command: "sh -c 'while :; do :; done' >/dev/null 2>&1 &",
    });
    assert.equal(bg.status, 200, JSON.stringify(bg.body));
    // The loop runs: its CPU time grows (by 50 ms of CPU: on a loaded machine that may take a while).
    const a = cpuNs(id);
    assert.ok(await eventually(() => cpuNs(id) - a > 50e6, 30_000, 50), "the busy loop uses CPU before the pause");

    const paused = await pause(id);
    assert.equal(paused.status, 200, JSON.stringify(paused.body));
    assert.equal(paused.body.status, "paused");
    assert.equal(paused.body.kernel_state, "preserved");
    assert.equal((await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status, "paused");
    // Pausing again is not an error.
    assert.equal((await pause(id)).status, 200);

    const before = cpuNs(id);
    await sleep(1000);
    const used = cpuNs(id) - before;
    assert.ok(used < 5e6, `a frozen sandbox used ${used} ns of CPU in a second`);

    assertError(await run(id, "x"), 409, "sandbox_paused");
    assertError(await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "true" }), 409, "sandbox_paused");
    assertError(await call("POST", `/v1/agents/sandboxes/${id}/files/read`, { path: "a.txt" }), 409, "sandbox_paused");

    const resumed = await resume(id);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    assert.equal(resumed.body.status, "running");
    assert.equal(resumed.body.kernel_state, "preserved");
    assert.equal((await resume(id)).status, 200, "resuming a running sandbox is not an error");
    const after = await run(id, "x + 1");
    assert.equal(after.status, 200, JSON.stringify(after.body));
    assert.equal(after.body.results[0]?.text, "42");
    // The loop goes on where it stopped (50 ms more of CPU: on a loaded machine that may take a while).
    const c = cpuNs(id);
    assert.ok(await eventually(() => cpuNs(id) - c > 50e6, 30_000, 50), "the busy loop runs again after the resume");
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });

  test("the life clock stops while paused: timeout_at moves on by the paused time", async () => {
    const id = await createSandbox(call, { timeout: 120 });
    const before = Date.parse((await call<{ timeout_at: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.timeout_at);
    const t0 = Date.now();
    assert.equal((await pause(id)).status, 200);
    await sleep(1500);
    const resumed = await resume(id);
    const pausedMs = Date.now() - t0;
    const moved = Date.parse(resumed.body.timeout_at) - before;
    assert.ok(moved >= 1400 && moved <= pausedMs + 100, `timeout_at moved by ${moved} ms after a pause of ~${pausedMs} ms`);
    assert.equal(
      Date.parse((await call<{ timeout_at: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.timeout_at),
      Date.parse(resumed.body.timeout_at),
    );
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("a paused sandbox can be killed; other tenants and ended sandboxes get clear errors", async () => {
    const id = await createSandbox(call);
    assert.equal((await pause(id)).status, 200);
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    assert.ok(await eventually(() => cgroupsOf(id).length === 0, 15_000), "the frozen sandbox's cgroups are removed");
    assert.equal((await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status, "terminated");
    assertError(await pause(id), 400, "invalid_state");
    assertError(await resume(id), 400, "invalid_state");
    assertError(await pause("no-such-sandbox"), 404, "sandbox_not_found");
  });

  test("on_timeout pause: the sandbox pauses at its deadline instead of ending, and a resume gives it a new life", async () => {
    const id = await createSandbox(call, { timeout: 2, lifecycle: { on_timeout: "pause" } });
    assert.equal((await run(id, "y = 'kept'")).status, 200);
    assert.ok(
      await eventually(
        async () => (await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status === "paused",
        8000,
        100,
      ),
      "the sandbox is paused after its deadline",
    );
    await sleep(1200);
    assert.equal((await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status, "paused", "and stays paused");
    const resumed = await resume(id);
    assert.equal(resumed.body.status, "running");
    const left = Date.parse(resumed.body.timeout_at) - Date.now();
    assert.ok(left > 1000 && left <= 2100, `a new life of 2 s (${left} ms left)`);
    assert.equal((await run(id, "y")).body.results[0]?.text, "'kept'");
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("bad input: an unknown on_timeout is a 400", async () => {
    assertError(await call("POST", "/v1/agents/sandboxes", { lifecycle: { on_timeout: "explode" } }), 400, "invalid_request");
  });
});
