// Stored files (/v1/files) end to end: a 200 MB upload and download with the service's memory
// sampled and the checksum compared, a cut-off upload leaving nothing, ranges, expiry with the
// reaper, tenant isolation, import/export with a real sandbox, bad input; on a second service
// with a small file limit and small quotas, the 413 and 429 refusals; on a third, parallel uploads
// held midway, counted against each other as their bytes arrive.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { openDb } from "../src/store/db.js";
import { KeyDirectory } from "../src/tenancy/key-directory.js";
import { SqliteKeyStore } from "../src/tenancy/store/keys.js";
import { SqliteTenantStore } from "../src/tenancy/store/tenants.js";
import { assertError, type Call, createSandbox } from "./helpers/api.js";
import { multipartUpload, patternChunks, patternSha256 } from "./helpers/multipart.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

const MB = 1_000_000;
const MiB = 2 ** 20;

interface FileJson {
  id: string;
  object: string;
  bytes: number;
  filename: string;
  purpose: string;
  sha256: string;
  created_at: number;
  expires_at: number | null;
  message?: string;
  file_name?: string;
}

/** A service with keys for two tenants made in its database before it starts. */
async function serviceWithTenants(env: Record<string, string>, quotas: Record<string, number> = {}) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-files-"));
  const db = openDb(dataDir);
  const keys = new KeyDirectory(new SqliteKeyStore(db));
  const made = [(await keys.create({ name: "alpha", tenantId: "alpha" })).key, (await keys.create({ name: "beta", tenantId: "beta" })).key];
  await keys.close();
  const tenants = new SqliteTenantStore(db);
  for (const [t, mb] of Object.entries(quotas)) await tenants.put(t, { storageMb: mb }, new Date().toISOString());
  db.close();
  const server = await startServer({ dataDir, env });
  return { server, keys: made as [string, string] };
}

function upload(
  server: TestServer,
  key: string,
  size: number,
  opts: { purpose?: string; fields?: Record<string, string>; seed?: Buffer } = {},
) {
  const seed = opts.seed ?? crypto.randomBytes(MiB);
  return multipartUpload({
    port: server.port,
    path: "/v1/files",
    key,
    before: { purpose: opts.purpose ?? "assistants", ...opts.fields },
    file: { filename: "data.bin", size, chunks: patternChunks(size, seed) },
  });
}

/** GET a file's bytes: status, headers, sha256 and length of the body (not kept). */
function fetchBytes(server: TestServer, key: string, route: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; sha256: string; length: number; text: string }>(
    (resolve, reject) => {
      http
        .get({ host: "127.0.0.1", port: server.port, path: route, headers: { authorization: `Bearer ${key}`, ...headers } }, (res) => {
          const h = crypto.createHash("sha256");
          let length = 0;
          let text = "";
          res.on("data", (c: Buffer) => {
            h.update(c);
            length += c.length;
            if (text.length < 4096) text += c.toString("latin1");
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, sha256: h.digest("hex"), length, text }));
          res.on("error", reject);
        })
        .on("error", reject);
    },
  );
}

function rssBytes(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
}

/** Entries (recursively) under the service's file storage: what an upload leaves on disk. */
function storedEntries(server: TestServer): string[] {
  const root = path.join(server.dataDir, "files");
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(root, p));
    }
  };
  walk(root);
  return out;
}

