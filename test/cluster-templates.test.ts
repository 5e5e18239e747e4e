// Tenants' own templates on every executor of a cluster (a private Redis, one SQLite file shared by
// an API node and two executors, each executor with a template directory of its own): a template
// built on executor 1 has its creates placed there while it alone holds it, even when load alone
// would place them on executor 2 (as it does a built-in's); a create made on executor 2 fetches its
// root filesystem from executor 1 (over the signed internal channel, checked against its content
// digest) and runs in it; a damaged copy is refused and nothing of it kept; a template saved from a
// sandbox on executor 2 (its /home/user kept) starts on executor 1 with those files. The internal
// route refuses a request without a node's signature. A build sent to the API node runs on an
// executor, and its status and log are read through every node.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { Redis } from "ioredis";
import { sign } from "../src/cluster/channel-auth.js";
import { pythonStdout } from "./helpers/api.js";
import { until } from "./helpers/leftovers.js";
import { startCluster, type TestCluster } from "./helpers/cluster.js";
import { haveImageTools, startTemplateRegistry, type TemplateRegistry } from "./helpers/oci-image.js";
import { client, type TestServer } from "./helpers/server.js";

const CREATE = "/v1/agents/sandboxes";
const skip = haveImageTools ? false : "skopeo, umoci and docker-registry are not installed";

let images: TemplateRegistry;
let cluster: TestCluster;
let redis: Redis;
let api: TestServer;
let exec1: TestServer;
let exec2: TestServer;
/** Each executor's own template directory (as on separate machines). */
const templateDirs: Record<string, string> = {};
let templateId: string;
let rootfsDigest: string;

const call = (node: TestServer) => client({ url: node.url, key: cluster.key });
const ownerOf = async (id: string) => (await redis.get(`abx:route:${id}`))?.split(" ")[0];

/** A create sent to `node` as if a node had placed it there (signed): made on `node`, not placed again. */
async function createOn(node: TestServer, template: string): Promise<string> {
  const res = await call(node)<{ sandbox_id: string }>("POST", CREATE, { template }, sign(cluster.secret, "placer", "POST", CREATE));
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.sandbox_id;
}

before(async () => {
  if (skip) return;
  images = await startTemplateRegistry();
  cluster = await startCluster({ leaseMs: 15_000 });
  redis = new Redis(cluster.redis.url);
  api = await cluster.node("api", "api", { AGENTBOX_WARM_POOL: "0" });
  const executor = (id: string) => {
    const dir = fs.mkdtempSync(path.join("/var/tmp", `agentbox-templates-${id}-`));
    fs.chmodSync(dir, 0o711);
    templateDirs[id] = dir;
    return cluster.node(id, "executor", { ...images.env, AGENTBOX_TEMPLATE_DIR: dir, AGENTBOX_WARM_POOL: "0" });
  };
  exec1 = await executor("exec-1");
  exec2 = await executor("exec-2");
  const deadline = Date.now() + 60_000;
  for (;;) {
    const nodes = await client({ url: api.url, key: cluster.adminKey })<{ nodes: { roles: string; state: string }[] }>(
      "GET",
      "/v1/admin/nodes",
    );
    if (nodes.body.nodes.filter((n) => n.roles === "executor" && n.state === "up").length === 2) break;
    assert.ok(Date.now() < deadline, "both executors up");
    await new Promise((r) => setTimeout(r, 200));
  }
});

after(async () => {
  redis?.disconnect();
  await cluster?.dispose();
  await images?.stop();
  for (const dir of Object.values(templateDirs)) fs.rmSync(dir, { recursive: true, force: true });
});

