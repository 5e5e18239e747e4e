// End to end: templates built from OCI images (POST /v1/agents/templates/build with docker_image).
// Two images made on this machine (test/helpers/oci-image.ts) are pushed to a local registry started here: one with a copy
// of the host's Python and a package of its own, one with nothing but a marker file. Sandboxes of
// each run in the image's root filesystem (its files, not the host's), code/run uses the image's
// Python and imports its package, an image without Python or bash still runs python and bash
// through the service's own runtime; build status, get, list, delete and tenant scoping.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError, createSandbox, pythonStdout } from "./helpers/api.js";
import { execFileSync } from "node:child_process";
import {
  buildAndPush,
  corruptLayer,
  haveImageTools,
  put,
  type Registry,
  startTemplateRegistry,
  type TemplateRegistry,
} from "./helpers/oci-image.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

const NINE_KEYS = ["created_at", "description", "disk_size_mb", "id", "memory_mb", "name", "updated_at", "vcpu_count", "visibility"];

let server: TestServer;
let call: ReturnType<typeof client>;
let images: TemplateRegistry;
let registry: Registry;
let templateDir: string;
let pyImage: string;
let bareImage: string;

interface Status {
  build_id: string;
  template_id: string;
  status: string;
  phase: string;
  progress_percent: number;
  error: string | null;
  started_at: string | null;
  completed_at: string | null;
}

before(async () => {
  if (!haveImageTools) return;
  images = await startTemplateRegistry();
  ({ registry, templateDir, python: pyImage, bare: bareImage } = images);
  server = await startServer({ env: serverEnv() });
  call = client(server);
});

function serverEnv(): Record<string, string> {
  // Short, for the deadline test; every other build here takes a few seconds (under 10 s on a host
  // loaded past 10 processes a core). Two builds at once: the deadline test's build waits out its
  // deadline beside the other builds instead of before them.
  return { ...images.env, AGENTBOX_TEMPLATE_BUILD_TIMEOUT_S: "30", AGENTBOX_TEMPLATE_PARALLEL_BUILDS: "2" };
}

after(async () => {
  await server?.dispose();
  await images?.stop();
});