async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("stored files", () => {
  let server: TestServer;
  let alpha: Call;
  let beta: Call;
  let alphaKey: string;

  before(async () => {
    // No embedding model loading in the background (AGENTBOX_EMBEDDING_PRELOAD): its worker's memory
    // would be counted in the upload's RSS growth below.
    const s = await serviceWithTenants({ AGENTBOX_FILES_REAPER_INTERVAL_MS: "100", AGENTBOX_EMBEDDING_PRELOAD: "0" });
    server = s.server;
    alphaKey = s.keys[0];
    alpha = client({ url: server.url, key: s.keys[0] });
    beta = client({ url: server.url, key: s.keys[1] });
  });

  after(async () => {
    await server?.dispose();
  });

  test("a 200 MB upload streams to disk (bounded memory) and downloads with the same sha256", async (t) => {
    const size = 200 * MB;
    const seed = crypto.randomBytes(MiB);
    const expected = patternSha256(size, seed);
    const pid = server.process.pid as number;
    const base = rssBytes(pid);
    let peak = base;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(pid));
    }, 10);
    const res = await upload(server, alphaKey, size, { seed, purpose: "fine-tune" });
    clearInterval(sampler);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const f = res.body as FileJson;
    assert.equal(f.message, "File uploaded successfully");
    assert.equal(f.file_name, "data.bin");
    assert.equal(f.purpose, "fine-tune");
    assert.equal(f.object, "file");
    assert.match(f.id, /^file-[0-9a-f]{24}$/);
    assert.equal(f.bytes, size);
    assert.equal(f.sha256, expected);
    assert.equal(f.expires_at, null);
    // Streaming holds a few chunks, not the file: the growth is a small fraction of 200 MB.
    const growth = peak - base;
    t.diagnostic(`service RSS ${(base / MiB).toFixed(0)} MiB before, peak growth ${(growth / MiB).toFixed(1)} MiB during the upload`);
    assert.ok(growth < 48 * MiB, `the service's RSS grew by ${(growth / MiB).toFixed(1)} MiB during a 200 MB upload`);

    const got = await fetchBytes(server, alphaKey, `/v1/files/${f.id}/content`);
    assert.equal(got.status, 200);
    assert.equal(got.headers["content-length"], String(size));
    assert.equal(got.length, size);
    assert.equal(got.sha256, expected);
    assert.equal((await alpha("DELETE", `/v1/files/${f.id}`)).status, 200);
  });

  test("an upload cut off halfway leaves no record and no bytes", async () => {
    const before = storedEntries(server);
    // The half-received bytes are on disk while the upload streams (so the test sees them removed).
    let sawPartial = false;
    const watcher = setInterval(() => {
      sawPartial ||= storedEntries(server).some((e) => e.startsWith("tmp/"));
    }, 5);
    const cut = multipartUpload({
      port: server.port,
      path: "/v1/files",
      key: alphaKey,
      before: { purpose: "batch" },
      file: { filename: "cut.bin", size: 64 * MB, chunks: patternChunks(64 * MB) },
      cutAfter: 32 * MB,
    });
    await assert.rejects(cut);
    clearInterval(watcher);
    assert.ok(sawPartial, "the upload's temporary file was seen while it streamed");
    await eventually(() => storedEntries(server).length === before.length, "the cut-off upload's bytes are removed");
    assert.deepEqual(storedEntries(server), before);
    const list = await alpha<{ data: FileJson[] }>("GET", "/v1/files");
    assert.ok(!list.body.data.some((f) => f.filename === "cut.bin"));
    // The service is fine afterwards.
    assert.equal((await upload(server, alphaKey, 1000)).status, 200);
  });

  test("get, list with pagination, content/download, ranges, delete", async () => {
    const seed = crypto.randomBytes(MiB);
    const a = (await upload(server, alphaKey, 1000, { seed })).body as FileJson;
    const b = (await upload(server, alphaKey, 3000, { purpose: "vision" })).body as FileJson;
    // Fields may also follow the file part (curl sends them in command-line order).
    const late = await multipartUpload({
      port: server.port,
      path: "/v1/files",
      key: alphaKey,
      file: { filename: "late.txt", size: 10, chunks: patternChunks(10) },
      after: { purpose: "evals", expires_after: "600" },
    });
    assert.equal(late.status, 200, JSON.stringify(late.body));
    const lateFile = late.body as FileJson;
    assert.equal(lateFile.purpose, "evals");
    assert.equal(lateFile.expires_at, lateFile.created_at + 600);
    assert.equal((await alpha("DELETE", `/v1/files/${lateFile.id}`)).status, 200);
    // HEAD: the headers of a download, no body.
    const head = await fetch(`${server.url}/v1/files/${b.id}/content`, {
      method: "HEAD",
      headers: { authorization: `Bearer ${alphaKey}` },
    });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-length"), "3000");
    assert.equal((await head.arrayBuffer()).byteLength, 0);
    const got = await alpha<FileJson>("GET", `/v1/files/${a.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(Object.keys(got.body).sort(), [
      "bytes",
      "created_at",
      "expires_after",
      "expires_at",
      "filename",
      "id",
      "object",
      "purpose",
      "sha256",
      "status",
    ]);
    assert.equal(got.body.sha256, patternSha256(1000, seed));

    const page1 = await alpha<{ data: FileJson[]; has_more: boolean; last_id: string }>("GET", "/v1/files?limit=1");
    assert.equal(page1.body.data[0]?.id, b.id, "newest first");
    assert.equal(page1.body.has_more, true);
    const page2 = await alpha<{ data: FileJson[] }>("GET", `/v1/files?limit=1&after=${page1.body.last_id}`);
    assert.equal(page2.body.data[0]?.id, a.id);
    const vision = await alpha<{ data: FileJson[] }>("GET", "/v1/files?purpose=vision");
    assert.deepEqual(
      vision.body.data.map((f) => f.id),
      [b.id],
    );

    const whole = patternChunks(1000, seed).next().value as Buffer;
    for (const action of ["content", "download"]) {
      const full = await fetchBytes(server, alphaKey, `/v1/files/${a.id}/${action}`);
      assert.equal(full.status, 200);
      assert.equal(full.headers["accept-ranges"], "bytes");
      assert.equal(full.text, whole.toString("latin1"));
    }
    const cases: [string, number, string, Buffer][] = [
      ["bytes=10-19", 206, "bytes 10-19/1000", whole.subarray(10, 20)],
      ["bytes=990-", 206, "bytes 990-999/1000", whole.subarray(990)],
      ["bytes=-5", 206, "bytes 995-999/1000", whole.subarray(995)],
      ["bytes=900-5000", 206, "bytes 900-999/1000", whole.subarray(900)],
    ];
    for (const [range, status, contentRange, bytes] of cases) {
      const r = await fetchBytes(server, alphaKey, `/v1/files/${a.id}/content`, { range });
      assert.equal(r.status, status, range);
      assert.equal(r.headers["content-range"], contentRange);
      assert.equal(r.headers["content-length"], String(bytes.length));
      assert.equal(r.text, bytes.toString("latin1"));
    }
    for (const range of ["bytes=1000-", "bytes=50-10", "bytes=-0"]) {
      const r = await fetchBytes(server, alphaKey, `/v1/files/${a.id}/content`, { range });
      assert.equal(r.status, 416, range);
      assert.equal(r.headers["content-range"], "bytes */1000");
      assert.equal(JSON.parse(r.text).error.code, "range_not_satisfiable");
    }

    const del = await alpha("DELETE", `/v1/files/${a.id}`);
    assert.equal(del.status, 200);
    assert.deepEqual(
      { ...del.body, message: undefined },
      { message: undefined, file_id: a.id, file_name: "data.bin", id: a.id, object: "file", deleted: true },
    );
    assertError(await alpha("GET", `/v1/files/${a.id}`), 404, "file_not_found");
    assertError(await alpha("DELETE", `/v1/files/${a.id}`), 404, "file_not_found");
    assert.equal((await alpha("DELETE", `/v1/files/${b.id}`)).status, 200);
  });

  test("an expired file is hidden and the reaper deletes its bytes", async () => {
    const f = (await upload(server, alphaKey, 2000, { fields: { expires_after: "1" } })).body as FileJson;
    assert.equal(f.expires_at, f.created_at + 1);
    const keep = (await upload(server, alphaKey, 2000, { fields: { expires_after: "3600" } })).body as FileJson;
    assert.equal((await alpha("GET", `/v1/files/${f.id}`)).status, 200);
    await eventually(async () => (await alpha("GET", `/v1/files/${f.id}`)).status === 404, "the file expires", 5000);
    await eventually(() => !storedEntries(server).some((e) => e.endsWith(f.id)), "the reaper removes the bytes", 5000);
    assert.equal((await alpha("GET", `/v1/files/${keep.id}`)).status, 200);
    await alpha("DELETE", `/v1/files/${keep.id}`);
  });

  test("another tenant's file does not exist for it", async () => {
    const f = (await upload(server, alphaKey, 100)).body as FileJson;
    for (const [method, route] of [
      ["GET", `/v1/files/${f.id}`],
      ["GET", `/v1/files/${f.id}/content`],
      ["GET", `/v1/files/${f.id}/download`],
      ["DELETE", `/v1/files/${f.id}`],
    ] as const) {
      assertError(await beta(method, route), 404, "file_not_found");
    }
    const list = await beta<{ data: FileJson[] }>("GET", "/v1/files");
    assert.deepEqual(list.body.data, []);
    const sbx = await createSandbox(beta);
    assertError(await beta("POST", `/v1/agents/sandboxes/${sbx}/files/import`, { file_id: f.id }), 404, "file_not_found");
    await beta("DELETE", `/v1/agents/sandboxes/${sbx}`);
    assert.equal((await alpha("GET", `/v1/files/${f.id}`)).status, 200);
    await alpha("DELETE", `/v1/files/${f.id}`);
  });

  test("import into a sandbox and export back: same bytes", async () => {
    const size = 3 * MiB + 123;
    const seed = crypto.randomBytes(MiB);
    const f = (await upload(server, alphaKey, size, { seed })).body as FileJson;
    const sbx = await createSandbox(alpha);
    const imp = await alpha<{ path: string; size: number }>("POST", `/v1/agents/sandboxes/${sbx}/files/import`, {
      file_id: f.id,
      path: "in/copy.bin",
    });
    assert.equal(imp.status, 200, JSON.stringify(imp.body));
    assert.equal(imp.body.path, "/home/user/in/copy.bin");
    assert.equal(imp.body.size, size);
    // The sandbox sees the bytes: its own sha256sum.
    const sum = await alpha<{ stdout: string }>("POST", `/v1/agents/sandboxes/${sbx}/commands/run`, { command: "sha256sum in/copy.bin" });
    assert.equal(sum.body.stdout.split(" ")[0], f.sha256);
    // Default path: /home/user/<filename>.
    const def = await alpha<{ path: string }>("POST", `/v1/agents/sandboxes/${sbx}/files/import`, { file_id: f.id });
    assert.equal(def.body.path, "/home/user/data.bin");

    const made = await alpha("POST", `/v1/agents/sandboxes/${sbx}/commands/run`, {
      command: "head -c 2000000 /dev/urandom > out.bin && sha256sum out.bin",
    });
    const outSum = (made.body as { stdout: string }).stdout.split(" ")[0];
    const exp = await alpha<FileJson>("POST", `/v1/agents/sandboxes/${sbx}/files/export`, { path: "out.bin", purpose: "user_data" });
    assert.equal(exp.status, 200, JSON.stringify(exp.body));
    assert.equal(exp.body.filename, "out.bin");
    assert.equal(exp.body.bytes, 2_000_000);
    assert.equal(exp.body.sha256, outSum);
    const back = await fetchBytes(server, alphaKey, `/v1/files/${exp.body.id}/content`);
    assert.equal(back.sha256, outSum);

    assertError(
      await alpha("POST", `/v1/agents/sandboxes/${sbx}/files/export`, { path: "nope.bin", purpose: "user_data" }),
      404,
      "file_not_found",
    );
    assertError(
      await alpha("POST", `/v1/agents/sandboxes/${sbx}/files/export`, { path: "out.bin", purpose: "nope" }),
      400,
      "invalid_request",
    );
    assertError(
      await alpha("POST", `/v1/agents/sandboxes/${sbx}/files/import`, { file_id: "file-000000000000000000000000" }),
      404,
      "file_not_found",
    );
    assertError(await alpha("POST", "/v1/agents/sandboxes/no-such-sandbox/files/import", { file_id: f.id }), 404, "sandbox_not_found");
    await alpha("DELETE", `/v1/agents/sandboxes/${sbx}`);
    await alpha("DELETE", `/v1/files/${f.id}`);
    await alpha("DELETE", `/v1/files/${exp.body.id}`);
  });

  test("bad input is a clear 400 and stores nothing", async () => {
    const before = storedEntries(server);
    const bad = async (up: Parameters<typeof multipartUpload>[0], needle: RegExp) => {
      const res = await multipartUpload(up);
      const body = assertError(res, 400, "invalid_request");
      assert.match(body.error.message, needle);
    };
    const file = () => ({ filename: "x.bin", size: 10, chunks: patternChunks(10) });
    const base = { port: server.port, path: "/v1/files", key: alphaKey };
    await bad({ ...base, before: { purpose: "nonsense" }, file: file() }, /purpose.*must be one of/);
    await bad({ ...base, file: file(), after: { purpose: "nonsense" } }, /purpose.*must be one of/);
    await bad({ ...base, file: file() }, /'purpose' is required/);
    await bad({ ...base, before: { purpose: "batch" } }, /no 'file' part/);
    for (const e of ["-5", "0", "99999999999", "soon", "1.5"]) {
      await bad({ ...base, before: { purpose: "batch", expires_after: e }, file: file() }, /expires_after/);
    }
    await bad({ ...base, before: { purpose: "batch" }, file: { ...file(), field: "data" } }, /must be named 'file'/);
    // Two file parts.
    const boundary = "b0undary";
    const twoFiles =
      `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a"\r\n\r\naaa\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="b"\r\n\r\nbbb\r\n--${boundary}--\r\n`;
    const res = await fetch(`${server.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${alphaKey}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      body: twoFiles,
    });
    const two = { status: res.status, body: await res.json() };
    assert.match(assertError(two, 400, "invalid_request").error.message, /exactly one file/);
    assertError(await alpha("POST", "/v1/files", { purpose: "batch" }), 400, "invalid_request");
    assertError(await alpha("GET", "/v1/files/bad id!"), 400, "invalid_request");
    assertError(await alpha("GET", `/v1/files/${"x".repeat(200)}`), 400, "invalid_request");
    assertError(await alpha("GET", "/v1/files/file-000000000000000000000000"), 404, "file_not_found");
    assertError(await alpha("GET", "/v1/files?purpose=nope"), 400, "invalid_request");
    assertError(await alpha("GET", "/v1/files?limit=-1"), 400, "invalid_request");
    assert.deepEqual(storedEntries(server), before, "refused uploads left no bytes");
  });
});

describe("stored files: size limit and quotas", () => {
  let server: TestServer;
  let keys: [string, string];
  /** A sandbox of alpha's, made by the first test. */
  let sandbox = "";

  before(async () => {
    // alpha: the default quota (4 MiB); beta: its own storage_mb quota set by the operator (2 MiB).
    const s = await serviceWithTenants({ AGENTBOX_MAX_FILE_BYTES: String(3 * MiB), AGENTBOX_TENANT_FILES_MB: "4" }, { beta: 2 });
    server = s.server;
    keys = s.keys;
  });

  after(async () => {
    await server?.dispose();
  });

  test("a file over the size limit is 413 and leaves nothing", async () => {
    const res = await upload(server, keys[0], 3 * MiB + 1);
    assert.match(assertError(res, 413, "payload_too_large").error.message, /limit of 3145728 bytes/);
    assert.equal((await upload(server, keys[0], 3 * MiB)).status, 200, "exactly the limit is fine");
    const sbx = await createSandbox(client({ url: server.url, key: keys[0] }));
    const call = client({ url: server.url, key: keys[0] });
    await call("POST", `/v1/agents/sandboxes/${sbx}/commands/run`, { command: "head -c 3145729 /dev/zero > big.bin" });
    assertError(
      await call("POST", `/v1/agents/sandboxes/${sbx}/files/export`, { path: "big.bin", purpose: "batch" }),
      413,
      "payload_too_large",
    );
    sandbox = sbx;
  });

  test("the tenant quota (default and operator-set) is 429 once exceeded, checked while streaming", async () => {
    // alpha holds 3 MiB from the previous test; 1 MiB more fits, then nothing.
    assert.equal((await upload(server, keys[0], MiB)).status, 200);
    const over = await upload(server, keys[0], 1000);
    assert.match(assertError(over, 429, "quota_exceeded").error.message, /Storage quota exceeded.*4 MiB/);
    // An export is held to the same quota.
    const call = client({ url: server.url, key: keys[0] });
    await call("POST", `/v1/agents/sandboxes/${sandbox}/commands/run`, { command: "echo small > small.txt" });
    assertError(
      await call("POST", `/v1/agents/sandboxes/${sandbox}/files/export`, { path: "small.txt", purpose: "batch" }),
      429,
      "quota_exceeded",
    );
    await call("DELETE", `/v1/agents/sandboxes/${sandbox}`);
    // beta: 2 MiB set by the operator; a 3 MiB file is refused as it streams, not after.
    assert.equal((await upload(server, keys[1], MiB)).status, 200);
    assertError(await upload(server, keys[1], 3 * MiB), 429, "quota_exceeded");
    const files = await client({ url: server.url, key: keys[1] })<{ data: FileJson[] }>("GET", "/v1/files");
    assert.equal(files.body.data.length, 1);
    // Deleting frees the space.
    const alphaCall = client({ url: server.url, key: keys[0] });
    const mine = await alphaCall<{ data: FileJson[] }>("GET", "/v1/files");
    for (const f of mine.body.data) await alphaCall("DELETE", `/v1/files/${f.id}`);
    assert.equal((await upload(server, keys[0], MiB)).status, 200);
  });

  test("start-up removes half-written uploads and bytes without a record, keeps stored files", async () => {
    const kept = (await upload(server, keys[0], 1000)).body as FileJson;
    await server.stop();
    const root = path.join(server.dataDir, "files");
    fs.writeFileSync(path.join(root, "tmp", "left-by-a-crash"), "partial");
    fs.mkdirSync(path.join(root, "objects", "ff"), { recursive: true });
    fs.writeFileSync(path.join(root, "objects", "ff", "file-0000000000000000000000ff"), "no record");
    server = await startServer({
      dataDir: server.dataDir,
      workspaceDir: server.workspaceDir,
      key: server.key,
      env: { AGENTBOX_TENANT_FILES_MB: "4" },
    });
    assert.deepEqual(fs.readdirSync(path.join(root, "tmp")), []);
    assert.ok(!fs.existsSync(path.join(root, "objects", "ff", "file-0000000000000000000000ff")));
    const again = await fetchBytes(server, keys[0], `/v1/files/${kept.id}/content`);
    assert.equal(again.status, 200);
    assert.equal(again.sha256, kept.sha256);
  });
});

describe("stored files: uploads in flight share the quota", () => {
  let server: TestServer;
  let keys: [string, string];

  before(async () => {
    const s = await serviceWithTenants({});
    server = s.server;
    keys = s.keys;
    // The operator sets alpha's storage quota through the admin API: 4 MiB.
    const admin = client({ url: server.url, key: server.adminKey });
    assert.equal((await admin("PUT", "/v1/admin/tenants/alpha", { storage_mb: 4 })).status, 200);
  });

  after(async () => {
    await server?.dispose();
  });

  test("parallel uploads that together pass the quota: the one that does not fit is refused while they stream", async () => {
    // Three 2 MiB uploads at once, each held after 1.5 MiB: 4.5 MiB received would pass 4 MiB.
    // Counted only against stored bytes, none would be refused until they end (and all three
    // would be on disk at once); counted against each other, one is refused while they are held.
    let letGo = () => {};
    const until = new Promise<void>((r) => {
      letGo = r;
    });
    const answers: ({ status: number; body: unknown; headers: http.IncomingHttpHeaders } | undefined)[] = [];
    const uploads = [0, 1, 2].map((i) =>
      multipartUpload({
        port: server.port,
        path: "/v1/files",
        key: keys[0],
        before: { purpose: "batch" },
        file: { filename: `part-${i}.bin`, size: 2 * MiB, chunks: patternChunks(2 * MiB) },
        hold: { after: 1.5 * MiB, until },
      }).then((res) => {
        answers[i] = res;
        return res;
      }),
    );
    try {
      // A refused upload whose client still sends is answered within 10 s (the rest of its body is read first).
      await eventually(() => answers.filter(Boolean).length > 0, "one held upload is refused", 60_000);
      await new Promise((r) => setTimeout(r, 500));
      const early = answers.filter((a) => a !== undefined);
      assert.equal(early.length, 1, "exactly one is refused; the others still fit");
      const refused = early[0] as { status: number; body: unknown; headers: http.IncomingHttpHeaders };
      assert.match(assertError(refused, 429, "quota_exceeded").error.message, /Storage quota exceeded.*4 MiB/);
      assert.ok(Number(refused.headers["retry-after"]) > 0, "a Retry-After comes with the refusal");
      const staged = fs.readdirSync(path.join(server.dataDir, "files", "tmp"));
      const stagedBytes = staged.reduce((n, f) => n + fs.statSync(path.join(server.dataDir, "files", "tmp", f)).size, 0);
      assert.ok(stagedBytes <= 4 * MiB, `the held uploads stage at most the quota: ${stagedBytes} bytes in ${staged.length} files`);
    } finally {
      letGo();
    }
    const settled = await Promise.allSettled(uploads);
    const statuses = settled.map((r) => (r.status === "fulfilled" ? r.value.status : 0));
    assert.deepEqual(
      statuses.filter((s) => s === 200).length,
      2,
      `the two held uploads finish and fit exactly: ${JSON.stringify(statuses)}`,
    );
    const alpha = client({ url: server.url, key: keys[0] });
    const list = await alpha<{ data: FileJson[] }>("GET", "/v1/files");
    assert.equal(
      list.body.data.reduce((n, f) => n + f.bytes, 0),
      4 * MiB,
    );
    assert.deepEqual(fs.readdirSync(path.join(server.dataDir, "files", "tmp")), [], "nothing of the refused upload is kept");
    // Full: one byte more is refused; deleting a file frees its room.
    assertError(await upload(server, keys[0], 1), 429, "quota_exceeded");
    assert.equal((await alpha("DELETE", `/v1/files/${list.body.data[0]?.id}`)).status, 200);
    assert.equal((await upload(server, keys[0], 2 * MiB)).status, 200);
  });
});
