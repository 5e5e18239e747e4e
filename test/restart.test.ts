// End to end: the service restarts (SIGTERM) and crashes (SIGKILL) with sandboxes alive. Their
// records survive, live sandboxes are re-adopted with their files (kernel state may be lost), a
// sandbox whose life ran out while the service was down is timed_out, and nothing is left on the
// host (mount, cgroup, process) for any sandbox that ended or for the warm pool of the old process.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";
import { cgroupsOf, eventually, mountsUnder, processesInCgroups } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface SandboxBody {
  sandbox_id: string;
  status: string;
  started_at: string;
  timeout_at: string;
  metadata: Record<string, unknown>;
  ended_at: string | null;
}

interface RunResult {
  logs: { stdout: string; stderr: string };
  error: string | null;
}

const servers: TestServer[] = [];

after(async () => {
  // Newest first: a stopped server's dispose() only removes its (shared) data and workspace dirs,
  // which must not happen under a later server of the same chain that still runs.
  for (const s of servers.reverse()) await s.dispose();
});

async function start(opts: { dataDir?: string; key?: string; warmPool?: number } = {}): Promise<TestServer> {
  const server = await startServer({
    dataDir: opts.dataDir,
    key: opts.key,
    env: { AGENTBOX_WARM_POOL: String(opts.warmPool ?? 2), AGENTBOX_REAPER_INTERVAL_MS: "100" },
  });
  servers.push(server);
  return server;
}