/** Starts a build (202) and waits for it to end; returns its last status. */
async function build(body: Record<string, unknown>, c = call): Promise<Status> {
  const res = await c<{ build_id: string; template_id: string; status: string; message: string }>(
    "POST",
    "/v1/agents/templates/build",
    body,
  );
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.match(res.body.build_id, /^bld_/);
  assert.match(res.body.template_id, /^tpl_/);
  for (let i = 0; i < 600; i++) {
    const s = await c<Status>("GET", `/v1/agents/templates/builds/${res.body.build_id}/status`);
    assert.equal(s.status, 200, JSON.stringify(s.body));
    assert.equal(s.body.template_id, res.body.template_id);
    if (s.body.status === "completed" || s.body.status === "failed") return s.body;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("the build did not end in 120 s");
}

async function sh(id: string, command: string): Promise<{ stdout: string; stderr: string; exit_code: number }> {
  const res = await call<{ stdout: string; stderr: string; exit_code: number }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
    command,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

describe("a template from an image with its own Python", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  let templateId: string;
  let sandboxId: string;
  /** The deadline test's build: started as soon as its base is built, it runs until its deadline while the tests between run. */
  let slowBuild: Promise<Status>;

  test("builds: status with phase and progress, then completed", async () => {
    const s = await build({
      name: "py-marker",
      description: "host python copy with a package",
      docker_image: pyImage,
      environment: { FROM_TEMPLATE: "yes" },
    });
    assert.equal(s.status, "completed", JSON.stringify(s));
    assert.equal(s.phase, "completed");
    assert.equal(s.progress_percent, 100);
    assert.equal(s.error, null);
    assert.ok(s.started_at && s.completed_at);
    templateId = s.template_id;
    slowBuild = build({
      name: "py-slow",
      template_id: templateId,
      build_steps: [{ type: "run", args: ["python3 -c 'import time; time.sleep(600)'"] }],
    });
    // Awaited (and its failure reported) by the deadline test.
    slowBuild.catch(() => {});
  });

  test("is listed with exactly the nine keys, after the built-ins, and can be fetched", async () => {
    const list = await call<{ templates: Record<string, unknown>[]; limit: number; offset: number }>("GET", "/v1/agents/templates");
    assert.equal(list.status, 200);
    const ids = list.body.templates.map((t) => t.id);
    assert.deepEqual(ids.slice(0, 2), ["python-base-v1", "javascript-base-v1"]);
    const mine = list.body.templates.find((t) => t.id === templateId);
    assert.ok(mine, JSON.stringify(ids));
    assert.deepEqual(Object.keys(mine).sort(), NINE_KEYS);
    assert.equal(mine.name, "py-marker");
    assert.equal(mine.visibility, "private");
    const got = await call<Record<string, unknown>>("GET", `/v1/agents/templates/${templateId}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.status, "ready");
    assert.equal(got.body.base_image, pyImage);
    assert.deepEqual(got.body.environment, { FROM_TEMPLATE: "yes" });
  });

  test("its sandboxes see the image's files, not the host's", async () => {
    sandboxId = await createSandbox(call, { template: templateId });
    const info = await call<{ template: string }>("GET", `/v1/agents/sandboxes/${sandboxId}`);
    assert.equal(info.body.template, templateId);
    const out = await pythonStdout(
      call,
      sandboxId,
      [
        "import os, sys",
        "print(open('/opt/marker/MARKER').read().strip())",
        "print(os.path.exists('/usr/lib/python3/dist-packages/numpy'))",
        "print(os.path.exists('/usr/bin/node'))",
        "print(os.environ.get('FROM_TEMPLATE'))",
        "print(sys.executable)",
      ].join("\n"),
    );
    assert.deepEqual(out.trim().split("\n"), ["from-the-image", "False", "False", "yes", "/usr/bin/python3"]);
  });

  test("code/run imports the image's own package with the image's Python", async () => {
    const out = await pythonStdout(call, sandboxId, "import imagepkg\nprint(imagepkg.ORIGIN)\nprint(imagepkg.__file__)");
    assert.deepEqual(out.trim().split("\n"), ["imagepkg inside the image", "/usr/lib/python3/dist-packages/imagepkg/__init__.py"]);
  });

  test("the build made the image's python bytecode: what the runtime imports is cached and current", async () => {
    // The test image's bytecode is stale (its sources were copied with new mtimes), as an image's
    // is after a copy, or absent as in official python images: the build compiles it once.
    const out = await pythonStdout(
      call,
      sandboxId,
      [
        "import importlib.util, os, struct, json, selectors, traceback",
        "for m in (json, selectors, traceback):",
        "    with open(importlib.util.cache_from_source(m.__file__), 'rb') as f:",
        "        head = f.read(16)",
        "    flags, mtime, size = struct.unpack('<III', head[4:16])",
        "    st = os.stat(m.__file__)",
        "    print(m.__name__, flags == 0 and mtime == int(st.st_mtime) & 0xFFFFFFFF and size == st.st_size & 0xFFFFFFFF)",
      ].join("\n"),
    );
    assert.deepEqual(out.trim().split("\n"), ["json True", "selectors True", "traceback True"]);
  });

  test("the image's root is read-only; /home/user is the sandbox's own, writable", async () => {
    // Bash builtins only: the image has no coreutils.
    const r = await sh(sandboxId, 'echo x 2>&1 > /opt/marker/x; echo hi > /home/user/f && echo "$(< /home/user/f)"');
    assert.match(r.stdout, /Read-only file system/);
    assert.match(r.stdout, /hi/);
  });

  test("a default sandbox does not see the image's files (and does see the host's)", async () => {
    const id = await createSandbox(call);
    const out = await pythonStdout(
      call,
      id,
      "import os\nprint(os.path.exists('/opt/marker/MARKER'))\nprint(os.path.exists('/usr/lib/python3/dist-packages/numpy'))",
    );
    assert.deepEqual(out.trim().split("\n"), ["False", "True"]);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("build steps on it (mkdir, copy_file, run) make a new template; the base is unchanged", async () => {
    const s = await build({
      name: "py-steps",
      template_id: templateId,
      build_steps: [
        { type: "mkdir", args: ["/opt/built"] },
        { type: "copy_file", args: ["/opt/built/hello.txt"], content: Buffer.from("hello from a step\n").toString("base64") },
        { type: "run", args: ["printf 'X = 42\\n' > /usr/lib/python3/dist-packages/stepmod.py && echo step-ran"] },
        { type: "run", args: ["python3 -c \"import imagepkg; open('/opt/built/ran', 'w').write(imagepkg.ORIGIN)\""] },
      ],
    });
    assert.equal(s.status, "completed", JSON.stringify(s));
    const got = await call<{ base_image: string }>("GET", `/v1/agents/templates/${s.template_id}`);
    assert.equal(got.body.base_image, pyImage);
    const id = await createSandbox(call, { template: s.template_id });
    const out = await pythonStdout(
      call,
      id,
      "import stepmod\nprint(stepmod.X)\nprint(open('/opt/built/hello.txt').read().strip())\nprint(open('/opt/built/ran').read())\nprint(open('/opt/marker/MARKER').read().strip())",
    );
    assert.deepEqual(out.trim().split("\n"), ["42", "hello from a step", "imagepkg inside the image", "from-the-image"]);
    // Read-only like any template's root; the base template never saw the steps.
    assert.match((await sh(id, "echo x 2>&1 > /opt/built/hello.txt")).stdout, /Read-only file system/);
    const base = await pythonStdout(call, sandboxId, "import os\nprint(os.path.exists('/opt/built'))");
    assert.equal(base.trim(), "False");
    const logs = await fetch(`${server.url}/v1/agents/templates/builds/${s.build_id}/logs`, {
      headers: { authorization: `Bearer ${server.key}` },
    });
    assert.match(await logs.text(), /step 3 \(run\)[\s\S]*step-ran/);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
    assert.equal((await call("DELETE", `/v1/agents/templates/${s.template_id}`)).status, 204);
  });

  test("a failing step fails the build, which names the step and says why", async () => {
    const s = await build({
      name: "py-fails",
      template_id: templateId,
      build_steps: [
        { type: "mkdir", args: ["/opt/a"] },
        { type: "run", args: ["echo about to fail >&2; exit 3"] },
      ],
    });
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /^step 2 \(run\) failed: exit 3: about to fail/);
  });

  test("a network step fails clearly: build sandboxes have no network", async () => {
    const s = await build({ name: "py-pip", template_id: templateId, build_steps: [{ type: "pip_install", args: ["requests"] }] });
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /^step 1 \(pip_install\) failed: exit 1: /);
    assert.match(s.error ?? "", /No matching distribution|Could not find a version|network|resolution/i);
  });

  test("a step over the build's memory is killed and the build fails", async () => {
    const s = await build({
      name: "py-oom",
      template_id: templateId,
      memory_mb: 128,
      build_steps: [{ type: "run", args: ["python3 -c 'x = bytearray(1 << 30)'"] }],
    });
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /^step 1 \(run\) failed: exit 137/);
  });

  test("a step past the build's deadline ends the build with that reason", async () => {
    const s = await slowBuild;
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /step 1 \(run\) did not finish before the build's deadline \(AGENTBOX_TEMPLATE_BUILD_TIMEOUT_S\)/);
  });

  test("steps need a base of your own: a built-in or no base is refused", async () => {
    const steps = [{ type: "mkdir", args: ["/x"] }];
    assertError(
      await call("POST", "/v1/agents/templates/build", { name: "s1", template_id: "python-base-v1", build_steps: steps }),
      400,
      "invalid_request",
    );
    assertError(await call("POST", "/v1/agents/templates/build", { name: "s2", build_steps: steps }), 400, "invalid_request");
    assertError(
      await call("POST", "/v1/agents/templates/build", {
        name: "s3",
        template_id: templateId,
        build_steps: [{ type: "mkdir", args: ["relative"] }],
      }),
      400,
      "invalid_request",
    );
  });

  test("a template in use is not deleted; once its sandboxes end it is, and is gone", async () => {
    assertError(await call("DELETE", `/v1/agents/templates/${templateId}`), 409, "conflict");
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${sandboxId}`)).status, 200);
    const del = await call("DELETE", `/v1/agents/templates/${templateId}`);
    assert.equal(del.status, 204, JSON.stringify(del.body));
    assertError(await call("GET", `/v1/agents/templates/${templateId}`), 404, "template_not_found");
    assertError(await call("POST", "/v1/agents/sandboxes", { template: templateId }), 404, "template_not_found");
    // No template uses its root filesystem any more: it is removed from disk.
    assert.deepEqual(fs.readdirSync(path.join(templateDir, "rootfs")), []);
  });
});

