// End to end: what one tenant's template builds may hold of the service. A tenant is held to its
// share of the build queue (AGENTBOX_TEMPLATE_BUILDS_PER_TENANT) and another tenant's build starts
// before its waiting ones; DELETE /templates/builds/{id} cancels a waiting and a running build
// (its step's process killed); a build's log is bounded (the dropped lines said), freed from memory
// after its end and grace, still served from disk, and gone with its template; an image layer of
// more files than AGENTBOX_TEMPLATE_MAX_FILES, or steps that make them, fail the build naming the
// limit; a build's base copy is charged to a memory cgroup of its own. Tiny images from a local
// registry (test/helpers/oci-image.ts); one build at a time.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError } from "./helpers/api.js";
import { buildAndPush, haveImageTools, startTemplateRegistry, type TemplateRegistry } from "./helpers/oci-image.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { sse } from "./helpers/sse.js";

interface Status {
  build_id: string;
  template_id: string;
  status: string;
  error: string | null;
  started_at: string | null;
}

const MAX_FILES = 20000;
let server: TestServer;
let call: ReturnType<typeof client>;
let other: ReturnType<typeof client>;
let images: TemplateRegistry;
/** A template of the Python image: steps run on it (its /bin/sh). */
let baseId: string;

before(async () => {
  if (!haveImageTools) return;
  images = await startTemplateRegistry();
  server = await startServer({
    env: {
      ...images.env,
      AGENTBOX_TEMPLATE_BUILD_TIMEOUT_S: "120",
      AGENTBOX_TEMPLATE_PARALLEL_BUILDS: "1",
      AGENTBOX_TEMPLATE_BUILDS_PER_TENANT: "2",
      AGENTBOX_TEMPLATE_LOG_KB: "16",
      AGENTBOX_TEMPLATE_LOG_GRACE_S: "1",
      AGENTBOX_TEMPLATE_MAX_FILES: String(MAX_FILES),
    },
  });
  call = client(server);
  const admin = client({ url: server.url, key: server.adminKey });
  const key = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "other", tenant_id: "tenant-builds-b" });
  assert.equal(key.status, 201, JSON.stringify(key.body));
  other = client({ url: server.url, key: key.body.key });
  const base = await waitFor(await start(call, { name: "base", docker_image: images.python }));
  assert.equal(base.status, "completed", JSON.stringify(base));
  baseId = base.template_id;
});

after(async () => {
  await server?.dispose();
  await images?.stop();
});

async function start(c: typeof call, body: Record<string, unknown>): Promise<Status> {
  const res = await c<Status>("POST", "/v1/agents/templates/build", body);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body;
}

async function status(c: typeof call, id: string): Promise<Status> {
  const s = await c<Status>("GET", `/v1/agents/templates/builds/${id}/status`);
  assert.equal(s.status, 200, JSON.stringify(s.body));
  return s.body;
}

/** Polls until `done` says so (120 s at most); returns the last status. */
async function waitFor(b: Status, done = (s: Status) => ["completed", "failed", "cancelled"].includes(s.status), c = call) {
  for (let i = 0; i < 600; i++) {
    const s = await status(c, b.build_id);
    if (done(s)) return s;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`build ${b.build_id} did not get there in 120 s`);
}