test("a template built on executor 1 is placed there while only it holds its files", { skip }, async () => {
  // Sent as if a node had placed the build there (signed): built on executor 1, not placed again.
  const BUILD = "/v1/agents/templates/build";
  const res = await call(exec1)<{ build_id: string; template_id: string }>(
    "POST",
    BUILD,
    { name: "bare", docker_image: images.bare },
    sign(cluster.secret, "placer", "POST", BUILD),
  );
  assert.equal(res.status, 202, JSON.stringify(res.body));
  templateId = res.body.template_id;
  for (let i = 0; ; i++) {
    const s = await call(api)<{ status: string; error: string | null }>("GET", `/v1/agents/templates/builds/${res.body.build_id}/status`);
    if (s.body.status === "completed") break;
    assert.notEqual(s.body.status, "failed", String(s.body.error));
    assert.ok(i < 600, "the build ends");
    await new Promise((r) => setTimeout(r, 200));
  }
  const [digest, ...others] = fs.readdirSync(path.join(templateDirs["exec-1"] as string, "rootfs"));
  assert.ok(digest && others.length === 0, "one root filesystem on executor 1");
  rootfsDigest = digest;
  assert.deepEqual(fs.readdirSync(path.join(templateDirs["exec-2"] as string, "rootfs")), [], "none on executor 2");

  // Executor 1 made busier (three live sandboxes, executor 2 none): by load alone every create now
  // goes to executor 2, as a create of a built-in does...
  const busy = [];
  for (let i = 0; i < 3; i++) busy.push(await createOn(exec1, "python-base-v1"));
  await until("the API node sees executor 1's sandboxes", 30_000, async () => {
    const nodes = await client({ url: api.url, key: cluster.adminKey })<{ nodes: { id: string; live_sandboxes: number }[] }>(
      "GET",
      "/v1/admin/nodes",
    );
    return nodes.body.nodes.find((n) => n.id === "exec-1")?.live_sandboxes === 3 ? true : undefined;
  });
  const builtIn = await call(api)<{ sandbox_id: string }>("POST", CREATE, {});
  assert.equal(builtIn.status, 201, JSON.stringify(builtIn.body));
  assert.equal(await ownerOf(builtIn.body.sandbox_id), "exec-2");
  // ...but the template's, by id and by name, go to executor 1, which holds its files (before,
  // they went to executor 2, which refused them: 503 node_unavailable).
  for (const template of [templateId, "bare", templateId]) {
    const made = await call(api)<{ sandbox_id: string }>("POST", CREATE, { template });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(await ownerOf(made.body.sandbox_id), "exec-1");
    assert.equal(await pythonStdout(call(api), made.body.sandbox_id, "print(open('/opt/marker/MARKER').read().strip())"), "bare-image\n");
    assert.equal((await call(api)("DELETE", `${CREATE}/${made.body.sandbox_id}`)).status, 200);
  }
  for (const id of [...busy, builtIn.body.sandbox_id]) assert.equal((await call(api)("DELETE", `${CREATE}/${id}`)).status, 200);
});

test("the internal route answers only a node of the cluster, on the internal listener only", { skip }, async () => {
  assert.ok(templateId, "built by the test before");
  const route = `/v1/internal/templates/${templateId}/rootfs`;
  const internal = cluster.internalUrl(exec1);
  const bare = await fetch(`${internal}${route}`);
  assert.equal(bare.status, 401);
  const withKey = await fetch(`${internal}${route}`, { headers: { authorization: `Bearer ${cluster.key}` } });
  assert.equal(withKey.status, 401);
  const forged = await fetch(`${internal}${route}`, { headers: sign("not-the-secret", "exec-2", "GET", route) });
  assert.equal(forged.status, 401);
  // The public port has no internal route, signed or not.
  const onPublic = await fetch(`${exec1.url}${route}`, { headers: sign(cluster.secret, "exec-2", "GET", route) });
  assert.equal(onPublic.status, 404);
  assert.equal(onPublic.headers.get("content-type")?.includes("application/x-tar"), false);
  await onPublic.body?.cancel();
  const signed = await fetch(`${internal}${route}`, { headers: sign(cluster.secret, "exec-2", "GET", route) });
  assert.equal(signed.status, 200);
  assert.equal(signed.headers.get("content-type"), "application/x-tar");
  await signed.body?.cancel();
});

test("a copy that does not match the content digest is refused, and nothing of it is kept", { skip }, async () => {
  assert.ok(rootfsDigest, "built by the test before");
  // Its content digest was recorded when executor 1 first served it (the test before); then its
  // tree is damaged on executor 1's disk.
  const marker = path.join(templateDirs["exec-1"] as string, "rootfs", rootfsDigest, "opt/marker/MARKER");
  const original = fs.readFileSync(marker);
  fs.writeFileSync(marker, "damaged\n");
  try {
    const res = await call(exec2)<{ error: { code: string; message: string } }>(
      "POST",
      CREATE,
      { template: templateId },
      sign(cluster.secret, "placer", "POST", CREATE),
    );
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.error.code, "node_unavailable");
    assert.match(res.body.error.message, /exec-1: the root filesystem from node exec-1 does not match its content digest/);
    assert.ok(Number(res.headers.get("retry-after")) > 0, "Retry-After");
    assert.deepEqual(fs.readdirSync(path.join(templateDirs["exec-2"] as string, "rootfs")), [], "nothing adopted");
    assert.deepEqual(fs.readdirSync(path.join(templateDirs["exec-2"] as string, "work")), [], "nothing left unpacked");
  } finally {
    fs.writeFileSync(marker, original);
  }
});