describe("a template from an image without Python or bash", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  let templateId: string;
  let sandboxId: string;

  test("builds, and its sandboxes run python and bash from the service's own runtime", async () => {
    const s = await build({ name: "bare", docker_image: bareImage });
    assert.equal(s.status, "completed", JSON.stringify(s));
    templateId = s.template_id;
    sandboxId = await createSandbox(call, { template: "bare" }); // by name, too
    const out = await pythonStdout(
      call,
      sandboxId,
      "import os\nprint(open('/opt/marker/MARKER').read().strip())\nprint(os.path.exists('/usr/bin'))\nprint(open('/etc/os-release').read().strip())",
    );
    assert.deepEqual(out.trim().split("\n"), ["bare-image", "False", "NAME=bare"]);
    // The image has no programs at all: bash's builtins are what a command has there.
    const r = await sh(sandboxId, 'echo "$(< /opt/marker/MARKER)"; echo $((6 * 7)); echo /*; command -v ls || echo "no ls"');
    assert.equal(r.exit_code, 0, r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.deepEqual([lines[0], lines[1], lines[3]], ["bare-image", "42", "no ls"]);
    assert.ok(!(lines[2] ?? "").split(" ").includes("/usr"), `the image has no /usr: ${lines[2]}`);
  });

  test("another tenant neither sees nor uses it", async () => {
    const admin = client({ url: server.url, key: server.adminKey });
    const key = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "other", tenant_id: "tenant-other" });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const other = client({ url: server.url, key: key.body.key });
    const list = await other<{ templates: { id: string }[] }>("GET", "/v1/agents/templates");
    assert.deepEqual(
      list.body.templates.map((t) => t.id),
      ["python-base-v1", "javascript-base-v1"],
    );
    assertError(await other("GET", `/v1/agents/templates/${templateId}`), 404, "template_not_found");
    assertError(await other("POST", "/v1/agents/sandboxes", { template: templateId }), 404, "template_not_found");
    assertError(await other("POST", "/v1/agents/sandboxes", { template: "bare" }), 404, "template_not_found");
    assertError(await other("DELETE", `/v1/agents/templates/${templateId}`), 404, "template_not_found");
    await call("DELETE", `/v1/agents/sandboxes/${sandboxId}`);
  });
});

