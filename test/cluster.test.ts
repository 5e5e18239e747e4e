// A cluster on this machine: a private Redis and three nodes (one API-only node, two executors)
// that share one SQLite database file (so one set of keys), each with its own data dir and
// workspaces. Membership and the admin view, an API-only node that opens no sandbox host, creates
// placed on executors, runs, files and streamed transfers forwarded to the owner (native and
// E2B-compatible routes, host-named ones too; runs seconds apart relayed past the cached route), a key revoked through one node refused by another,
// one rate limit across nodes, a killed or frozen executor's sandboxes ended as `node_lost` once,
// and a drained node leaving by itself once its sandboxes have ended.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { after, before, test } from "node:test";
import { Sandbox } from "e2b";
import { Redis } from "ioredis";
import { createSandbox, pythonStdout, sandboxEvents } from "./helpers/api.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { sse } from "./helpers/sse.js";
import { client, type TestServer } from "./helpers/server.js";
import { until as pollUntil } from "./helpers/leftovers.js";

/** Polled every 50 ms: some checks here time how soon a node is found lost. */
const until = <T>(what: string, ms: number, probe: () => Promise<T | undefined>) => pollUntil(what, ms, probe, 50);

// Short for the test, long enough for a busy machine's pauses (a node that cannot renew it in time is lost).
const LEASE_MS = 3000;
let cluster: TestCluster;
let key: string;
let adminKey: string;
let redisClient: Redis;
const nodes: Record<string, TestServer> = {};

const admin = (node: TestServer) => client({ url: node.url, key: adminKey });
const call = (node: TestServer) => client({ url: node.url, key });

interface NodeBody {
  id: string;
  state: string;
  roles: string;
  epoch: number;
  live_sandboxes: number;
  free_memory_mb: number;
}

async function nodeList(via: TestServer): Promise<NodeBody[]> {
  const res = await admin(via)<{ nodes: NodeBody[] }>("GET", "/v1/admin/nodes");
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.nodes;
}

/** The node that owns a sandbox, from the routing map in Redis. */
async function ownerOf(id: string): Promise<string> {
  const route = await redisClient.get(`abx:route:${id}`);
  assert.ok(route, `no route for ${id}`);
  return route.split(" ")[0] as string;
}

/** E2B's host names ({port}-{sandboxID}.{domain}) on every node. */
const E2B_DOMAIN = "e2b.test";

before(async () => {
  cluster = await startCluster({ leaseMs: LEASE_MS });
  ({ key, adminKey } = cluster);
  redisClient = new Redis(cluster.redis.url);
  const env = { AGENTBOX_E2B_DOMAIN: E2B_DOMAIN };
  nodes.a = await cluster.node("node-a", "api", env);
  nodes.b = await cluster.node("node-b", "executor", env);
  nodes.c = await cluster.node("node-c", "executor", env);
});