test("executor 2 fetches the template's root filesystem from executor 1 at its first sandbox of it", { skip }, async () => {
  assert.ok(templateId, "built by the test before");
  const ids = await Promise.all([createOn(exec2, templateId), createOn(exec2, "bare")]);
  for (const id of ids) {
    assert.equal(await ownerOf(id), "exec-2");
    const out = await pythonStdout(
      call(api),
      id,
      "import os\nprint(open('/opt/marker/MARKER').read().strip())\nprint(os.path.exists('/usr/bin'))",
    );
    assert.equal(out, "bare-image\nFalse\n");
  }
  // Adopted under the same digest, nothing left in the scratch directory.
  assert.deepEqual(fs.readdirSync(path.join(templateDirs["exec-2"] as string, "rootfs")), [rootfsDigest]);
  assert.deepEqual(fs.readdirSync(path.join(templateDirs["exec-2"] as string, "work")), []);
  for (const id of ids) assert.equal((await call(api)("DELETE", `${CREATE}/${id}`)).status, 200);
});

test("a template saved from a sandbox on executor 2 starts on executor 1 with its /home/user", { skip }, async () => {
  const source = await createOn(exec2, "python-base-v1");
  assert.equal(await ownerOf(source), "exec-2");
  await pythonStdout(call(api), source, "open('/home/user/note.txt', 'w').write('saved on executor 2')");
  const saved = await call(api)<{ id: string }>("POST", `${CREATE}/${source}/template`, { name: "saved" });
  assert.equal(saved.status, 201, JSON.stringify(saved.body));
  const copy = await createOn(exec1, saved.body.id);
  assert.equal(await ownerOf(copy), "exec-1");
  assert.equal(await pythonStdout(call(api), copy, "print(open('/home/user/note.txt').read())"), "saved on executor 2\n");
  for (const id of [source, copy]) assert.equal((await call(api)("DELETE", `${CREATE}/${id}`)).status, 200);
});

test("a build sent to the API node runs on an executor; its status and log are read through every node", { skip }, async () => {
  const res = await call(api)<{ build_id: string; template_id: string }>("POST", "/v1/agents/templates/build", {
    name: "placed",
    docker_image: images.bare,
  });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const buildId = res.body.build_id;
  type Status = { status: string; error: string | null; node_id: string | null };
  const done = await until(
    "the build ends",
    120_000,
    async () => {
      const s = await call(api)<Status>("GET", `/v1/agents/templates/builds/${buildId}/status`);
      assert.equal(s.status, 200, JSON.stringify(s.body));
      assert.notEqual(s.body.status, "failed", String(s.body.error));
      return s.body.status === "completed" ? s.body : undefined;
    },
    300,
  );
  const runner = done.node_id as string;
  assert.ok(runner === "exec-1" || runner === "exec-2", `ran on an executor, not on ${runner}`);
  assert.ok(fs.readdirSync(path.join(templateDirs[runner] as string, "rootfs")).length > 0, "its files on the executor that built it");
  const nodes = { api, "exec-1": exec1, "exec-2": exec2 };
  for (const [name, node] of Object.entries(nodes)) {
    const status = await call(node)<Status>("GET", `/v1/agents/templates/builds/${buildId}/status`);
    assert.equal(status.body.node_id, runner, name);
    // The log is kept by the node that ran the build: every other node forwards there.
    const log = await fetch(`${node.url}/v1/agents/templates/builds/${buildId}/logs`, {
      headers: { authorization: `Bearer ${cluster.key}` },
    });
    const text = await log.text();
    assert.equal(log.status, 200, `${name}: ${text}`);
    assert.match(text, /^event: log$/m, name);
    assert.match(text, /^event: end\ndata: .*"status":"completed"/m, name);
  }
  assert.equal((await call(api)("DELETE", `/v1/agents/templates/${res.body.template_id}`)).status, 204);
});