describe("refused builds", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  test("a registry the operator does not allow, a bad reference, a duplicate name, unsupported sources", async () => {
    const e = assertError(
      await call("POST", "/v1/agents/templates/build", { name: "x1", docker_image: "docker.io/library/debian:12" }),
      400,
      "invalid_request",
    );
    assert.match(e.error.message, /not allowed/);
    assertError(await call("POST", "/v1/agents/templates/build", { name: "x2", docker_image: "UPPER/Case::" }), 400, "invalid_request");
    assertError(await call("POST", "/v1/agents/templates/build", { name: "x3" }), 400, "invalid_request");
    assertError(await call("POST", "/v1/agents/templates/build", { name: "x4", dockerfile: "FROM scratch" }), 400, "invalid_request");
    assertError(
      await call("POST", "/v1/agents/templates/build", { name: "x5", docker_image: bareImage, memory_mb: 1 << 19 }),
      400,
      "invalid_request",
    );
    assertError(await call("POST", "/v1/agents/templates/build", { name: "bare", docker_image: bareImage }), 409, "conflict");
    assertError(await call("DELETE", "/v1/agents/templates/python-base-v1"), 400, "invalid_request");
  });

  test("an image that is not in the registry fails its build with the registry's reason", async () => {
    const s = await build({ name: "missing", docker_image: `${registry.host}/test/nothing-here:1` });
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /skopeo failed/);
    const got = await call<{ status: string }>("GET", `/v1/agents/templates/${s.template_id}`);
    assert.equal(got.body.status, "failed");
    assertError(await call("POST", "/v1/agents/sandboxes", { template: s.template_id }), 400, "invalid_state");
  });

  test("the build's log streams as server-sent events and ends with its status", async () => {
    const s = await build({ name: "logged", docker_image: bareImage });
    const res = await fetch(`${server.url}/v1/agents/templates/builds/${s.build_id}/logs`, {
      headers: { authorization: `Bearer ${server.key}` },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
    const text = await res.text();
    assert.match(text, /event: log\ndata: .*pulling/);
    assert.match(text, /event: end\ndata: .*"status":"completed"/);
  });
});

