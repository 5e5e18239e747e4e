// Model pull and the pulled models in the gateway: `models pull` (the CLI, as an operator runs it)
// against a local HTTP server with Range support that cuts the first download off halfway, then a
// resume to the right sha256; a wrong --sha256 refused with nothing left behind; hf: references via
// AGENTBOX_HF_BASE_URL; the pulled model listed by the running service and answering a chat
// completion with no restart; AGENTBOX_MODEL serving one file with no providers file.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError } from "./helpers/api.js";
import { writeTinyLlama } from "./helpers/gguf.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { entryArgs } from "./helpers/entry.js";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

interface Served {
  url: string;
  /** Range headers of the requests so far, in order ("" for none). */
  ranges: string[];
  /** When set, the next full or ranged answer sends this many bytes and then destroys the connection. */
  cutAfter: number | undefined;
  /** Serves another file from now on (a new ETag: the file changed upstream). */
  replace(file: string): void;
  close(): Promise<void>;
}

/** A static file server for one file (any path ending in the file's name) with Range, ETag and a connection cutter. */
async function serveFile(file: string): Promise<Served> {
  const name = path.basename(file);
  let data = fs.readFileSync(file);
  const tagOf = (d: Buffer) => `"${crypto.createHash("sha256").update(d).digest("hex").slice(0, 16)}"`;
  let etag = tagOf(data);
  const state: Served = {
    url: "",
    ranges: [],
    cutAfter: undefined,
    replace: (other) => {
      data = fs.readFileSync(other);
      etag = tagOf(data);
    },
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    state.ranges.push(String(req.headers.range ?? ""));
    if (!req.url?.endsWith(name)) {
      res.writeHead(404).end("not found");
      return;
    }
    let start = 0;
    const m = req.headers.range?.match(/^bytes=(\d+)-$/);
    const ifRange = req.headers["if-range"];
    if (m && (ifRange === undefined || ifRange === etag)) {
      start = Number(m[1]);
      if (start >= data.length) {
        res.writeHead(416, { "content-range": `bytes */${data.length}` }).end();
        return;
      }
      res.writeHead(206, {
        "content-range": `bytes ${start}-${data.length - 1}/${data.length}`,
        "content-length": data.length - start,
        etag,
      });
    } else {
      res.writeHead(200, { "content-length": data.length, etag, "accept-ranges": "bytes" });
    }
    const body = data.subarray(start);
    if (state.cutAfter !== undefined) {
      const n = state.cutAfter;
      state.cutAfter = undefined;
      // The connection drops mid-body (the client has had time to take in what was sent).
      res.write(body.subarray(0, n), () => setTimeout(() => res.socket?.destroy(), 300));
      return;
    }
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise((resolve) => server.close(() => resolve()));
  return state;
}

/** Runs the CLI without blocking this process (the file server runs here). */
function cli(
  dataDir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...entryArgs("cli/main"), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENTBOX_DATA_DIR: dataDir, ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

const sha256 = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

describe("models pull", () => {
  let dir: string;
  let model: string;
  let files: Served;
  let server: TestServer;
  let call: ReturnType<typeof client>;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-models-"));
    model = writeTinyLlama(path.join(dir, "tiny-chat.gguf"), { contextLength: 512 });
    files = await serveFile(model);
    // This file starts no sandbox: no warm pool (its two sandboxes would take ~1.5 s of CPU from the tests).
    server = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
    call = client(server);
  });

  after(async () => {
    await server?.dispose();
    await files?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const modelsDir = () => path.join(server.dataDir, "models");

  test("an interrupted pull keeps its partial file and the next run resumes it with a Range request to the right sha256", async () => {
    const size = fs.statSync(model).size;
    const half = Math.floor(size / 2);
    files.cutAfter = half;
    files.ranges.length = 0;
    const first = await cli(server.dataDir, ["models", "pull", `${files.url}/files/tiny-chat.gguf`]);
    assert.notEqual(first.status, 0, first.stdout);
    assert.match(first.stderr, /interrupted|ended at/);
    assert.match(first.stderr, /run the same command again to resume/);
    assert.deepEqual(
      fs.readdirSync(modelsDir()).filter((f) => f.endsWith(".gguf")),
      [],
      "no model before it is complete",
    );
    const partial = path.join(modelsDir(), "tiny-chat.gguf.partial");
    const kept = fs.statSync(partial).size;
    assert.ok(kept > 0 && kept <= half, `${kept} bytes kept`);

    const second = await cli(server.dataDir, ["models", "pull", `${files.url}/files/tiny-chat.gguf`, "--sha256", sha256(model), "--json"]);
    assert.equal(second.status, 0, second.stderr);
    assert.deepEqual(files.ranges, ["", `bytes=${kept}-`]);
    assert.match(second.stderr, /resumed at/, "plain progress lines when not on a terminal");
    const entry = JSON.parse(second.stdout) as { name: string; path: string; size: number; sha256: string };
    assert.equal(entry.name, "tiny-chat");
    assert.equal(entry.size, size);
    assert.equal(entry.sha256, sha256(model));
    assert.equal(sha256(entry.path), sha256(model));
    assert.deepEqual(fs.readdirSync(modelsDir()).sort(), ["tiny-chat.gguf", "tiny-chat.gguf.json"], "no partial files left");

    const list = await cli(server.dataDir, ["models", "list", "--json"]);
    assert.deepEqual(
      (JSON.parse(list.stdout) as Array<{ name: string; sha256: string }>).map((m) => [m.name, m.sha256]),
      [["tiny-chat", sha256(model)]],
    );
  });

  test("a file that changed upstream between attempts is downloaded again from the start (If-Range), not stitched", async () => {
    const changed = writeTinyLlama(path.join(dir, "changed.gguf"), { contextLength: 512, seed: 99 });
    const original = model;
    try {
      files.cutAfter = 1000;
      files.ranges.length = 0;
      const first = await cli(server.dataDir, ["models", "pull", `${files.url}/v2/tiny-chat.gguf`, "--name", "moving"]);
      assert.notEqual(first.status, 0);
      const kept = fs.statSync(path.join(modelsDir(), "moving.gguf.partial")).size;
      assert.ok(kept > 0 && kept <= 1000);
      files.replace(changed);
      const second = await cli(server.dataDir, ["models", "pull", `${files.url}/v2/tiny-chat.gguf`, "--name", "moving", "--json"]);
      assert.equal(second.status, 0, second.stderr);
      assert.deepEqual(files.ranges, ["", `bytes=${kept}-`], "the resume was asked for, and refused by If-Range");
      assert.equal((JSON.parse(second.stdout) as { sha256: string }).sha256, sha256(changed));
    } finally {
      files.replace(original);
      await cli(server.dataDir, ["models", "rm", "moving"]);
    }
  });

  test("the pulled model is listed by the running service and answers a chat completion (no restart)", async () => {
    const models = await call<{ data: Array<{ id: string; owned_by: string; capabilities: string[] }> }>("GET", "/v1/inference/models");
    assert.ok(
      models.body.data.some((m) => m.id === "tiny-chat" && m.owned_by === "local"),
      JSON.stringify(models.body),
    );
    assert.deepEqual(models.body.data.find((m) => m.id === "tiny-chat")?.capabilities, ["chat", "completions"]);
    const res = await call<{ choices: Array<{ message: { content: string } }>; usage: { completion_tokens: number } }>(
      "POST",
      "/v1/inference/chat/completions",
      { model: "tiny-chat", messages: [{ role: "user", content: "hello world" }], max_tokens: 4, temperature: 0 },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.usage.completion_tokens, 4);
    assert.ok((res.body.choices[0]?.message.content ?? "").trim().length > 0);
  });

  test("a wrong --sha256 is refused and nothing is left behind", async () => {
    const res = await cli(server.dataDir, [
      "models",
      "pull",
      `${files.url}/x/tiny-chat.gguf`,
      "--name",
      "checked",
      "--sha256",
      "0".repeat(64),
    ]);
    assert.equal(res.status, 1);
    assert.match(res.stderr, /sha256 mismatch: expected 0{64}, downloaded [0-9a-f]{64}; nothing was kept/);
    assert.deepEqual(
      fs.readdirSync(modelsDir()).filter((f) => f.startsWith("checked")),
      [],
    );
  });

  test("hf:OWNER/REPO/FILE maps to <base>/OWNER/REPO/resolve/main/FILE", async () => {
    files.ranges.length = 0;
    const res = await cli(server.dataDir, ["models", "pull", "hf:acme/tiny-GGUF/tiny-chat.gguf", "--name", "from-hf", "--json"], {
      AGENTBOX_HF_BASE_URL: files.url,
    });
    assert.equal(res.status, 0, res.stderr);
    assert.equal((JSON.parse(res.stdout) as { sha256: string }).sha256, sha256(model));
    assert.equal(files.ranges.length, 1);
    const bad = await cli(server.dataDir, ["models", "pull", "hf:acme/tiny-chat.gguf"]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /is not hf:OWNER\/REPO\/FILE\.gguf/);
  });

  test("bad input: a missing file, a bad name, no source, an unknown model", async () => {
    const missing = await cli(server.dataDir, ["models", "pull", `${files.url}/nope.gguf`]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /answered HTTP 404/);
    assert.equal(fs.existsSync(path.join(modelsDir(), "nope.gguf.partial")), false);
    const usage = await cli(server.dataDir, ["models", "pull"]);
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /needs a URL/);
    const name = await cli(server.dataDir, ["models", "pull", `${files.url}/tiny-chat.gguf`, "--name", "../up"]);
    assert.equal(name.status, 1);
    assert.match(name.stderr, /not a usable model name/);
    const res = await call("POST", "/v1/inference/chat/completions", { model: "nope", messages: [{ role: "user", content: "hi" }] });
    assertError(res, 404, "model_not_found");
  });
});

describe("AGENTBOX_MODEL", () => {
  let dir: string;
  let server: TestServer;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-model-env-"));
    const file = writeTinyLlama(path.join(dir, "solo.gguf"), { contextLength: 512 });
    server = await startServer({ env: { AGENTBOX_WARM_POOL: "0", AGENTBOX_MODEL: file, AGENTBOX_MODEL_CONTEXT_SIZE: "512" } });
  });

  after(async () => {
    await server?.dispose();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test("serves the one file under its name, with no providers file", async () => {
    const call = client(server);
    const models = await call<{ data: Array<{ id: string }> }>("GET", "/v1/inference/models");
    assert.equal(models.body.data[0]?.id, "solo");
    const res = await call<{ model: string; usage: { completion_tokens: number } }>("POST", "/v1/inference/chat/completions", {
      model: "solo",
      messages: [{ role: "user", content: "the cat" }],
      max_tokens: 3,
      temperature: 0,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.model, "solo");
    assert.equal(res.body.usage.completion_tokens, 3);
  });

  test("a path that is not a GGUF file stops the service at start with a message naming the setting", async () => {
    const bad = path.join(dir, "bad.gguf");
    fs.writeFileSync(bad, "not a model");
    const dataDir = path.join(dir, "data");
    fs.mkdirSync(dataDir);
    await assert.rejects(startServer({ dataDir, env: { AGENTBOX_MODEL: bad } }), /AGENTBOX_MODEL.*not a GGUF file/);
  });
});
