// Client compatibility: replays requests exactly as the public AgentBox client libraries send them
// (Python client on `requests`, Node client on fetch + form-data), byte for byte where it matters:
// `Content-Type: application/json` on GET and DELETE with no body, `Content-Length: 0` on bodiless
// DELETEs, `provider`/`region` on create, `metadata: {}`, multipart uploads with the `path` field
// before or after the file or missing, download paths raw or percent-encoded, and every route at the
// root path as well (AGENTBOX_ROOT_ALIASES=1, for clients whose base URL lost `/v1/agents`).
//
// Those clients build typed objects from the responses (Python: `Type(**response)`), so a response
// must carry every required field and no field the type does not know: checked per response type.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import { startServer, type TestServer } from "./helpers/server.js";

const PY_UA = "gravixlayer-python/0.0.45";

/** Fields of the clients' response types: required ones, then optional ones. */
const TYPES: Record<string, [string[], string[]]> = {
  Sandbox: [
    ["sandbox_id", "status"],
    ["template", "template_id", "started_at", "timeout_at", "cpu_count", "memory_mb", "metadata", "ended_at"],
  ],
  SandboxMetrics: [["timestamp", "cpu_usage", "memory_usage", "memory_total", "disk_read", "disk_write", "network_rx", "network_tx"], []],
  SandboxTimeoutResponse: [["message"], ["timeout", "timeout_at"]],
  SandboxKillResponse: [["message"], ["sandbox_id"]],
  FileReadResponse: [["content"], ["path", "size"]],
  FileWriteResponse: [["message"], ["path", "bytes_written"]],
  FileListResponse: [["files"], []],
  FileInfo: [["name", "path", "size", "is_dir", "modified_at"], ["mode"]],
  FileDeleteResponse: [["message"], ["path"]],
  DirectoryCreateResponse: [["message"], ["path"]],
  FileUploadResponse: [["message"], ["path", "size"]],
  CommandRunResponse: [["stdout", "stderr", "exit_code", "duration_ms", "success"], ["error"]],
  CodeContext: [
    ["context_id", "language", "cwd", "created_at", "expires_at"],
    ["status", "last_used"],
  ],
  CodeContextDeleteResponse: [["message"], ["context_id"]],
};

/** The client could build its `type` from `body`: nothing required is missing, nothing unknown is there. */
function buildable(type: keyof typeof TYPES, body: unknown): Record<string, unknown> {
  const [required, optional] = TYPES[type] as [string[], string[]];
  assert.ok(body !== null && typeof body === "object" && !Array.isArray(body), `${type}: ${JSON.stringify(body)}`);
  const keys = Object.keys(body as object);
  for (const k of required) assert.ok(keys.includes(k), `${type} needs '${k}': ${JSON.stringify(body)}`);
  for (const k of keys) assert.ok(required.includes(k) || optional.includes(k), `${type} does not know '${k}'`);
  return body as Record<string, unknown>;
}

let server: TestServer;

before(async () => {
  server = await startServer({ env: { AGENTBOX_ROOT_ALIASES: "1" } });
});

after(async () => {
  await server?.dispose();
});

interface Sent {
  status: number;
  body: unknown;
  raw: Buffer;
  headers: Headers;
}

/** One request with exactly these headers and body (nothing added but what fetch must add). */
async function send(method: string, url: string, headers: Record<string, string>, body?: string | FormData): Promise<Sent> {
  const res = await fetch(`${server.url}${url}`, { method, headers, body });
  const raw = Buffer.from(await res.arrayBuffer());
  let parsed: unknown = raw;
  if ((res.headers.get("content-type") ?? "").startsWith("application/json")) parsed = JSON.parse(raw.toString());
  return { status: res.status, body: parsed, raw, headers: res.headers };
}

/**
 * The Python client: every non-upload request carries Content-Type: application/json; a request
 * without data sends no body (requests adds Content-Length: 0 for a bodiless DELETE/POST).
 */
function python(prefix: string) {
  const headers = () => ({ authorization: `Bearer ${server.key}`, "user-agent": PY_UA, "content-type": "application/json" });
  return {
    json: (method: string, route: string, data?: unknown) => {
      const h: Record<string, string> = headers();
      if (data === undefined && method !== "GET") h["content-length"] = "0";
      return send(method, `${prefix}/${route}`, h, data === undefined ? undefined : JSON.stringify(data));
    },
    /** requests' multipart: the `data` fields first, then the files. */
    upload: (route: string, file: Uint8Array, filename: string, path?: string) => {
      const form = new FormData();
      if (path) form.append("path", path);
      form.append("file", new Blob([new Uint8Array(file)]), filename);
      return send("POST", `${prefix}/${route}`, { authorization: `Bearer ${server.key}`, "user-agent": PY_UA }, form);
    },
  };
}