describe("hostile images", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  test("setuid bits, device nodes and links over the sandbox's mount points have no effect", async () => {
    const image = buildAndPush(registry.host, "test/hostile", (rootfs) => {
      fs.copyFileSync("/usr/bin/true", path.join(rootfs, "suid"));
      fs.chmodSync(path.join(rootfs, "suid"), 0o4755);
      if (process.getuid?.() === 0) execFileSync("mknod", [path.join(rootfs, "devnull"), "c", "1", "3"]);
      // Links where the sandbox mounts its own /home/user, /tmp and /etc files: followed on the host, they would lead out.
      fs.symlinkSync("/etc", path.join(rootfs, "home"));
      fs.symlinkSync("../../../../etc", path.join(rootfs, "tmp"));
      fs.mkdirSync(path.join(rootfs, "etc"));
      fs.symlinkSync("/etc/shadow", path.join(rootfs, "etc/passwd"));
      put(rootfs, "opt/marker/MARKER", "hostile\n");
      fs.symlinkSync("/etc/shadow", path.join(rootfs, "opt/link-out"));
    });
    const s = await build({ name: "hostile", docker_image: image });
    assert.equal(s.status, "completed", JSON.stringify(s));
    // The tree on disk: no setuid bit, no device node, real directories where the sandbox mounts.
    const [digest] = fs
      .readdirSync(path.join(templateDir, "rootfs"))
      .filter((d) => fs.existsSync(path.join(templateDir, "rootfs", d, "suid")));
    const tree = path.join(templateDir, "rootfs", digest as string);
    assert.equal(fs.statSync(path.join(tree, "suid")).mode & 0o6000, 0);
    assert.ok(!fs.existsSync(path.join(tree, "devnull")) || fs.lstatSync(path.join(tree, "devnull")).isFile());
    for (const d of ["home", "tmp", "etc"]) assert.ok(fs.lstatSync(path.join(tree, d)).isDirectory(), d);
    assert.ok(fs.lstatSync(path.join(tree, "etc/passwd")).isFile());
    assert.ok(fs.existsSync("/etc/shadow"), "the host still has its own");
    const id = await createSandbox(call, { template: s.template_id });
    const out = await pythonStdout(
      call,
      id,
      [
        "import os",
        "print(os.stat('/suid').st_mode & 0o6000)",
        "print(os.path.isdir('/home/user'), os.path.islink('/home'))",
        "open('/home/user/w', 'w').write('ok'); print(open('/home/user/w').read())",
        "print(open('/etc/passwd').read().startswith('root:x:0:0:root:/root:/usr/sbin/nologin'))",
        "try:\n    open('/opt/link-out').read(); print('read')\nexcept OSError as e:\n    print(type(e).__name__)",
      ].join("\n"),
    );
    assert.deepEqual(out.trim().split("\n"), ["0", "True False", "ok", "True", "FileNotFoundError"]);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("a huge sparse file (small in the layer) stops at the unpacked limit and fails the build", async () => {
    const image = buildAndPush(registry.host, "test/sparse", (rootfs) => {
      const big = path.join(rootfs, "big");
      fs.closeSync(fs.openSync(big, "w"));
      // Just past the limit: packing and unpacking it take time in proportion to its size.
      fs.truncateSync(big, 210 * 2 ** 20);
    });
    const s = await build({ name: "sparse", docker_image: image });
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /a file in the image is larger than the unpacked limit of 200 MiB \(AGENTBOX_TEMPLATE_MAX_ROOTFS_MB\)/);
  });

  test("a layer whose bytes do not match its digest fails the build", async () => {
    buildAndPush(registry.host, "test/corrupt", (rootfs) => put(rootfs, "opt/x", "x".repeat(10000)));
    await corruptLayer(registry, "test/corrupt");
    const s = await build({ name: "corrupt", docker_image: `${registry.host}/test/corrupt:1` });
    assert.equal(s.status, "failed");
    assert.match(s.error ?? "", /skopeo failed[\s\S]*(digest|checksum)/i);
  });
});

describe("a restart of the service", { skip: !haveImageTools && "skopeo, umoci or docker-registry missing" }, () => {
  test("re-adopts a sandbox of a custom template on its template's root, with its files", async () => {
    const id = await createSandbox(call, { template: "bare" });
    await pythonStdout(call, id, "open('/home/user/kept', 'w').write('before the restart')");
    await server.stop();
    server = await startServer({ env: serverEnv(), dataDir: server.dataDir, workspaceDir: server.workspaceDir, key: server.key });
    call = client(server);
    const info = await call<{ status: string; template: string }>("GET", `/v1/agents/sandboxes/${id}`);
    assert.equal(info.body.status, "running", JSON.stringify(info.body));
    const out = await pythonStdout(call, id, "print(open('/home/user/kept').read())\nprint(open('/opt/marker/MARKER').read().strip())");
    assert.deepEqual(out.trim().split("\n"), ["before the restart", "bare-image"]);
    const list = await call<{ templates: { name: string }[] }>("GET", "/v1/agents/templates");
    assert.ok(list.body.templates.some((t) => t.name === "bare"));
  });
});
