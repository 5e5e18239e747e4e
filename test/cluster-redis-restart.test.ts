// Redis restarted under light load: a cluster (an API node and an executor on a private Redis)
// keeps answering while Redis is killed and started again empty, loses nothing durable (sandboxes,
// their files, records, events, keys), and rebuilds what Redis held: both nodes' leases and
// records, the sandbox's route, the forwarding through the API node. Rate limits fail open while
// Redis is away (docs/cluster.md says why).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Redis } from "ioredis";
import { createSandbox, pythonStdout, sandboxEvents } from "./helpers/api.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { client, type TestServer } from "./helpers/server.js";

const LEASE_MS = 3000;
let cluster: TestCluster;
let api: TestServer;
let executor: TestServer;

before(async () => {
  cluster = await startCluster({ leaseMs: LEASE_MS });
  api = await cluster.node("node-api", "api");
  executor = await cluster.node("node-exec", "executor");
  // The API node places creates from its view of the nodes, a heartbeat old.
  await upOnApiNode(["node-api", "node-exec"], 20_000);
});

/** Waits until the API node sees exactly these nodes up; their ids. */
async function upOnApiNode(ids: string[], timeoutMs: number): Promise<void> {
  const admin = client({ url: api.url, key: cluster.adminKey });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await admin<{ nodes: { id: string; state: string }[] }>("GET", "/v1/admin/nodes");
    const up = res.status === 200 ? res.body.nodes.filter((n) => n.state === "up").map((n) => n.id) : [];
    if (JSON.stringify(up.sort()) === JSON.stringify(ids)) return;
    assert.ok(Date.now() < deadline, `nodes up: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

after(async () => {
  await cluster?.dispose();
});

interface Answer {
  op: string;
  down: boolean;
  status: number;
  code?: string;
}

test("Redis killed and started again empty: nothing durable lost, answers throughout, membership and routes back", async (t) => {
  const call = client({ url: api.url, key: cluster.key });
  const admin = client({ url: api.url, key: cluster.adminKey });
  const sandbox = await createSandbox(call);
  const kept = await call("POST", `/v1/agents/sandboxes/${sandbox}/files/write`, { path: "/home/user/kept.txt", content: "kept" });
  assert.equal(kept.status, 200, JSON.stringify(kept.body));
  // A key with a small per-minute limit: while Redis is away its counter cannot be read.
  const limited = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "limited", rate_limit_per_minute: 1000 });
  assert.equal(limited.status, 201, JSON.stringify(limited.body));

  const answers: Answer[] = [];
  const created: string[] = [];
  let down = false;
  let running = true;
  const note = (op: string, res: { status: number; body: unknown }) =>
    answers.push({ op, down, status: res.status, code: (res.body as { error?: { code?: string } })?.error?.code });
  // Light load through the API node: a run in the sandbox (forwarded to the executor), its record,
  // a list with the limited key, and now and then a create.
  const load = (async () => {
    for (let i = 0; running; i++) {
      try {
        note("run", await call("POST", `/v1/agents/sandboxes/${sandbox}/code/run`, { language: "python", code: "print(1)" }));
        note("get", await call("GET", `/v1/agents/sandboxes/${sandbox}`));
        note("limited list", await client({ url: api.url, key: limited.body.key })("GET", "/v1/agents/sandboxes"));
        if (i % 5 === 0) {
          const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
          note("create", res);
          if (res.status === 201) created.push(res.body.sandbox_id);
        }
      } catch (err) {
        answers.push({ op: "no answer", down, status: 0, code: String((err as Error).cause ?? err) });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  await new Promise((r) => setTimeout(r, 1000));
  down = true;
  await cluster.redis.halt();
  // Longer than a lease: the nodes cannot renew meanwhile.
  await new Promise((r) => setTimeout(r, LEASE_MS + 1000));
  await cluster.redis.start();
  down = false;
  const backAt = Date.now();

  // Membership and routes come back: both nodes up under their lease, the sandbox's route rewritten,
  // and a run forwarded through the API node answers again.
  const redis = new Redis(cluster.redis.url);
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const nodes = await admin<{ nodes: { id: string; state: string }[] }>("GET", "/v1/admin/nodes");
      const up = nodes.status === 200 && nodes.body.nodes.filter((n) => n.state === "up").map((n) => n.id);
      const route = await redis.get(`abx:route:${sandbox}`);
      const leases = await Promise.all(["node-api", "node-exec"].map((id) => redis.get(`abx:lease:${id}`)));
      const run = await call<{ stdout: string }>("POST", `/v1/agents/sandboxes/${sandbox}/code/run`, {
        language: "python",
        code: "print(2)",
      });
      if (up && up.length === 2 && route?.startsWith("node-exec ") && leases.every((l) => l !== null) && run.status === 200) break;
      assert.ok(
        Date.now() < deadline,
        `not back: nodes ${JSON.stringify(nodes.body)}, route ${route}, leases ${leases}, run ${run.status}`,
      );
      await new Promise((r) => setTimeout(r, 200));
    }
    t.diagnostic(`membership, route and forwarding back ${Date.now() - backAt} ms after Redis`);
  } finally {
    redis.disconnect();
  }
  await new Promise((r) => setTimeout(r, 1000));
  running = false;
  await load;
  const tally = new Map<string, number>();
  for (const a of answers)
    tally.set(
      `${a.down ? "down" : "up"} ${a.op} ${a.status}${a.code ? ` ${a.code}` : ""}`,
      (tally.get(`${a.down ? "down" : "up"} ${a.op} ${a.status}${a.code ? ` ${a.code}` : ""}`) ?? 0) + 1,
    );
  t.diagnostic([...tally].map(([k, v]) => `${k}: ${v}`).join(", "));

  // It answered throughout: every answer a success or a 503 (a node that cannot renew its lease
  // stops serving its sandboxes for a while, by design), never a 500 or a dropped connection.
  for (const a of answers) assert.ok(a.status < 300 || a.status === 503, JSON.stringify(a));
  assert.ok(
    answers.some((a) => a.down && a.op === "limited list" && a.status === 200),
    "rate-limited requests went through while Redis was away (fail open)",
  );
  assert.ok(answers.filter((a) => a.down).length > 0, "the load ran during the outage");

  // Nothing durable lost: the sandbox runs on, with its file and without an end; every create acknowledged is there.
  assert.equal(await pythonStdout(call, sandbox, "print(open('/home/user/kept.txt').read())"), "kept\n");
  const events = await sandboxEvents(call, sandbox);
  assert.deepEqual(
    events.body.map((e) => e.type),
    ["created"],
  );
  for (const id of created) {
    const got = await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`);
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body.status, "running", id);
  }
  assert.equal((await client({ url: executor.url, key: cluster.key })("GET", `/v1/agents/sandboxes/${sandbox}`)).status, 200);
  for (const node of [api, executor]) assert.equal(node.process.exitCode, null);
});