/** The Node client: form-data with the file first, `path` after it; a Buffer is named 'uploaded_file'. */
function nodeUpload(prefix: string, route: string, file: Uint8Array, path?: string) {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(file)]), "uploaded_file");
  if (path) form.append("path", path);
  return send("POST", `${prefix}/${route}`, { authorization: `Bearer ${server.key}` }, form);
}

for (const prefix of ["/v1/agents", ""]) {
  describe(`a full client session at '${prefix || "/"}'`, () => {
    const py = python(prefix);
    let id: string;

    test("create with provider and region, as the Python client sends it", async () => {
      const res = await py.json("POST", "sandboxes", { provider: "gravix", region: "eu-west-1", template: "python-base-v1", timeout: 300 });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const sandbox = buildable("Sandbox", res.body);
      assert.deepEqual(Object.keys(sandbox).sort(), [...(TYPES.Sandbox?.[0] ?? []), ...(TYPES.Sandbox?.[1] ?? [])].sort());
      assert.equal(sandbox.status, "running");
      id = String(sandbox.sandbox_id);
    });

    test("create as the Node client sends it: metadata {} and env_vars", async () => {
      const res = await send(
        "POST",
        `${prefix}/sandboxes`,
        { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
        JSON.stringify({
          provider: "gravix",
          region: "eu-west-1",
          template: "python-base-v1",
          timeout: 300,
          metadata: {},
          env_vars: { A: "1" },
        }),
      );
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.deepEqual(buildable("Sandbox", res.body).metadata, {});
      const sid = String((res.body as { sandbox_id: string }).sandbox_id);
      const del = await py.json("DELETE", `sandboxes/${sid}`);
      assert.equal(del.status, 200);
      buildable("SandboxKillResponse", del.body);
    });

    test("GET with Content-Type json and no body: get, list, metrics, templates", async () => {
      const got = await py.json("GET", `sandboxes/${id}`);
      assert.equal(got.status, 200, JSON.stringify(got.body));
      buildable("Sandbox", got.body);
      const list = await py.json("GET", "sandboxes?limit=100&offset=0");
      assert.equal(list.status, 200);
      assert.deepEqual(Object.keys(list.body as object).sort(), ["sandboxes", "total"]);
      const metrics = await py.json("GET", `sandboxes/${id}/metrics`);
      assert.equal(metrics.status, 200, JSON.stringify(metrics.body));
      buildable("SandboxMetrics", metrics.body);
      const templates = await py.json("GET", "templates?limit=100&offset=0");
      assert.equal(templates.status, 200);
    });

    test("commands/run as both clients send it", async () => {
      const withArgs = await py.json("POST", `sandboxes/${id}/commands/run`, {
        command: "ls",
        args: ["-la"],
        working_dir: "/home/user",
        timeout: 10000,
      });
      assert.equal(withArgs.status, 200, JSON.stringify(withArgs.body));
      const r = buildable("CommandRunResponse", withArgs.body);
      assert.equal(r.exit_code, 0);
      assert.match(String(r.stdout), /^total /);
      const plain = buildable(
        "CommandRunResponse",
        (await py.json("POST", `sandboxes/${id}/commands/run`, { command: "echo $X", environment: { X: "y" } })).body,
      );
      assert.equal(plain.stdout, "y\n");
    });

    test("files: write, read, list, mkdir, delete", async () => {
      buildable(
        "FileWriteResponse",
        (await py.json("POST", `sandboxes/${id}/files/write`, { path: "/home/user/hello.py", content: "print('hi')" })).body,
      );
      const read = buildable("FileReadResponse", (await py.json("POST", `sandboxes/${id}/files/read`, { path: "hello.py" })).body);
      assert.equal(read.content, "print('hi')");
      buildable("DirectoryCreateResponse", (await py.json("POST", `sandboxes/${id}/files/mkdir`, { path: "/home/user/data" })).body);
      const list = buildable("FileListResponse", (await py.json("POST", `sandboxes/${id}/files/list`, { path: "/home/user" })).body);
      const files = list.files as Record<string, unknown>[];
      for (const f of files) buildable("FileInfo", f);
      assert.deepEqual(files.map((f) => f.name).sort(), ["data", "hello.py"]);
      buildable("FileDeleteResponse", (await py.json("POST", `sandboxes/${id}/files/delete`, { path: "/home/user/data" })).body);
    });

    test("uploads: Python order (path first), Node order (path last), no path at all", async () => {
      const bytes = crypto.randomBytes(4096);
      const pyUp = await py.upload(`sandboxes/${id}/upload`, bytes, "local.bin", "/home/user/data/py.bin");
      assert.equal(pyUp.status, 200, JSON.stringify(pyUp.body));
      assert.equal(buildable("FileUploadResponse", pyUp.body).path, "/home/user/data/py.bin");
      const nodeUp = await nodeUpload(prefix, `sandboxes/${id}/upload`, bytes, "/home/user/data/node.bin");
      assert.equal(buildable("FileUploadResponse", nodeUp.body).path, "/home/user/data/node.bin");
      const noPath = await nodeUpload(prefix, `sandboxes/${id}/files/upload`, bytes);
      assert.equal(buildable("FileUploadResponse", noPath.body).path, "/home/user/uploaded_file");
      const noPathPy = await py.upload(`sandboxes/${id}/upload`, bytes, "report v2.csv");
      assert.equal(buildable("FileUploadResponse", noPathPy.body).path, "/home/user/report v2.csv");
      for (const path of ["/home/user/data/py.bin", "/home/user/data/node.bin", "/home/user/uploaded_file"]) {
        const down = await py.json("GET", `sandboxes/${id}/download?path=${encodeURIComponent(path)}`);
        assert.deepEqual(down.raw, bytes, path);
      }
    });

    test("downloads: the Python client's raw path and the Node client's encodeURIComponent", async () => {
      // Python: f"...download?path={path}" (requests percent-encodes the space itself).
      const py1 = await py.json("GET", `sandboxes/${id}/download?path=/home/user/report%20v2.csv`);
      assert.equal(py1.status, 200);
      assert.equal(py1.raw.length, 4096);
      // Node: encodeURIComponent(path), slashes included.
      const node = await send("GET", `${prefix}/sandboxes/${id}/download?path=${encodeURIComponent("/home/user/report v2.csv")}`, {
        authorization: `Bearer ${server.key}`,
        "content-type": "application/json",
      });
      assert.equal(node.status, 200);
      assert.deepEqual(node.raw, py1.raw);
      assert.equal(node.headers.get("content-type"), "application/octet-stream");
      // A '+' in a raw (unencoded) path is a plus sign when no file with a space exists.
      await py.json("POST", `sandboxes/${id}/files/write`, { path: "/home/user/c++ notes.txt", content: "plus" });
      assert.equal((await py.json("GET", `sandboxes/${id}/download?path=/home/user/c++%20notes.txt`)).raw.toString(), "plus");
      assert.equal(
        (await py.json("GET", `sandboxes/${id}/download?path=${encodeURIComponent("/home/user/c++ notes.txt")}`)).raw.toString(),
        "plus",
      );
    });

    test("code contexts: create, get, run in it, delete", async () => {
      const created = await py.json("POST", `sandboxes/${id}/code/contexts`, { language: "python", cwd: "/home/user/data" });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const ctx = buildable("CodeContext", created.body);
      const contextId = String(ctx.context_id);
      buildable("CodeContext", (await py.json("GET", `sandboxes/${id}/code/contexts/${contextId}`)).body);
      const run = await py.json("POST", `sandboxes/${id}/code/run`, {
        code: "import os\nprint(os.getcwd())",
        language: "python",
        context_id: contextId,
      });
      assert.equal(run.status, 200, JSON.stringify(run.body));
      assert.equal((run.body as { logs: { stdout: string } }).logs.stdout, "/home/user/data\n");
      const del = await py.json("DELETE", `sandboxes/${id}/code/contexts/${contextId}`);
      assert.equal(del.status, 200, JSON.stringify(del.body));
      assert.equal(buildable("CodeContextDeleteResponse", del.body).context_id, contextId);
      const defaults = await py.json("POST", `sandboxes/${id}/code/contexts`, {});
      assert.equal(buildable("CodeContext", defaults.body).language, "python");
    });

    test("timeout and kill", async () => {
      buildable("SandboxTimeoutResponse", (await py.json("POST", `sandboxes/${id}/timeout`, { timeout: 600 })).body);
      const del = await py.json("DELETE", `sandboxes/${id}`);
      assert.equal(del.status, 200, JSON.stringify(del.body));
      buildable("SandboxKillResponse", del.body);
    });
  });
}

test("without AGENTBOX_ROOT_ALIASES the root paths do not exist", async () => {
  const plain = await startServer();
  try {
    const res = await fetch(`${plain.url}/sandboxes`, { headers: { authorization: `Bearer ${plain.key}` } });
    assert.equal(res.status, 404);
    const prefixed = await fetch(`${plain.url}/v1/agents/sandboxes`, { headers: { authorization: `Bearer ${plain.key}` } });
    assert.equal(prefixed.status, 200);
  } finally {
    await plain.dispose();
  }
});
