// The TypeScript SDK against the real service: its types match the served OpenAPI document, and
// sandboxes, runs (plain and streamed), files, commands, contexts, errors, Retry-After retries and
// timeouts work end to end; the README's agent loop runs against a scripted model.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { renderSdkTypes, SDK_TYPES_FILE } from "../scripts/sdk-types.js";
import { AgentBox, AgentBoxError, type RunEvent } from "../sdk/typescript/src/index.js";
import { freePort, startServer, type TestServer, testCluster } from "./helpers/server.js";
import { startUpstream, type Upstream } from "./helpers/upstream.js";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

describe("TypeScript SDK", () => {
  let server: TestServer;
  let upstream: Upstream;
  let ab: AgentBox;
  let dir: string;
  let closedRegistry: string;

  before(async () => {
    upstream = await startUpstream();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-sdk-ts-"));
    const providers = path.join(dir, "providers.json");
    fs.writeFileSync(
      providers,
      JSON.stringify({ providers: [{ name: "scripted", type: "openai", base_url: upstream.baseUrl, models: ["scripted"], retries: 0 }] }),
    );
    // A loopback registry that is not there: a build from it fails at once, with a log.
    closedRegistry = `127.0.0.1:${await freePort()}`;
    server = await startServer({
      env: {
        AGENTBOX_PROVIDERS_FILE: providers,
        AGENTBOX_TEMPLATE_REGISTRIES: closedRegistry,
        AGENTBOX_TEMPLATE_INSECURE_REGISTRIES: closedRegistry,
      },
    });
    ab = new AgentBox({ apiKey: server.key, baseUrl: server.url });
  });

  after(async () => {
    await server?.dispose();
    await upstream?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("the committed types are generated from the served OpenAPI document", async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as object;
    const fresh = await renderSdkTypes(doc);
    assert.ok(fresh === fs.readFileSync(SDK_TYPES_FILE, "utf8"), "sdk/typescript/src/openapi.ts is stale: run `npm run sdk:types`");
  });

  test("the package builds to ESM with type declarations and loads by its name's entry point", async () => {
    const out = path.join(dir, "dist");
    await promisify(execFile)(process.execPath, [
      path.join(ROOT, "node_modules/typescript/bin/tsc"),
      "-p",
      path.join(ROOT, "sdk/typescript/tsconfig.json"),
      "--outDir",
      out,
    ]);
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "sdk/typescript/package.json"), "utf8")) as {
      exports: { ".": { import: string; types: string } };
    };
    assert.ok(fs.existsSync(path.join(out, path.basename(pkg.exports["."].types))), "index.d.ts is emitted");
    const mod = (await import(path.join(out, path.basename(pkg.exports["."].import)))) as typeof import("../sdk/typescript/src/index.js");
    const built = new mod.AgentBox({ apiKey: server.key, baseUrl: server.url });
    assert.ok(Array.isArray((await built.sandboxes.list()).sandboxes));
  });

  test("a sandbox: runs with state, streamed runs, files, commands, contexts, metrics, kill", async () => {
    const sbx = await ab.sandboxes.create({ metadata: { purpose: "sdk-test" } });
    assert.equal(sbx.info.metadata.purpose, "sdk-test");
    assert.equal((await sbx.runCode("x = 20")).error, null);
    const r = await sbx.runCode("print('hi')\nx + 22");
    assert.equal(r.logs.stdout, "hi\n");
    assert.equal(r.results?.[0]?.text, "42");
    const failed = await sbx.runCode("1/0");
    assert.match(failed.error ?? "", /ZeroDivisionError/);
    assert.equal((await sbx.runCode("console.log(6 * 7)", { language: "javascript" })).logs.stdout, "42\n");

    const events: RunEvent[] = [];
    for await (const ev of sbx.runCode("import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.05)\nx", {
      stream: true,
    })) {
      events.push(ev);
    }
    assert.deepEqual(
      events
        .filter((e) => e.type === "stdout")
        .map((e) => (e as { text: string }).text)
        .join(""),
      "0\n1\n2\n",
    );
    const end = events.at(-1);
    assert.equal(end?.type, "end");
    assert.equal(end?.type === "end" ? end.result.results?.[0]?.text : undefined, "20");

    await sbx.files.write("dir/notes.txt", "héllo");
    assert.equal(await sbx.files.read("/home/user/dir/notes.txt"), "héllo");
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) % 256);
    await sbx.files.upload("/home/user/blob.bin", bytes);
    assert.deepEqual(await sbx.files.download("/home/user/blob.bin"), bytes);
    assert.deepEqual(
      (await sbx.files.list()).map((f) => f.name),
      ["blob.bin", "dir"],
    );
    await sbx.files.remove("dir");
    await assert.rejects(
      sbx.files.read("dir/notes.txt"),
      (e: unknown) => e instanceof AgentBoxError && e.code === "file_not_found" && e.status === 404,
    );

    const cmd = await sbx.commands.run("echo out; echo err >&2; exit 3");
    assert.deepEqual([cmd.stdout, cmd.stderr, cmd.exit_code], ["out\n", "err\n", 3]);
    const chunks: string[] = [];
    for await (const ev of sbx.commands.run("for i in 1 2; do echo $i; sleep 0.05; done", { stream: true })) {
      if (ev.type === "stdout") chunks.push(ev.text);
      if (ev.type === "end") assert.equal(ev.result.exit_code, 0);
    }
    assert.equal(chunks.join(""), "1\n2\n");
    const bg = await sbx.commands.start("sleep 30");
    assert.ok((await sbx.commands.list()).some((c) => c.pid === bg.pid && c.status === "running"));
    await sbx.commands.kill(bg.pid);

    const ctx = await sbx.contexts.create({ language: "python" });
    assert.equal((await sbx.runCode("x = 'other'", { context_id: ctx.context_id })).error, null);
    assert.equal((await sbx.runCode("x")).results?.[0]?.text, "20", "contexts keep their own globals");
    assert.equal((await sbx.contexts.list()).length, 1);

    assert.equal(typeof (await sbx.metrics()).memory_usage, "number");
    const extended = await sbx.setTimeout(120);
    assert.equal(extended.timeout, 120);
    assert.equal((await ab.sandboxes.get(sbx.id)).id, sbx.id);
    assert.ok((await ab.sandboxes.list()).sandboxes.some((s) => s.sandbox_id === sbx.id));
    await sbx.kill();
    assert.notEqual((await sbx.refresh()).status, "running");
    await assert.rejects(sbx.runCode("1"), (e: unknown) => e instanceof AgentBoxError && e.code === "invalid_state" && e.status === 400);
    await assert.rejects(ab.sandboxes.get("no-such-sandbox"), (e: unknown) => e instanceof AgentBoxError && e.code === "sandbox_not_found");
  });

  // Not in the test cluster: it has no object store, so a stored file and a snapshot stay on the
  // node that made them, and a sandbox on another executor cannot import or be restored from them.
  const nodeLocal = testCluster && "stored files and snapshots stay on the node that made them (no object store)";
  test("the platform's other areas: stored files, import/export, pause/resume, snapshots, fork, events, network, ports, accelerators", {
    skip: nodeLocal,
  }, async () => {
    const csv = "a,b\n1,2\n";
    const stored = await ab.files.upload(new TextEncoder().encode(csv), { filename: "data.csv", purpose: "user_data" });
    assert.equal(stored.bytes, csv.length);
    assert.equal(new TextDecoder().decode(await ab.files.content(stored.id)), csv);
    const sbx = await ab.sandboxes.create();
    await sbx.files.importFile(stored.id, "/home/user/data.csv");
    assert.equal(await sbx.files.read("data.csv"), csv);
    await sbx.files.write("out.txt", "result");
    const exported = await sbx.files.exportFile("out.txt", "user_data");
    assert.equal(new TextDecoder().decode(await ab.files.content(exported.id)), "result");
    await ab.files.delete(stored.id);
    await ab.files.delete(exported.id);
    await assert.rejects(ab.files.get(stored.id), (e: unknown) => e instanceof AgentBoxError && e.status === 404);

    await sbx.runCode("y = 7");
    assert.equal((await sbx.pause()).status, "paused");
    assert.equal((await sbx.resume()).status, "running");
    assert.equal((await sbx.runCode("y")).results?.[0]?.text, "7");
    const snap = await sbx.snapshot();
    const restored = await ab.sandboxes.create({ snapshot_id: snap.snapshot_id });
    assert.equal(await restored.files.read("out.txt"), "result");
    const forks = await sbx.fork(2);
    assert.equal(forks.sandboxes.length, 2);
    assert.equal(forks.kernel_state, "lost");
    assert.equal(await forks.sandboxes[1]?.files.read("data.csv"), csv);
    for (const s of [restored, ...forks.sandboxes]) await s.kill();
    assert.ok((await ab.snapshots.list()).snapshots.some((s) => s.snapshot_id === snap.snapshot_id));
    await ab.snapshots.delete(snap.snapshot_id);

    const types = (await sbx.events()).map((e) => e.type);
    assert.ok(types.includes("created") && types.includes("paused") && types.includes("resumed"), types.join(","));
    assert.equal((await sbx.network.get()).internet_access, false);
    assert.match(await sbx.hostUrl(8000), /8000/);
    assert.ok((await ab.deployments.accelerators()).length >= 1);
    await sbx.kill();
  });

  // In a cluster too: the saved template's sandbox goes to the executor holding its files
  // (docs/cluster.md, Templates in a cluster).
  test("templates: a sandbox saved as one, created from, got, listed and deleted; a build followed to its end and its log", async () => {
    const sbx = await ab.sandboxes.create();
    await sbx.files.write("prepared.txt", "from the source");
    const saved = await sbx.saveAsTemplate("sdk-saved", { description: "saved by the SDK" });
    assert.equal(saved.status, "ready");
    const copy = await ab.sandboxes.create({ template: "sdk-saved" });
    assert.equal(await copy.files.read("prepared.txt"), "from the source");
    assert.equal(copy.info.template_id, saved.id);
    assert.equal((await ab.templates.get("sdk-saved")).description, "saved by the SDK");
    assert.ok((await ab.templates.list()).templates.some((t) => t.id === saved.id));
    await Promise.all([sbx.kill(), copy.kill()]);
    await ab.templates.delete(saved.id);
    await assert.rejects(ab.templates.get(saved.id), (e: unknown) => e instanceof AgentBoxError && e.code === "template_not_found");

    const started = await ab.templates.build({ name: "sdk-unreachable", docker_image: `${closedRegistry}/nothing:1` });
    const end = await ab.templates.waitForBuild(started.build_id, { intervalMs: 100 });
    assert.equal(end.status, "failed");
    assert.ok(end.error);
    const lines = [];
    for await (const l of ab.templates.logs(started.build_id)) lines.push(l.line);
    assert.ok(
      lines.some((l) => l.startsWith("build failed")),
      lines.join("\n"),
    );
    // An ended build is not cancelled again: the SDK carries the 409.
    await assert.rejects(ab.templates.cancel(started.build_id), (e: unknown) => e instanceof AgentBoxError && e.code === "conflict");
    await ab.templates.delete(started.template_id);
  });

  test("errors carry the envelope's code, status and request id", async () => {
    const bad = new AgentBox({ apiKey: "abx_wrong", baseUrl: server.url });
    await assert.rejects(
      bad.sandboxes.list(),
      (e: unknown) => e instanceof AgentBoxError && e.status === 401 && e.code === "unauthorized" && !!e.requestId,
    );
    const sbx = await ab.sandboxes.create();
    // The typed call refuses a wrong language at compile time; the cast sends it anyway.
    await assert.rejects(
      sbx.runCode("1", { language: "cobol" as "python" }),
      (e: unknown) => e instanceof AgentBoxError && e.code === "invalid_request",
    );
    await sbx.kill();
  });

  test("a call refused with 429 is retried after Retry-After and then succeeds", async () => {
    const admin = new AgentBox({ apiKey: server.adminKey, baseUrl: server.url });
    const created = await admin.admin.createKey({ name: "one-at-a-time", max_concurrent_runs: 1 });
    const statuses: number[] = [];
    const observed: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      statuses.push(res.status);
      return res;
    };
    const one = new AgentBox({ apiKey: created.key, baseUrl: server.url, fetch: observed });
    const sbx = await one.sandboxes.create();
    const slow = sbx.runCode("import time; time.sleep(1.5)");
    await new Promise((r) => setTimeout(r, 300));
    const second = await sbx.runCode("'second'");
    assert.equal(second.results?.[0]?.text, "'second'");
    assert.ok(statuses.includes(429), `a 429 was answered and retried (statuses: ${statuses.join(",")})`);
    assert.equal((await slow).error, null);
    await sbx.kill();
    await admin.admin.revokeKey(created.id);
  });

  test("a service that never answers is a timeout error, not a hang", async () => {
    const silent = http.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const port = (silent.address() as AddressInfo).port;
    try {
      const stuck = new AgentBox({ apiKey: "k", baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 300, maxRetries: 0 });
      await assert.rejects(stuck.sandboxes.list(), (e: unknown) => e instanceof AgentBoxError && e.code === "timeout" && e.status === 0);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  test("the README's agent loop runs: the model's code runs in a sandbox and its output goes back", async () => {
    const readme = fs.readFileSync(path.join(ROOT, "sdk/typescript/README.md"), "utf8");
    const block = /<!-- agent-loop -->\n```ts\n([\s\S]*?)\n```\n/.exec(readme)?.[1];
    assert.ok(block, "the README has the agent loop");
    const script = path.join(dir, "agent-loop.mts");
    fs.writeFileSync(script, block.replace('"@agentbox/sdk"', JSON.stringify(path.join(ROOT, "sdk/typescript/src/index.ts"))));
    upstream.script([
      { content: "Let me count.\n```python\nimport sympy\nprint(len(list(sympy.primerange(10000))))\n```" },
      { content: "There are 1229 primes below 10,000." },
    ]);
    const before = upstream.requests.length;
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
      cwd: ROOT,
      env: { ...process.env, AGENTBOX_URL: server.url, AGENTBOX_API_KEY: server.key, MODEL: "scripted" },
    });
    assert.equal(stdout.trim(), "There are 1229 primes below 10,000.");
    const second = upstream.requests[before + 1]?.body.messages.at(-1) as { content: string };
    assert.match(second.content, /stdout:\n1229\n/, "the sandbox's output went back to the model");
  });
});