function api(server: TestServer) {
  const call = client(server);
  return {
    call,
    async create(body: Record<string, unknown> = {}): Promise<SandboxBody> {
      const res = await call<SandboxBody>("POST", "/v1/agents/sandboxes", body);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    },
    async get(id: string): Promise<SandboxBody> {
      const res = await call<SandboxBody>("GET", `/v1/agents/sandboxes/${id}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    },
    async run(id: string, language: string, code: string): Promise<RunResult> {
      const res = await call<RunResult>("POST", `/v1/agents/sandboxes/${id}/code/run`, { language, code });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    },
  };
}

/** Names of the workspaces mounted for this server's data dir (live and warm sandboxes). */
function mountedWorkspaces(server: TestServer): string[] {
  return mountsUnder(server.workspaceDir).map((m) => path.basename(m));
}

async function assertGone(server: TestServer, id: string, what: string): Promise<void> {
  const dir = path.join(server.workspaceDir, id);
  const gone = await eventually(() => mountsUnder(dir).length === 0 && !fs.existsSync(dir) && cgroupsOf(id).length === 0, 5000);
  assert.ok(gone, `${what} ${id} left: mounts=${mountsUnder(dir)} dir=${fs.existsSync(dir)} cgroups=${cgroupsOf(id)}`);
}

describe("restart survival", () => {
  let first: TestServer;
  let second: TestServer;
  let third: TestServer;
  let keep: SandboxBody;
  let crashKeep: SandboxBody;
  const everySeen = new Set<string>();

  test("SIGTERM: live sandboxes are re-adopted with their files; one that expired while down is timed_out", async () => {
    first = await start();
    const a = api(first);
    keep = await a.create({ metadata: { role: "keeper" }, env_vars: { KEEP_VAR: "kept" } });
    const shortLived = await a.create({ timeout: 3 });
    const killed = await a.create({});
    await a.run(keep.sandbox_id, "python", "open('/home/user/notes.txt', 'w').write('written before the restart')\nsome_state = 1");
    await a.run(keep.sandbox_id, "bash", "mkdir -p /home/user/dir && echo nested > /home/user/dir/file");
    assert.equal((await a.call("DELETE", `/v1/agents/sandboxes/${killed.sandbox_id}`)).status, 200);
    for (const id of mountedWorkspaces(first)) everySeen.add(id);
    assert.ok(everySeen.has(keep.sandbox_id) && everySeen.has(shortLived.sandbox_id));
    assert.ok(processesInCgroups(keep.sandbox_id).length > 0);

    await first.stop();
    assert.equal(first.process.exitCode, 0, "a clean exit on SIGTERM");
    // A stopped service leaves no process and no cgroup; the workspaces stay, for re-adoption.
    for (const id of everySeen) assert.deepEqual(cgroupsOf(id), [], `cgroup of ${id} after SIGTERM`);
    assert.ok(mountedWorkspaces(first).includes(keep.sandbox_id));

    // Let the short-lived sandbox's life run out while the service is down.
    const wait = Date.parse(shortLived.timeout_at) - Date.now() + 200;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));

    second = await start({ dataDir: first.dataDir, key: first.key, warmPool: 0 });
    const b = api(second);
    const got = await b.get(keep.sandbox_id);
    assert.equal(got.status, "running");
    assert.equal(got.ended_at, null);
    assert.deepEqual(got.metadata, { role: "keeper" });
    assert.equal(got.timeout_at, keep.timeout_at);
    assert.equal(got.started_at, keep.started_at);

    const file = await b.run(keep.sandbox_id, "python", "print(open('/home/user/notes.txt').read())");
    assert.equal(file.error, null, file.logs.stderr);
    assert.equal(file.logs.stdout, "written before the restart\n");
    assert.equal((await b.run(keep.sandbox_id, "bash", "cat dir/file; echo $KEEP_VAR")).logs.stdout, "nested\nkept\n");
    assert.equal((await b.run(keep.sandbox_id, "javascript", "console.log(1 + 1)")).logs.stdout, "2\n");

    const expired = await b.get(shortLived.sandbox_id);
    assert.equal(expired.status, "timed_out");
    assert.ok(expired.ended_at !== null && Date.parse(expired.ended_at) >= Date.parse(expired.timeout_at));
    const refused = await b.call("POST", `/v1/agents/sandboxes/${shortLived.sandbox_id}/code/run`, { language: "python", code: "1" });
    assert.equal(refused.status, 400);
    assert.equal((await b.get(killed.sandbox_id)).status, "terminated");

    // Only the re-adopted sandbox is on the host now: the expired one, the killed one and the old warm pool are gone.
    assert.deepEqual(mountedWorkspaces(second), [keep.sandbox_id]);
    for (const id of everySeen) if (id !== keep.sandbox_id) await assertGone(second, id, "ended or warm sandbox");
    assert.ok(cgroupsOf(keep.sandbox_id).length > 0);
  });

  test("SIGKILL: the same after a crash, and the crashed process's sandboxes leave no orphans", async () => {
    const b = api(second);
    crashKeep = await b.create({});
    await b.run(crashKeep.sandbox_id, "bash", "echo 'from before the crash' > crash.txt");
    await b.run(crashKeep.sandbox_id, "bash", "sleep 300 > /dev/null 2>&1 &");
    const doomed = await b.create({ timeout: 2 });
    everySeen.add(crashKeep.sandbox_id);
    everySeen.add(doomed.sandbox_id);
    assert.ok(processesInCgroups(crashKeep.sandbox_id).length >= 3);

    await second.crash();
    // Nobody cleaned up, but the sandboxes' processes die with the service.
    for (const id of [keep.sandbox_id, crashKeep.sandbox_id, doomed.sandbox_id]) {
      assert.ok(await eventually(() => processesInCgroups(id).length === 0, 5000), `orphans of ${id}: ${processesInCgroups(id)}`);
    }
    const wait = Date.parse(doomed.timeout_at) - Date.now() + 200;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));

    third = await start({ dataDir: second.dataDir, key: second.key, warmPool: 0 });
    const c = api(third);
    for (const s of [keep, crashKeep]) assert.equal((await c.get(s.sandbox_id)).status, "running", `${s.sandbox_id}:\n${third.logs()}`);
    assert.equal((await c.run(crashKeep.sandbox_id, "bash", "cat crash.txt")).logs.stdout, "from before the crash\n");
    assert.equal((await c.run(keep.sandbox_id, "bash", "cat notes.txt")).logs.stdout, "written before the restart");
    assert.equal((await c.run(crashKeep.sandbox_id, "python", "print('runs')")).logs.stdout, "runs\n");
    assert.equal((await c.get(doomed.sandbox_id)).status, "timed_out");
    assert.deepEqual(mountedWorkspaces(third).sort(), [keep.sandbox_id, crashKeep.sandbox_id].sort());
    await assertGone(third, doomed.sandbox_id, "expired while crashed");
  });

  test("killing a re-adopted sandbox leaves nothing; a full shutdown leaves nothing", async () => {
    const c = api(third);
    assert.equal((await c.call("DELETE", `/v1/agents/sandboxes/${crashKeep.sandbox_id}`)).status, 200);
    await assertGone(third, crashKeep.sandbox_id, "killed after re-adoption");
    const list = await c.call<{ sandboxes: SandboxBody[]; total: number }>("GET", "/v1/agents/sandboxes");
    assert.equal(list.body.total, 5, "every record survived both restarts");

    assert.deepEqual(mountsUnder(third.dataDir), [], "nothing is mounted in the data dir");
    const workspaceDir = third.workspaceDir;
    await third.dispose();
    assert.equal(fs.existsSync(workspaceDir), false);
    for (const id of everySeen) assert.deepEqual(cgroupsOf(id), [], `cgroup of ${id}`);
  });
});

describe("two services on one host", () => {
  test("starting a second service does not disturb the first one's sandboxes", async () => {
    const one = await start();
    const a = api(one);
    const s = await a.create({});
    await a.run(s.sandbox_id, "python", "survivor = 'yes'");
    const two = await start();
    assert.equal((await api(two).create({})).status, "running");
    const r = await a.run(s.sandbox_id, "python", "print(survivor)");
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stdout, "yes\n");
    await two.dispose();
    assert.equal((await a.run(s.sandbox_id, "python", "print(survivor)")).logs.stdout, "yes\n");
    await one.dispose();
    assert.deepEqual(cgroupsOf(s.sandbox_id), []);
  });
});
