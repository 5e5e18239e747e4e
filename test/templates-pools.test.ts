// End to end: a tenant template's warm pool (its sandboxes are started before the creates that take
// them, and the pool empties once the template is idle) and a running sandbox saved as a template
// (POST /v1/agents/sandboxes/{id}/template): the new template's sandboxes run in the same root and
// start with the files the sandbox's /home/user held, for a sandbox of a tenant template and of a
// built-in alike; another tenant can neither save nor use it.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError, createSandbox, pythonStdout } from "./helpers/api.js";
import { haveImageTools, startTemplateRegistry, type TemplateRegistry } from "./helpers/oci-image.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let call: ReturnType<typeof client>;
let images: TemplateRegistry;
let templateId: string;

/** Seconds without a create after which a template's pool empties (short here, to see it happen). */
const IDLE_S = 8;

interface Detail {
  id: string;
  name: string;
  status: string;
  tags: Record<string, string>;
  warm_sandboxes: number;
}

before(async () => {
  if (!haveImageTools) return;
  images = await startTemplateRegistry();
  server = await startServer({ env: { ...images.env, AGENTBOX_TEMPLATE_POOL_IDLE_S: String(IDLE_S) } });
  call = client(server);
  const res = await call<{ build_id: string; template_id: string }>("POST", "/v1/agents/templates/build", {
    name: "pooled",
    docker_image: images.python,
  });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  templateId = res.body.template_id;
  for (let i = 0; ; i++) {
    const s = await call<{ status: string; error: string | null }>("GET", `/v1/agents/templates/builds/${res.body.build_id}/status`);
    if (s.body.status === "completed") break;
    assert.notEqual(s.body.status, "failed", JSON.stringify(s.body));
    assert.ok(i < 600, "the build did not end in 120 s");
    await new Promise((r) => setTimeout(r, 200));
  }
});

after(async () => {
  await server?.dispose();
  await images?.stop();
});

const detail = async (id: string) => {
  const res = await call<Detail>("GET", `/v1/agents/templates/${id}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
};

/** Polls the template until its pool holds `n` sandboxes (generous bound: starts are slow on a busy host). */
async function poolReaches(id: string, n: number, boundS = 60): Promise<void> {
  for (const end = Date.now() + boundS * 1000; ; ) {
    if ((await detail(id)).warm_sandboxes === n) return;
    assert.ok(Date.now() < end, `the pool of ${id} did not reach ${n} in ${boundS} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** When the sandbox's first process started (ms since the epoch, from the kernel's boot time and its start tick). */
async function startedAt(id: string): Promise<number> {
  const out = await pythonStdout(
    call,
    id,
    [
      "import os",
      "ticks = int(open('/proc/1/stat').read().rsplit(')', 1)[1].split()[19])",
      "btime = next(int(l.split()[1]) for l in open('/proc/stat') if l.startswith('btime '))",
      "print(int((btime + ticks / os.sysconf('SC_CLK_TCK')) * 1000))",
    ].join("\n"),
  );
  return Number(out.trim());
}

describe("a template's warm pool", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  test("no pool before the first create; after it one sandbox waits, and the next create takes it", async () => {
    assert.equal((await detail(templateId)).warm_sandboxes, 0);
    const first = await createSandbox(call, { template: templateId });
    await poolReaches(templateId, 1);
    // The pool's sandbox was started before the create below was asked for (by seconds: the test
    // waits), which a cold create's cannot have been.
    await new Promise((r) => setTimeout(r, 2500));
    const askedAt = Date.now();
    const second = await createSandbox(call, { template: templateId });
    assert.ok((await startedAt(second)) < askedAt - 1500, "the second create was not served from the pool");
    // It is the template's sandbox all the same: the image's files, and its own home.
    assert.equal((await pythonStdout(call, second, "print(open('/opt/marker/MARKER').read().strip())")).trim(), "from-the-image");
    await poolReaches(templateId, 1);
    for (const id of [first, second]) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });

  test("an idle template's pool gives its sandboxes back", async () => {
    await poolReaches(templateId, 0, IDLE_S + 60);
  });
});