/** Whether a process whose command line holds `marker` runs on this machine. */
function running(marker: string): boolean {
  try {
    return execFileSync("pgrep", ["-f", marker], { encoding: "utf8" }).trim() !== "";
  } catch {
    return false;
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  for (const end = Date.now() + ms; ; ) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  assert.ok(m, `${name} is in /metrics`);
  return Number(m[1]);
}

const skip = !haveImageTools && "skopeo, umoci or docker-registry missing";

describe("the build queue: a tenant's share, fairness and cancel", { skip }, () => {
  test("a tenant's builds past its cap are 429; another tenant's starts before its waiting ones; DELETE cancels a running and a waiting build", async () => {
    // A's first build runs a step that sleeps (the image has python, no sleep; a marker no other test's process has).
    const marker = "time.sleep.47.25";
    const step = { type: "run", args: ["python3 -c 'import time; time.sleep(47.25)'"] };
    const a1 = await start(call, { name: "a1", template_id: baseId, build_steps: [step] });
    await until("a1's step runs", () => running(marker), 60_000);
    const a2 = await start(call, { name: "a2", docker_image: images.bare });
    // A holds its share (one running, one waiting): its next is refused, clearly.
    const refused = assertError(
      await call("POST", "/v1/agents/templates/build", { name: "a3", docker_image: images.bare }),
      429,
      "quota_exceeded",
    );
    assert.match(refused.error.message, /2 template builds waiting or running.*AGENTBOX_TEMPLATE_BUILDS_PER_TENANT/);
    const b1 = await start(other, { name: "b1", docker_image: images.bare });
    // Another tenant's build is not A's to cancel.
    assertError(await other("DELETE", `/v1/agents/templates/builds/${a2.build_id}`), 404, "not_found");
    assertError(await call("DELETE", "/v1/agents/templates/builds/bld_nothing"), 404, "not_found");

    // The running build: its step's process is killed, it ends cancelled.
    const t0 = Date.now();
    const cancelled = await call<Status>("DELETE", `/v1/agents/templates/builds/${a1.build_id}`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.status, "cancelled");
    assert.match(cancelled.body.error ?? "", /cancelled by request/);
    assert.ok(Date.now() - t0 < 30_000, "the cancel answered once the build ended");
    await until("a1's step is killed", () => !running(marker), 10_000);

    // B's build goes next, before A's waiting one.
    const b1Started = await waitFor(b1, (s) => s.status !== "pending", other);
    assert.notEqual(b1Started.status, "failed", JSON.stringify(b1Started));
    assert.equal((await status(call, a2.build_id)).status, "pending", "A's waiting build is still waiting");

    // The waiting build: out of the queue, never started.
    const c2 = await call<Status>("DELETE", `/v1/agents/templates/builds/${a2.build_id}`);
    assert.equal(c2.status, 200, JSON.stringify(c2.body));
    assert.equal(c2.body.status, "cancelled");
    assert.equal(c2.body.started_at, null);
    assertError(await call("DELETE", `/v1/agents/templates/builds/${a2.build_id}`), 409, "conflict");

    // What they held is given back: their templates are failed and deleted, A may build again.
    for (const b of [a1, a2]) {
      const t = await call<{ status: string }>("GET", `/v1/agents/templates/${b.template_id}`);
      assert.equal(t.body.status, "failed");
      assert.equal((await call("DELETE", `/v1/agents/templates/${b.template_id}`)).status, 204);
    }
    assert.equal((await waitFor(b1, undefined, other)).status, "completed");
    const a3 = await start(call, { name: "a3", docker_image: images.bare });
    assert.equal((await waitFor(a3)).status, "completed");
  });
});

describe("build logs", { skip }, () => {
  test("a long log keeps its tail and says what it dropped; it leaves memory after the grace, is served from disk, and goes with its template", async () => {
    const loop = 'i=0; while [ $i -lt 3000 ]; do echo "line $i of a long build log, padded to be long enough"; i=$((i+1)); done; exit 3';
    const b = await waitFor(await start(call, { name: "loud", template_id: baseId, build_steps: [{ type: "run", args: [loop] }] }));
    assert.equal(b.status, "failed", JSON.stringify(b));
    const read = async () => {
      const got = await sse(server, "GET", `/v1/agents/templates/builds/${b.build_id}/logs`);
      assert.equal(got.status, 200, JSON.stringify(got.json));
      return got.events;
    };
    const first = await read();
    const lines = first.filter((e) => e.event === "log").map((e) => e.data as { n: number; line: string });
    assert.equal(lines[0]?.n, -1);
    assert.match(lines[0]?.line ?? "", /^\[\d+ earlier line\(s\), \d+ bytes, not kept: .*16 KiB \(AGENTBOX_TEMPLATE_LOG_KB\)\]$/);
    assert.ok(lines.length < 400, `${lines.length} lines kept of over 3000`);
    assert.ok(
      lines.some((l) => /line 2999 of/.test(l.line)),
      "the tail is kept",
    );
    assert.match(JSON.stringify(first.at(-1)), /"status":"failed"/);

    // Freed from memory once the grace has passed (nothing else builds now).
    await until("no build log is held in memory", async () => (await metric("agentbox_template_build_logs_in_memory")) === 0, 15_000);
    assert.equal(await metric("agentbox_template_build_log_bytes"), 0);
    // ...and still served, from the node's disk, as it was.
    assert.deepEqual(
      (await read()).map((e) => [e.event, e.data]),
      first.map((e) => [e.event, e.data]),
    );
    const file = path.join(images.templateDir, "logs", `${b.build_id}.json`);
    assert.ok(fs.existsSync(file));
    assert.ok(fs.statSync(file).size < 64 * 1024, "the saved copy is bounded too");
    assert.equal((await call("DELETE", `/v1/agents/templates/${b.template_id}`)).status, 204);
    assert.ok(!fs.existsSync(file), "gone with its template");
    assert.equal((await sse(server, "GET", `/v1/agents/templates/builds/${b.build_id}/logs`)).status, 404);
  });
});

describe("file-count and memory limits of builds", { skip }, () => {
  test("an image layer of more files than AGENTBOX_TEMPLATE_MAX_FILES fails its build before it is unpacked", async () => {
    const image = buildAndPush(images.registry.host, "test/many-files", (rootfs) => {
      const dir = path.join(rootfs, "many");
      fs.mkdirSync(dir);
      for (let i = 0; i < MAX_FILES + 500; i++) fs.writeFileSync(path.join(dir, String(i)), "");
    });
    const s = await waitFor(await start(call, { name: "many", docker_image: image }));
    assert.equal(s.status, "failed");
    assert.match(
      s.error ?? "",
      /The image's layers hold more than 20000 files, directories and links, the limit \(AGENTBOX_TEMPLATE_MAX_FILES\)/,
    );
    assert.equal((await call("DELETE", `/v1/agents/templates/${s.template_id}`)).status, 204);
  });

  test("build steps that make more files than the limit fail the build naming it", async () => {
    const touch = `cd /opt/marker && i=0; while [ $i -lt ${MAX_FILES + 500} ]; do : > f$i || exit 1; i=$((i+1)); done`;
    const s = await waitFor(await start(call, { name: "many-steps", template_id: baseId, build_steps: [{ type: "run", args: [touch] }] }));
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /step 1 \(run\): the build's result holds more than 20000 files.*\(AGENTBOX_TEMPLATE_MAX_FILES\)/);
    assert.equal((await call("DELETE", `/v1/agents/templates/${s.template_id}`)).status, 204);
  });

  test("a build's base copy is charged to a memory cgroup of its own", async () => {
    const s = await waitFor(await start(call, { name: "charged", template_id: baseId, build_steps: [{ type: "run", args: ["true"] }] }));
    assert.equal(s.status, "completed", JSON.stringify(s));
    const got = await sse(server, "GET", `/v1/agents/templates/builds/${s.build_id}/logs`);
    const text = got.events.map((e) => (e.data as { line?: string }).line ?? "").join("\n");
    const base = Number(/copying the base \((\d+) MiB\)/.exec(text)?.[1]);
    const peak = Number(/host-side work peaked at (\d+) MiB in its own memory cgroup/.exec(text)?.[1]);
    assert.ok(base > 10, `the base is ${base} MiB`);
    // The copy's tmpfs pages are charged to the group that wrote them: the build's.
    assert.ok(peak >= base * 0.9, `peak ${peak} MiB in the build's group for a base of ${base} MiB`);
    assert.equal((await call("DELETE", `/v1/agents/templates/${s.template_id}`)).status, 204);
  });
});
