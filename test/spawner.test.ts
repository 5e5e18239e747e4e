// Sandbox processes are started by the spawner, never forked by the service itself (a fork of the
// service blocks its event loop), and the service survives its spawner: a killed spawner takes
// its sandboxes' processes with it, a new one is started, and each sandbox is started again at its
// next use with its files kept. Creates are admitted from measured start speed: a lone tenant's
// flood of creates is answered 201 or 503 at_capacity with Retry-After, never 429 for a share of
// the start queue that nobody else wants.
import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, test } from "node:test";
import { assertError, createSandbox } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;

before(async () => {
  server = await startServer({
    env: { AGENTBOX_WARM_POOL: "0", AGENTBOX_WARM_POOL_MAX: "0", AGENTBOX_RATE_LIMIT_PER_MINUTE: "0", AGENTBOX_CREATE_WAIT_MS: "5000" },
  });
});

after(async () => {
  await server?.dispose();
});

/** The direct children of a process: [pid, command name]. */
function childrenOf(pid: number): [number, string][] {
  const out: [number, string][] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      if (ppid === pid) out.push([Number(entry), stat.slice(stat.indexOf("(") + 1, close)]);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

test("sandbox processes are the spawner's children, and a dead spawner is replaced without losing files", async () => {
  const call = client(server);
  const id = await createSandbox(call);
  assert.equal((await call("POST", `/v1/agents/sandboxes/${id}/files/write`, { path: "kept.txt", content: "still here" })).status, 200);
  const servicePid = server.process.pid as number;
  // (esbuild: the TypeScript loader's helper when the service runs from source.)
  const direct = childrenOf(servicePid).filter(([, name]) => name !== "esbuild");
  assert.deepEqual(
    direct.map(([, name]) => name),
    ["node"],
    `the service's one child process is the spawner (no sandbox launcher): ${JSON.stringify(direct)}`,
  );
  const [spawnerPid] = direct[0] as [number, string];
  assert.ok(
    childrenOf(spawnerPid).some(([, name]) => name === "bwrap"),
    "the sandbox's bubblewrap process is the spawner's child",
  );

  process.kill(spawnerPid, "SIGKILL");
  // The next use starts the sandbox again through a new spawner: files kept, kernels fresh.
  let run: Awaited<ReturnType<typeof call<{ logs: { stdout: string }; error: string | null }>>> | undefined;
  for (let i = 0; i < 50; i++) {
    run = await call<{ logs: { stdout: string }; error: string | null }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "python",
      code: "print(open('kept.txt').read())",
    });
    if (run.status === 200 && run.body.error === null) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(run?.status, 200, JSON.stringify(run?.body));
  assert.equal(run?.body.logs.stdout, "still here\n");
  // The new spawner is forked as soon as the old one's exit is seen; on a busy host that can come
  // after the run above was answered (the sandbox survived), so wait for it rather than race it.
  let now = childrenOf(servicePid).filter(([, name]) => name !== "esbuild");
  // (Until it is reaped, the killed spawner is still listed as the one child: wait past that too.)
  for (let i = 0; i < 100 && (now.length !== 1 || now[0]?.[0] === spawnerPid); i++) {
    await new Promise((r) => setTimeout(r, 100));
    now = childrenOf(servicePid).filter(([, name]) => name !== "esbuild");
  }
  assert.equal(now.length, 1, JSON.stringify(now));
  assert.notEqual(now[0]?.[0], spawnerPid, "a new spawner");
  assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
});

test("a lone tenant's flood of creates with no pool: 201 or 503 at_capacity with Retry-After, never a 429 for a queue share", async () => {
  const call = client(server);
  const answers = await Promise.all(Array.from({ length: 24 }, () => call<{ sandbox_id?: string }>("POST", "/v1/agents/sandboxes", {})));
  const created = answers.filter((r) => r.status === 201);
  assert.ok(created.length > 0, "some creates waited for a start and got it");
  for (const r of answers) {
    if (r.status === 201) continue;
    assertError(r, 503, "at_capacity");
    assert.match(r.headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
  }
  for (const r of created) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${r.body.sandbox_id}`)).status, 200);
});