describe("a sandbox saved as a template", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  test("of a tenant template: same root, the sandbox's files in every new sandbox's /home/user", async () => {
    const source = await createSandbox(call, { template: templateId });
    await pythonStdout(
      call,
      source,
      "import os\nos.makedirs('/home/user/app/lib', exist_ok=True)\nopen('/home/user/app/lib/prepared.py', 'w').write('VALUE = 41 + 1\\n')",
    );
    const res = await call<Detail>("POST", `/v1/agents/sandboxes/${source}/template`, { name: "prepared" });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.status, "ready");
    assert.equal(res.body.name, "prepared");
    assert.equal(res.body.tags.saved_from_sandbox, source);
    // Written after the save: not in the template.
    await pythonStdout(call, source, "open('/home/user/after.txt', 'w').write('later')");
    const copy = await createSandbox(call, { template: "prepared" });
    const out = await pythonStdout(
      call,
      copy,
      [
        "import os, sys",
        "sys.path.insert(0, '/home/user/app/lib')",
        "import prepared",
        "print(prepared.VALUE)",
        "print(os.path.exists('/home/user/after.txt'))",
        "print(open('/opt/marker/MARKER').read().strip())",
        "open('/home/user/app/lib/mine.txt', 'w').write('writable')",
        "print(os.stat('/home/user/app/lib/prepared.py').st_uid == os.getuid())",
      ].join("\n"),
    );
    assert.deepEqual(out.trim().split("\n"), ["42", "False", "from-the-image", "True"]);
    // The saved template is listed with the others; its source template cannot go while it shares its root.
    const list = await call<{ templates: { id: string }[] }>("GET", "/v1/agents/templates");
    assert.ok(list.body.templates.some((t) => t.id === res.body.id));
    for (const id of [source, copy]) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    assert.equal((await call("DELETE", `/v1/agents/templates/${res.body.id}`)).status, 204);
    assertError(await call("POST", "/v1/agents/sandboxes", { template: "prepared" }), 404, "template_not_found");
  });

  test("of a built-in's sandbox: the host's system, the sandbox's files", async () => {
    const source = await createSandbox(call);
    await pythonStdout(call, source, "open('/home/user/notes.txt', 'w').write('kept from the source')");
    const res = await call<Detail>("POST", `/v1/agents/sandboxes/${source}/template`, { name: "from-default" });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assertError(await call("POST", `/v1/agents/sandboxes/${source}/template`, { name: "from-default" }), 409, "conflict");
    const copy = await createSandbox(call, { template: res.body.id });
    const out = await pythonStdout(
      call,
      copy,
      "import os\nprint(open('/home/user/notes.txt').read())\nprint(os.path.exists('/opt/marker'))",
    );
    assert.deepEqual(out.trim().split("\n"), ["kept from the source", "False"]);
    const got = await call<{ template_id: string }>("GET", `/v1/agents/sandboxes/${copy}`);
    assert.equal(got.body.template_id, res.body.id);
    // Build steps need a root filesystem of its own: a clear 400.
    assertError(
      await call("POST", "/v1/agents/templates/build", {
        name: "on-saved",
        template_id: res.body.id,
        build_steps: [{ type: "mkdir", args: ["/opt/x"] }],
      }),
      400,
      "invalid_request",
    );
    for (const id of [source, copy]) await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("another tenant can neither save the sandbox nor use the template; an ended or paused sandbox is refused", async () => {
    const source = await createSandbox(call);
    const saved = await call<Detail>("POST", `/v1/agents/sandboxes/${source}/template`, { name: "mine-only" });
    assert.equal(saved.status, 201, JSON.stringify(saved.body));
    const admin = client({ url: server.url, key: server.adminKey });
    const key = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "other", tenant_id: "tenant-other-save" });
    const other = client({ url: server.url, key: key.body.key });
    assertError(await other("POST", `/v1/agents/sandboxes/${source}/template`, { name: "theirs" }), 404, "sandbox_not_found");
    assertError(await other("POST", "/v1/agents/sandboxes", { template: saved.body.id }), 404, "template_not_found");
    assert.equal((await call("POST", `/v1/agents/sandboxes/${source}/pause`)).status, 200);
    assertError(await call("POST", `/v1/agents/sandboxes/${source}/template`, { name: "paused" }), 409, "sandbox_paused");
    await call("DELETE", `/v1/agents/sandboxes/${source}`);
    assertError(await call("POST", `/v1/agents/sandboxes/${source}/template`, { name: "ended" }), 400, "invalid_state");
  });
});

describe("a template deleted with a warm pool", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  test("gives its pool's sandboxes back and its root filesystem is removed", async () => {
    const sbx = await createSandbox(call, { template: templateId });
    await poolReaches(templateId, 1);
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${sbx}`)).status, 200);
    assert.equal((await call("DELETE", `/v1/agents/templates/${templateId}`)).status, 204);
    assertError(await call("POST", "/v1/agents/sandboxes", { template: templateId }), 404, "template_not_found");
    assert.deepEqual(fs.readdirSync(path.join(images.templateDir, "rootfs")), []);
  });
});