/** The command lines of a node's sandbox spawner (a child process of the service; every sandbox starts under it). */
function spawnersOf(pid: number): string[] {
  const out: string[] = [];
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    const list = fs.readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
    for (const child of list ? list.split(/\s+/) : []) {
      const cmd = fs.readFileSync(`/proc/${child}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmd.includes("spawner-main")) out.push(cmd);
    }
  }
  return out;
}

/** The node's own group of sandbox cgroups (src/sandbox/cgroup.ts: <own cgroup>/agentbox/svc-<hash of the workspace dir>). */
function sandboxCgroupOf(node: TestServer): string {
  const own = /^\d+:[^:]*\bmemory\b[^:]*:(.*)$/m.exec(fs.readFileSync(`/proc/${node.process.pid}/cgroup`, "utf8"))?.[1];
  const v2 = /^0::(.*)$/m.exec(fs.readFileSync(`/proc/${node.process.pid}/cgroup`, "utf8"))?.[1];
  const service = `svc-${crypto.createHash("sha256").update(node.workspaceDir).digest("hex").slice(0, 12)}`;
  return own !== undefined
    ? path.join("/sys/fs/cgroup/memory", own, "agentbox", service)
    : path.join("/sys/fs/cgroup", v2 ?? "/", "agentbox", service);
}

after(async () => {
  redisClient?.disconnect();
  await cluster?.dispose();
});

test("every node is listed with its roles, lease epoch and load, by any node", async () => {
  const list = await nodeList(nodes.c as TestServer);
  assert.deepEqual(
    list.map((n) => [n.id, n.state, n.roles]),
    [
      ["node-a", "up", "api"],
      ["node-b", "up", "executor"],
      ["node-c", "up", "executor"],
    ],
  );
  for (const n of list) {
    assert.ok(n.epoch >= 1);
    assert.ok(n.free_memory_mb > 0);
    assert.equal(n.live_sandboxes, 0);
  }
  // Tenant keys are not admin keys.
  assert.equal((await call(nodes.a as TestServer)("GET", "/v1/admin/nodes")).status, 401);
});

test("the API-only node opens no sandbox host: no spawner, no cgroup, no warm pool, and creates nothing itself", async () => {
  const a = nodes.a as TestServer;
  const b = nodes.b as TestServer;
  // The probe is right: an executor has its spawner (a child process) and its group of cgroups.
  assert.equal(spawnersOf(b.process.pid as number).length, 1, "the executor's spawner");
  assert.ok(fs.existsSync(sandboxCgroupOf(b)), sandboxCgroupOf(b));
  // The API node: no spawner, no cgroup, no spawner socket.
  assert.deepEqual(spawnersOf(a.process.pid as number), []);
  assert.equal(fs.existsSync(sandboxCgroupOf(a)), false, sandboxCgroupOf(a));
  assert.equal(fs.existsSync(path.join(a.dataDir, "spawner.sock")), false);
  const health = await fetch(`${a.url}/health`);
  assert.deepEqual(await health.json(), { status: "ok", live_sandboxes: 0 });
  // Several creates through it all land on executors, and it still has no sandbox process.
  const ids = [await createSandbox(call(a)), await createSandbox(call(a))];
  for (const id of ids) assert.notEqual(await ownerOf(id), "node-a");
  assert.deepEqual(spawnersOf(a.process.pid as number), []);
  for (const id of ids) assert.equal((await call(a)("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
});

/** A request to a node as if through a wildcard DNS name of E2B_DOMAIN (the Host header names the sandbox). */
function viaHostName(
  node: TestServer,
  host: string,
  method: string,
  urlPath: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: node.port, method, path: urlPath, headers: { ...headers, host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

test("the E2B-compatible API through a node that does not run the sandbox: control, envd, files, host names", async () => {
  const a = nodes.a as TestServer;
  process.env.E2B_API_URL = `${a.url}/e2b`;
  process.env.E2B_SANDBOX_URL = `${a.url}/e2b`;
  process.env.E2B_API_KEY = key;
  try {
    // Created through the API node: placed on an executor.
    const sbx = await Sandbox.create({ timeoutMs: 120_000 });
    const owner = await ownerOf(sbx.sandboxId);
    assert.ok(owner === "node-b" || owner === "node-c", owner);
    const other = owner === "node-b" ? (nodes.c as TestServer) : (nodes.b as TestServer);
    // envd's Connect RPCs (a streamed process, the filesystem) and its file transfers, through the API node.
    const run = await sbx.commands.run("echo from-$(hostname | wc -c) && echo err >&2");
    assert.equal(run.exitCode, 0);
    assert.match(run.stdout, /^from-\d+\n$/);
    assert.equal(run.stderr, "err\n");
    await sbx.files.write("/home/user/e2b.txt", "through the API node");
    assert.equal(await sbx.files.read("/home/user/e2b.txt"), "through the API node");
    assert.ok((await sbx.files.list("/home/user")).some((e) => e.name === "e2b.txt"));
    // The control API's per-sandbox routes.
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).sandboxId, sbx.sandboxId);
    await sbx.setTimeout(90_000);
    // The same sandbox through the other executor, which does not run it either.
    process.env.E2B_API_URL = `${other.url}/e2b`;
    process.env.E2B_SANDBOX_URL = `${other.url}/e2b`;
    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal((await again.commands.run("cat /home/user/e2b.txt")).stdout, "through the API node");

    // Host names: envd's port (49983-<id>.<domain>) and a port the sandbox serves, through the API node.
    const envd = await viaHostName(a, `49983-${sbx.sandboxId}.${E2B_DOMAIN}`, "GET", "/files?path=/home/user/e2b.txt", {
      "x-access-token": key,
    });
    assert.equal(envd.status, 200, envd.body);
    assert.equal(envd.body, "through the API node");
    await sbx.commands.run("cd /home/user && python3 -m http.server 8123 >/dev/null 2>&1", { background: true });
    await sbx.commands.run(
      "for i in $(seq 100); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8123)).close()' 2>/dev/null && exit 0; sleep 0.1; done; exit 1",
    );
    const port = await viaHostName(a, `8123-${sbx.sandboxId}.${E2B_DOMAIN}`, "GET", "/e2b.txt", { "x-access-token": key });
    assert.equal(port.status, 200, port.body);
    assert.equal(port.body, "through the API node");

    // Killed through the API node, by the E2B API.
    process.env.E2B_API_URL = `${a.url}/e2b`;
    assert.equal(await Sandbox.kill(sbx.sandboxId), true);
    const got = await call(other)<{ status: string }>("GET", `/v1/agents/sandboxes/${sbx.sandboxId}`);
    assert.equal(got.body.status, "terminated");
  } finally {
    delete process.env.E2B_API_URL;
    delete process.env.E2B_SANDBOX_URL;
    delete process.env.E2B_API_KEY;
  }
});

test("a create through the API node lands on an executor; runs and files through any node reach it", async () => {
  const a = nodes.a as TestServer;
  const id = await createSandbox(call(a));
  const owner = await ownerOf(id);
  assert.ok(owner === "node-b" || owner === "node-c", owner);
  const other = owner === "node-b" ? (nodes.c as TestServer) : (nodes.b as TestServer);

  assert.equal(await pythonStdout(call(a), id, "print(6 * 7)"), "42\n");
  assert.equal(await pythonStdout(call(other), id, "import socket; print(socket.gethostname() != '')"), "True\n");
  const write = await call(a)("POST", `/v1/agents/sandboxes/${id}/files/write`, { path: "/home/user/x.txt", content: "hello" });
  assert.equal(write.status, 200, JSON.stringify(write.body));
  const read = await call(other)<{ content: string }>("POST", `/v1/agents/sandboxes/${id}/files/read`, { path: "/home/user/x.txt" });
  assert.equal(read.status, 200, JSON.stringify(read.body));
  assert.equal(read.body.content, "hello");
  const got = await call(a)<{ sandbox_id: string; status: string }>("GET", `/v1/agents/sandboxes/${id}`);
  assert.equal(got.body.status, "running");

  // A streamed upload and download of 8 MiB through the API node, byte for byte.
  const bytes = crypto.randomBytes(8 * 2 ** 20);
  const form = new FormData();
  form.append("file", new Blob([bytes]), "blob.bin");
  const up = await fetch(`${a.url}/v1/agents/sandboxes/${id}/files/upload?path=/home/user/blob.bin`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  assert.equal(up.status, 200, await up.clone().text());
  const down = await fetch(`${a.url}/v1/agents/sandboxes/${id}/download?path=/home/user/blob.bin`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(down.status, 200);
  assert.ok(Buffer.from(await down.arrayBuffer()).equals(bytes));

  // A streamed run through the API node: its events arrive as the program writes them.
  const stream = await sse({ url: a.url, key }, "POST", `/v1/agents/sandboxes/${id}/code/run`, {
    language: "python",
    stream: true,
    code: "import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second', flush=True)",
  });
  assert.equal(stream.status, 200);
  const first = stream.events.find((e) => e.event === "stdout" && JSON.stringify(e.data).includes("first"));
  const end = stream.events.find((e) => e.event === "end");
  assert.ok(first && end, JSON.stringify(stream.events));
  assert.ok(end.at - first.at > 1000, "streamed as it ran, not buffered");

  // A WebSocket (an Upgrade to a port of the sandbox) through the API node: relayed to the owner, both ways.
  // Serves connections one after another: the readiness probe below connects and leaves at once.
  const echo = [
    "import socket",
    "srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)",
    "srv.bind(('127.0.0.1', 8765)); srv.listen(4)",
    "while True:",
    "    c, _ = srv.accept(); head = b''",
    "    while b'\\r\\n\\r\\n' not in head:",
    "        part = c.recv(4096)",
    "        if not part: break",
    "        head += part",
    "    if b'\\r\\n\\r\\n' not in head:",
    "        c.close(); continue",
    "    c.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n')",
    "    while True:",
    "        d = c.recv(4096)",
    "        if not d: break",
    "        c.sendall(d)",
    "    c.close()",
    "",
  ].join("\n");
  const wrote = await call(a)("POST", `/v1/agents/sandboxes/${id}/files/write`, { path: "/home/user/echo.py", content: echo });
  assert.equal(wrote.status, 200, JSON.stringify(wrote.body));
  const bg = await call(a)("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "python3 /home/user/echo.py", background: true });
  assert.ok(bg.status < 300, JSON.stringify(bg.body));
  const listening = await call(a)<{ exit_code: number }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
    command:
      "for i in $(seq 100); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8765)).close()' 2>/dev/null && exit 0; sleep 0.1; done; exit 1",
    timeout: 20_000,
  });
  assert.equal(listening.body.exit_code, 0);
  const ws = net.connect(a.port, "127.0.0.1");
  await new Promise((r) => ws.once("connect", r));
  let echoed = "";
  ws.on("data", (d) => {
    echoed += d.toString("latin1");
  });
  ws.write(
    `GET /v1/agents/sandboxes/${id}/ports/8765/ws HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
      "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
  );
  await until("the upgrade's answer", 10_000, async () => (echoed.includes("\r\n\r\n") ? true : undefined));
  assert.match(echoed, /^HTTP\/1\.1 101 /);
  echoed = "";
  ws.write("ping-123");
  await until("the echo", 10_000, async () => (echoed.includes("ping-123") ? true : undefined));
  ws.destroy();

  // A request that claims to come from a node without the secret is refused.
  const forged = await fetch(`${a.url}/v1/agents/sandboxes/${id}`, {
    headers: {
      authorization: `Bearer ${key}`,
      "x-agentbox-node": "node-b",
      "x-agentbox-node-time": String(Date.now()),
      "x-agentbox-node-sig": "x",
    },
  });
  assert.equal(forged.status, 401);

  const killed = await call(a)("DELETE", `/v1/agents/sandboxes/${id}`);
  assert.equal(killed.status, 200, JSON.stringify(killed.body));
  assert.equal((await call(other)<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`)).body.status, "terminated");
});

test("a client calling every few seconds: past the API node's cached route its runs are still relayed, not taken through Fastify", async () => {
  const a = nodes.a as TestServer;
  const id = await createSandbox(call(a));
  /** The runs the API node's own Fastify answered or forwarded (relayed ones are counted by their owner only). */
  const runsCounted = async () => {
    const text = await (await fetch(`${a.url}/metrics`)).text();
    let n = 0;
    for (const m of text.matchAll(/^agentbox_http_requests_total\{[^}]*code\/run[^}]*\} (\d+)/gm)) n += Number(m[1]);
    return n;
  };
  const pastTheCache = () => new Promise((r) => setTimeout(r, 2200));
  // The first run: its route is not known to the API node yet, so its hook reads it (counted there).
  assert.equal(await pythonStdout(call(a), id, "print(1)"), "1\n");
  const counted = await until("the first run counted by the API node", 5000, async () => {
    const n = await runsCounted();
    return n > 0 ? n : undefined;
  });
  // Past the 2 s the route is cached: read again before Fastify, and relayed (not counted here).
  await pastTheCache();
  assert.equal(await pythonStdout(call(a), id, "print(6 * 7)"), "42\n");
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await runsCounted(), counted);
  // A wrong key past the cache: refused all the same (by the owner).
  await pastTheCache();
  const wrong = await client({ url: a.url, key: "test_wrong" })("POST", `/v1/agents/sandboxes/${id}/code/run`, {
    language: "python",
    code: "print(1)",
  });
  assert.equal(wrong.status, 401, JSON.stringify(wrong.body));
  // Ended: past the cache the read finds no route, and Fastify answers from the records.
  assert.equal((await call(a)("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  await pastTheCache();
  const gone = await call(a)<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`);
  assert.equal(gone.status, 200, JSON.stringify(gone.body));
  assert.equal(gone.body.status, "terminated");
});

test("a key revoked through one node is refused by another within a second, and its streams end", async (t) => {
  const a = nodes.a as TestServer;
  const b = nodes.b as TestServer;
  const made = await admin(a)<{ id: string; key: string }>("POST", "/v1/admin/keys", { name: "revoked-across-nodes" });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const onB = client({ url: b.url, key: made.body.key });
  // Known (and so cached) on B first.
  assert.equal((await onB("GET", "/v1/agents/sandboxes")).status, 200);
  assert.equal((await onB("GET", "/v1/agents/sandboxes")).status, 200);
  // A stream of that key, forwarded through the API node to the sandbox's executor, open while it is revoked.
  const sandbox = await createSandbox(client({ url: a.url, key: made.body.key }));
  let started: () => void = () => {};
  const running = new Promise<void>((resolve) => {
    started = resolve;
  });
  const stream = sse(
    { url: a.url, key: made.body.key },
    "POST",
    `/v1/agents/sandboxes/${sandbox}/code/run`,
    { language: "python", stream: true, code: "import time\nprint('started', flush=True)\ntime.sleep(60)" },
    {
      stopWhen: (e) => {
        if (e.event === "stdout") started();
        return false;
      },
    },
  );
  await running;
  // The API node now has the sandbox's route cached: its next requests for it are relayed before
  // Fastify, without a key lookup there; the owner's check must still refuse a revoked key.
  const onA = client({ url: a.url, key: made.body.key });
  assert.equal((await onA("GET", `/v1/agents/sandboxes/${sandbox}`)).status, 200);
  const revoked = await admin(a)("DELETE", `/v1/admin/keys/${made.body.id}`);
  assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
  const start = Date.now();
  const elapsed = await until("the revocation on node B", 5000, async () =>
    (await onB("GET", "/v1/agents/sandboxes")).status === 401 ? Date.now() - start : undefined,
  );
  t.diagnostic(`refused by node B ${elapsed} ms after the revocation`);
  assert.ok(elapsed < 1000, `refused by node B ${elapsed} ms after the revocation`);
  assert.equal((await onA("GET", `/v1/agents/sandboxes/${sandbox}`)).status, 401);
  // The open stream ended too (well before the program's 60 s), with the reason.
  const ended = await stream;
  const last = ended.events.at(-1);
  assert.equal(last?.event, "end", JSON.stringify(ended.events));
  assert.equal((last?.data as { error?: { code: string } } | undefined)?.error?.code, "unauthorized");
  await admin(a)("DELETE", `/v1/admin/sandboxes/${sandbox}`);
});

test("a tenant suspended or given a quota through one node is so on the others at once", async () => {
  const a = nodes.a as TestServer;
  const c = nodes.c as TestServer;
  const made = await admin(a)<{ key: string }>("POST", "/v1/admin/keys", { name: "suspended-across-nodes", tenant_id: "t-cluster" });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const onC = client({ url: c.url, key: made.body.key });
  assert.equal((await onC("GET", "/v1/agents/sandboxes")).status, 200);
  assert.equal((await admin(a)("POST", "/v1/admin/tenants/t-cluster/suspend")).status, 200);
  await until("the suspension on node C", 1000, async () => ((await onC("GET", "/v1/agents/sandboxes")).status === 403 ? true : undefined));
  assert.equal((await admin(a)("POST", "/v1/admin/tenants/t-cluster/resume")).status, 200);
  await until("the resumption on node C", 1000, async () => ((await onC("GET", "/v1/agents/sandboxes")).status === 200 ? true : undefined));
  // A quota set through node A holds on the executor that would run the sandbox.
  assert.equal((await admin(a)("PUT", "/v1/admin/tenants/t-cluster", { max_sandboxes: 0 })).status, 200);
  await until("the quota on node C", 1000, async () => {
    const res = await onC<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    if (res.status === 201) await admin(a)("DELETE", `/v1/admin/sandboxes/${res.body.sandbox_id}`);
    return res.status === 429 ? true : undefined;
  });
});

test("a key's rate limit holds across nodes", async () => {
  const a = nodes.a as TestServer;
  const made = await admin(a)<{ key: string }>("POST", "/v1/admin/keys", { name: "limited", rate_limit_per_minute: 10 });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  let ok = 0;
  let limited = 0;
  for (let i = 0; i < 8; i++) {
    for (const node of [nodes.b as TestServer, nodes.c as TestServer]) {
      const res = await client({ url: node.url, key: made.body.key })("GET", "/v1/agents/sandboxes");
      if (res.status === 200) ok++;
      else if (res.status === 429) limited++;
      else assert.fail(`unexpected ${res.status}`);
    }
  }
  assert.equal(ok, 10);
  assert.equal(limited, 6);
});

test("a killed executor's sandboxes end with node_lost once, in time; the other node's keep running", async (t) => {
  const a = nodes.a as TestServer;
  // Placed by load: once a create is in the view (a heartbeat later), the next goes to the other
  // executor, unless the machine's free memory (which other processes change) moved a lot meanwhile.
  const byNode = new Map<string, string>();
  for (let i = 0; i < 6 && byNode.size < 2; i++) {
    const id = await createSandbox(call(a));
    byNode.set(await ownerOf(id), id);
    await new Promise((r) => setTimeout(r, 1500));
  }
  assert.deepEqual([...byNode.keys()].sort(), ["node-b", "node-c"], "both executors got sandboxes");
  const lost = byNode.get("node-b") as string;
  const kept = byNode.get("node-c") as string;
  const victim = nodes.b as TestServer;

  await victim.crash();
  const killedAt = Date.now();
  const endedIn = await until("the lost sandbox's end", 20_000, async () => {
    const res = await call(a)<{ status: string }>("GET", `/v1/agents/sandboxes/${lost}`);
    return res.status === 200 && res.body.status === "failed" ? Date.now() - killedAt : undefined;
  });
  t.diagnostic(`the lost sandbox ended ${endedIn} ms after the kill (lease ${LEASE_MS} ms)`);
  // The lease plus 2 s, and slack for a busy machine.
  assert.ok(endedIn < LEASE_MS + 2000 + 3000, `ended ${endedIn} ms after the kill`);
  const events = await sandboxEvents(call(a), lost);
  const ends = events.body.filter((e) => e.type === "ended");
  assert.equal(ends.length, 1, JSON.stringify(events.body));
  assert.equal(ends[0]?.reason, "node_lost");
  // Requests for it get its end, not a hang.
  const run = await call(a)("POST", `/v1/agents/sandboxes/${lost}/code/run`, { language: "python", code: "print(1)" });
  assert.ok(run.status >= 400, JSON.stringify(run.body));

  assert.equal((await nodeList(a)).find((n) => n.id === "node-b")?.state, "lost");
  assert.equal(await pythonStdout(call(a), kept, "print('still here')"), "still here\n");
  // Creates go to the executor that is left.
  const third = await createSandbox(call(a));
  assert.equal(await ownerOf(third), "node-c");
  // Nothing ends twice: a few more sweeps later there is still one end.
  await new Promise((r) => setTimeout(r, LEASE_MS));
  assert.equal((await sandboxEvents(call(a), lost)).body.filter((e) => e.type === "ended").length, 1);
});

test("a frozen executor that comes back stops its orphaned sandboxes and joins under a new epoch", async () => {
  const a = nodes.a as TestServer;
  const c = nodes.c as TestServer;
  const id = await createSandbox(call(a));
  assert.equal(await ownerOf(id), "node-c");
  const epochBefore = (await nodeList(a)).find((n) => n.id === "node-c")?.epoch ?? 0;
  // Marks the sandbox's files so that the test can tell whether the old process still serves it.
  assert.equal(await pythonStdout(call(a), id, "open('/home/user/mark', 'w').write('x'); print('ok')"), "ok\n");

  c.process.kill("SIGSTOP");
  try {
    await until("the frozen node's sandbox ended", 20_000, async () => {
      const res = await call(a)<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`);
      return res.status === 200 && res.body.status === "failed" ? true : undefined;
    });
  } finally {
    c.process.kill("SIGCONT");
  }
  const back = await until("node C's new epoch", 20_000, async () => {
    const n = (await nodeList(a)).find((x) => x.id === "node-c");
    return n && n.state === "up" && n.epoch > epochBefore ? n : undefined;
  });
  assert.ok(back.epoch > epochBefore);
  // It serves the sandbox no more, directly or through another node, and no second end was recorded.
  const direct = await call(c)("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "python", code: "print(1)" });
  assert.ok(direct.status >= 400, JSON.stringify(direct.body));
  const ends = (await sandboxEvents(call(a), id)).body.filter((e) => e.type === "ended");
  assert.equal(ends.length, 1);
  assert.equal(ends[0]?.reason, "node_lost");
  assert.equal(back.live_sandboxes, 0);
});

test("a drained node takes no new sandboxes and leaves by itself once its sandboxes have ended", async () => {
  const a = nodes.a as TestServer;
  const c = nodes.c as TestServer;
  // node-b is lost: node-c, the executor left, runs this one.
  const live = await createSandbox(call(a));
  assert.equal(await ownerOf(live), "node-c");
  const drained = await admin(a)<NodeBody>("POST", "/v1/admin/nodes/node-c/drain");
  assert.equal(drained.status, 200, JSON.stringify(drained.body));
  assert.equal(drained.body.state, "draining");
  assert.equal((await admin(a)("POST", "/v1/admin/nodes/no-such-node/drain")).status, 404);
  // node-b is lost and node-c draining: no executor takes creates (once the API node's view has it).
  const refused = await until("a create refused", 10_000, async () => {
    const res = await call(a)("POST", "/v1/agents/sandboxes", {});
    if (res.status === 201) await admin(a)("DELETE", `/v1/admin/sandboxes/${(res.body as { sandbox_id: string }).sandbox_id}`);
    return res.status === 503 ? res : undefined;
  });
  assert.equal((refused.body as { error: { code: string } }).error.code, "at_capacity");
  assert.ok(refused.headers.get("retry-after"));
  // Not even one sent to it directly by a client, once its own heartbeat has read the drain.
  await until("a create sent to the draining node refused", 10_000, async () => {
    const res = await call(c)("POST", "/v1/agents/sandboxes", {});
    if (res.status === 201) await admin(a)("DELETE", `/v1/admin/sandboxes/${(res.body as { sandbox_id: string }).sandbox_id}`);
    return res.status === 503 ? res : undefined;
  });

  // While its sandbox lives it stays, draining, and serves it (a few heartbeats later still).
  await new Promise((r) => setTimeout(r, 2500));
  assert.equal((await nodeList(a)).find((n) => n.id === "node-c")?.state, "draining");
  assert.equal(await pythonStdout(call(a), live, "print('still served')"), "still served\n");

  // Its last sandbox ends: it leaves by itself, within a heartbeat or so, as drained (never lost).
  assert.equal((await call(a)("DELETE", `/v1/agents/sandboxes/${live}`)).status, 200);
  const gone = await until("node-c drained", 15_000, async () => {
    const n = (await nodeList(a)).find((x) => x.id === "node-c");
    return n?.state === "drained" ? n : undefined;
  });
  assert.equal(gone.live_sandboxes, 0);
  assert.equal(await redisClient.get("abx:lease:node-c"), null);
  // Every node sees it so, itself included, and later too (no node takes it for lost).
  await new Promise((r) => setTimeout(r, LEASE_MS + 1000));
  for (const via of [a, c]) assert.equal((await nodeList(via)).find((n) => n.id === "node-c")?.state, "drained");
  const ends = (await sandboxEvents(call(a), live)).body.filter((e) => e.type === "ended");
  assert.deepEqual(
    ends.map((e) => e.reason),
    ["killed"],
  );
});
