// End to end: a sandbox lives exactly until its deadline. 50 sandboxes with lives of 3 to 10 s
// each end within 1 s of their timeout_at, none earlier, each with a `timed_out` event (the
// periodic sweep is set to a minute here, so only the per-deadline timer can end them on time).
// And the other end reasons: a sandbox whose processes the OOM killer takes ends `oom` (a hostile
// program makes the kernel pick them), and the operator's kill is recorded as such.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertError, sandboxEvents } from "./helpers/api.js";
import { eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface SandboxBody {
  sandbox_id: string;
  status: string;
  timeout_at: string;
  ended_at: string | null;
}

let server: TestServer;
let call: ReturnType<typeof client>;

before(async () => {
  server = await startServer({
    env: {
      AGENTBOX_REAPER_INTERVAL_MS: "60000",
      AGENTBOX_MAX_SANDBOXES: "64",
      AGENTBOX_WARM_POOL: "4",
      AGENTBOX_START_QUEUE: "64",
      AGENTBOX_CREATE_WAIT_MS: "30000",
    },
  });
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

/** Creates a sandbox, retrying while the service says it is busy starting others (503). */
async function create(body: Record<string, unknown>): Promise<SandboxBody> {
  for (let i = 0; ; i++) {
    const res = await call<SandboxBody>("POST", "/v1/agents/sandboxes", body);
    if (res.status === 201) return res.body;
    assert.ok(res.status === 503 && i < 60, JSON.stringify(res.body));
    await new Promise((r) => setTimeout(r, 500));
  }
}

const events = async (id: string) => (await sandboxEvents(call, id)).body;

describe("deadlines", () => {
  test("50 sandboxes with 3-10 s lives end within 1 s of timeout_at, none earlier, each timed_out", async () => {
    const n = 50;
    const sandboxes: SandboxBody[] = [];
    // Seen from outside: still running shortly before the deadline, gone shortly after it.
    const checks: Promise<string | undefined>[] = [];
    const check = (s: SandboxBody) => {
      const deadline = Date.parse(s.timeout_at);
      const get = async () => (await call<SandboxBody>("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body.status;
      checks.push(
        new Promise((resolve) =>
          setTimeout(
            async () => {
              // A check that could not be sent in time (a busy host) proves nothing either way.
              if (Date.now() > deadline - 100) return resolve(undefined);
              const status = await get();
              resolve(status === "running" ? undefined : `${s.sandbox_id} was ${status} before its deadline`);
            },
            Math.max(0, deadline - 600 - Date.now()),
          ),
        ),
      );
    };
    // Five creates at a time (starts are the slow part of this test).
    for (let i = 0; i < n; i += 5) {
      const batch = await Promise.all(Array.from({ length: Math.min(5, n - i) }, (_, j) => create({ timeout: 3 + ((i + j) % 8) })));
      for (const s of batch) {
        sandboxes.push(s);
        check(s);
      }
    }
    const last = Math.max(...sandboxes.map((s) => Date.parse(s.timeout_at)));
    await new Promise((r) => setTimeout(r, Math.max(0, last - Date.now() + 1200)));
    const problems = (await Promise.all(checks)).filter(Boolean);
    assert.deepEqual(problems, []);

    const late: string[] = [];
    for (const s of sandboxes) {
      const got = (await call<SandboxBody>("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body;
      assert.equal(got.status, "timed_out", s.sandbox_id);
      assert.equal(got.timeout_at, s.timeout_at);
      const endedAt = Date.parse(got.ended_at ?? "");
      const lag = endedAt - Date.parse(s.timeout_at);
      assert.ok(lag >= 0, `${s.sandbox_id} ended ${-lag} ms before its deadline`);
      if (lag >= 1000) late.push(`${s.sandbox_id}: ${lag} ms late`);
      const evs = await events(s.sandbox_id);
      const ended = evs.at(-1);
      assert.equal(ended?.type, "ended");
      assert.equal(ended?.reason, "timed_out");
      assert.equal(ended?.at, got.ended_at);
      assert.equal(evs.filter((e) => e.type === "ended").length, 1);
    }
    assert.deepEqual(late, []);
  });

  test("a deadline moved by POST /timeout is the one kept (earlier and later)", async () => {
    const a = await create({ timeout: 60 });
    const b = await create({ timeout: 2 });
    const movedA = await call<{ timeout_at: string }>("POST", `/v1/agents/sandboxes/${a.sandbox_id}/timeout`, { timeout: 2 });
    await call("POST", `/v1/agents/sandboxes/${b.sandbox_id}/timeout`, { timeout: 60 });
    assert.ok(
      await eventually(async () => (await events(a.sandbox_id)).some((e) => e.type === "ended"), 5000),
      "not within the time allowed",
    );
    const got = (await call<SandboxBody>("GET", `/v1/agents/sandboxes/${a.sandbox_id}`)).body;
    assert.equal(got.status, "timed_out");
    const lag = Date.parse(got.ended_at ?? "") - Date.parse(movedA.body.timeout_at);
    assert.ok(lag >= 0 && lag < 1000, `${lag} ms`);
    // The other one's old deadline passed without ending it.
    assert.equal((await call<SandboxBody>("GET", `/v1/agents/sandboxes/${b.sandbox_id}`)).body.status, "running");
    await call("DELETE", `/v1/agents/sandboxes/${b.sandbox_id}`);
  });
});

describe("end reasons", () => {
  test("the OOM killer taking the sandbox's own processes ends it: failed, reason oom", async () => {
    const s = await create({ timeout: 120 });
    // Hostile: make the sandbox's init the OOM killer's first choice (its score counts as the whole
    // memory limit), then exhaust the sandbox's memory with hogs each smaller than that.
    const hog = "import time; x = b'x' * (300 * 1024**2); time.sleep(30)";
    const res = await call<{ exit_code: number; error: string | null }>("POST", `/v1/agents/sandboxes/${s.sandbox_id}/commands/run`, {
      command: "sh",
      args: ["-c", `echo 1000 > /proc/1/oom_score_adj; for i in 1 2 3 4 5 6; do python3 -c "${hog}" & done; wait`],
      timeout: 60_000,
    });
    assert.ok(res.status === 200 || res.status === 400, JSON.stringify(res.body));
    assert.ok(
      await eventually(
        async () => (await call<SandboxBody>("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body.status !== "running",
        30_000,
      ),
      `the sandbox ended (the command answered ${res.status} ${JSON.stringify(res.body).slice(0, 300)})`,
    );
    const got = (await call<SandboxBody>("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body;
    assert.equal(got.status, "failed");
    const ended = (await events(s.sandbox_id)).at(-1);
    assert.equal(ended?.type, "ended");
    assert.equal(ended?.reason, "oom");
    // Nothing runs in it any more.
    assertError(await call("POST", `/v1/agents/sandboxes/${s.sandbox_id}/commands/run`, { command: "true" }), 400, "invalid_state");
  });

  test("a memory hog that only kills itself does not end the sandbox", async () => {
    const s = await create({ timeout: 120 });
    const res = await call<{ exit_code: number }>("POST", `/v1/agents/sandboxes/${s.sandbox_id}/commands/run`, {
      command: "python3",
      args: ["-c", "x = b'x' * (3 * 1024**3)"],
      timeout: 60_000,
    });
    assert.equal(res.status, 200);
    assert.notEqual(res.body.exit_code, 0);
    assert.equal((await call<SandboxBody>("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body.status, "running");
    // After that, its processes dying for another reason (killed from inside) is no OOM end: the
    // sandbox is restarted at its next use.
    const killAll = await call("POST", `/v1/agents/sandboxes/${s.sandbox_id}/commands/run`, { command: "sh", args: ["-c", "kill -9 -1"] });
    assert.equal(killAll.status, 200, JSON.stringify(killAll.body));
    const again = await call<{ stdout: string }>("POST", `/v1/agents/sandboxes/${s.sandbox_id}/commands/run`, {
      command: "echo",
      args: ["alive"],
    });
    assert.equal(again.body.stdout, "alive\n");
    assert.equal((await call<SandboxBody>("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body.status, "running");
    assert.deepEqual(
      (await events(s.sandbox_id)).map((e) => e.type),
      ["created"],
    );
    // The operator ends it: killed, by the operator.
    const admin = client({ url: server.url, key: server.adminKey });
    assert.equal((await admin("DELETE", `/v1/admin/sandboxes/${s.sandbox_id}`)).status, 200);
    assertError(await admin("DELETE", "/v1/admin/sandboxes/no-such-sandbox"), 404, "sandbox_not_found");
    // Tenant keys cannot use it.
    assertError(await call("DELETE", `/v1/admin/sandboxes/${s.sandbox_id}`), 401, "unauthorized");
    const got = (await call<SandboxBody>("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body;
    assert.equal(got.status, "terminated");
    const ended = (await events(s.sandbox_id)).at(-1);
    assert.equal(ended?.reason, "killed");
    assert.equal(ended?.detail.by, "operator");
  });
});
