// End to end: the file routes against the real service. Exact response keys, relative and
// absolute paths, every error path, upload (both routes, with and without `path`) and download
// (binary-safe, percent-encoded paths), size limits, and every attempt to reach the host's files:
// `../../etc/passwd`, absolute host paths, and symlinks made inside the sandbox.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import { after, before, describe, test } from "node:test";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { assertError, createSandbox } from "./helpers/api.js";

const MiB = 2 ** 20;
const UPLOAD_LIMIT = 6 * MiB;
const READ_LIMIT = 1 * MiB;
const DISK_MB = 16;
const LIST_LIMIT = 40;

/** The sandbox's own /etc/passwd (src/sandbox/bwrap.ts), never the host's. */
const SANDBOX_PASSWD =
  "root:x:0:0:root:/root:/usr/sbin/nologin\nuser:x:1000:1000:sandbox user:/home/user:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";

let server: TestServer;
let call: ReturnType<typeof client>;
let id: string;
let base: string;

before(async () => {
  server = await startServer({
    env: {
      AGENTBOX_MAX_UPLOAD_BYTES: String(UPLOAD_LIMIT),
      AGENTBOX_MAX_FILE_READ_BYTES: String(READ_LIMIT),
      AGENTBOX_SANDBOX_DISK_MB: String(DISK_MB),
      AGENTBOX_MAX_LIST_FILES: String(LIST_LIMIT),
    },
  });
  call = client(server);
  id = await newSandbox();
  base = `/v1/agents/sandboxes/${id}`;
});

after(async () => {
  await server?.dispose();
});

const newSandbox = () => createSandbox(call);

/** A file route that must succeed with exactly `keys`. */
async function ok<T = Record<string, unknown>>(route: string, body: unknown, keys: string[]): Promise<T> {
  const res = await call<T>("POST", `${base}${route}`, body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body as object).sort(), [...keys].sort());
  return res.body;
}

const read = (path: string) => ok<{ content: string; path: string; size: number }>("/files/read", { path }, ["content", "path", "size"]);
const write = (path: string, content: string) =>
  ok<{ message: string; path: string; bytes_written: number }>("/files/write", { path, content }, ["message", "path", "bytes_written"]);

async function sh(command: string): Promise<{ stdout: string; exit_code: number }> {
  const res = await call<{ stdout: string; exit_code: number }>("POST", `${base}/commands/run`, { command });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

async function upload(
  route: string,
  parts: { path?: string; pathFirst?: boolean; data?: Uint8Array; filename?: string; query?: string },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const form = new FormData();
  if (parts.path !== undefined && parts.pathFirst) form.append("path", parts.path);
  if (parts.data) form.append("file", new Blob([new Uint8Array(parts.data)]), parts.filename ?? "data.bin");
  if (parts.path !== undefined && !parts.pathFirst) form.append("path", parts.path);
  const res = await fetch(`${server.url}${base}${route}${parts.query ?? ""}`, {
    method: "POST",
    body: form,
    headers: { authorization: `Bearer ${server.key}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function download(path: string, raw = false): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const query = raw ? path : encodeURIComponent(path);
  const res = await fetch(`${server.url}${base}/download?path=${query}`, { headers: { authorization: `Bearer ${server.key}` } });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

describe("read, write, list, mkdir, delete", () => {
  test("write creates parent directories; read answers {content, path, size}", async () => {
    const w = await write("notes/2024/todo.txt", "héllo\nwörld");
    assert.deepEqual(w, { message: w.message, path: "/home/user/notes/2024/todo.txt", bytes_written: 13 });
    assert.equal(typeof w.message, "string");
    const r = await read("/home/user/notes/2024/todo.txt");
    assert.deepEqual(r, { content: "héllo\nwörld", path: "/home/user/notes/2024/todo.txt", size: 13 });
    assert.deepEqual(await read("notes/2024/todo.txt"), r, "relative paths are relative to /home/user");
    assert.deepEqual(await read("./notes/../notes/2024/todo.txt"), r);
  });

  test("write replaces a file; an empty file reads as empty", async () => {
    await write("replace.txt", "a long first version");
    await write("replace.txt", "short");
    assert.equal((await read("replace.txt")).content, "short");
    await write("empty.txt", "");
    assert.deepEqual(await read("empty.txt"), { content: "", path: "/home/user/empty.txt", size: 0 });
  });

  test("files written through the API belong to the sandbox user and are seen by code", async () => {
    await write("owned.txt", "x");
    assert.equal((await sh("stat -c '%U:%G %a' owned.txt")).stdout, "user:user 644\n");
    const run = await call<{ logs: { stdout: string } }>("POST", `${base}/code/run`, {
      language: "python",
      code: "print(open('owned.txt').read())",
    });
    assert.equal(run.body.logs.stdout, "x\n");
  });

  test("list answers {files: [{name, path, size, is_dir, modified_at, mode}]}", async () => {
    await ok("/files/mkdir", { path: "listing/sub" }, ["message", "path"]);
    await write("listing/a.txt", "abc");
    const { files } = await ok<{ files: Record<string, unknown>[] }>("/files/list", { path: "listing" }, ["files"]);
    assert.equal(files.length, 2);
    for (const f of files) assert.deepEqual(Object.keys(f).sort(), ["is_dir", "mode", "modified_at", "name", "path", "size"]);
    const [a, sub] = files as [Record<string, unknown>, Record<string, unknown>];
    assert.deepEqual([a.name, a.path, a.size, a.is_dir, a.mode], ["a.txt", "/home/user/listing/a.txt", 3, false, "-rw-r--r--"]);
    assert.deepEqual([sub.name, sub.path, sub.is_dir], ["sub", "/home/user/listing/sub", true]);
    assert.match(String(sub.mode), /^d/);
    const age = Date.now() - Date.parse(String(a.modified_at));
    assert.ok(age >= -5000 && age < 60_000, `modified_at ${a.modified_at} is an ISO time of now`);
    const home = await ok<{ files: { name: string }[] }>("/files/list", {}, ["files"]);
    assert.ok(
      home.files.some((f) => f.name === "listing"),
      "no path lists /home/user",
    );
  });

  test("list returns at most the configured number of entries, the first by name", async () => {
    await sh("mkdir many && cd many && for i in $(seq 100 150); do touch f$i; done");
    const { files } = await ok<{ files: { name: string }[] }>("/files/list", { path: "many" }, ["files"]);
    assert.equal(files.length, LIST_LIMIT);
    assert.equal(files[0]?.name, "f100");
    assert.equal(files[LIST_LIMIT - 1]?.name, `f${100 + LIST_LIMIT - 1}`);
  });

  test("mkdir answers {message, path}, is idempotent, and creates parents", async () => {
    const m = await ok<{ path: string }>("/files/mkdir", { path: "/home/user/deep/er/est" }, ["message", "path"]);
    assert.equal(m.path, "/home/user/deep/er/est");
    await ok("/files/mkdir", { path: "deep/er/est" }, ["message", "path"]);
    assert.equal((await sh("test -d deep/er/est && echo yes")).stdout, "yes\n");
  });

  test("delete answers {message, path}; removes files and whole directories", async () => {
    await write("gone/inner/file.txt", "x");
    await write("gone-file.txt", "x");
    assert.equal(
      (await ok<{ path: string }>("/files/delete", { path: "gone-file.txt" }, ["message", "path"])).path,
      "/home/user/gone-file.txt",
    );
    await ok("/files/delete", { path: "/home/user/gone" }, ["message", "path"]);
    assert.equal((await sh("ls gone gone-file.txt 2>&1; echo $?")).stdout.trim().split("\n").pop(), "2");
  });

  test("a symlink is deleted, never what it points to", async () => {
    await write("target/keep.txt", "keep");
    await sh("ln -s target link");
    await ok("/files/delete", { path: "link" }, ["message", "path"]);
    assert.equal((await read("target/keep.txt")).content, "keep");
  });
});

describe("error paths", () => {
  test("a missing file is 404 file_not_found for read, list, delete and download", async () => {
    assertError(await call("POST", `${base}/files/read`, { path: "missing.txt" }), 404, "file_not_found");
    assertError(await call("POST", `${base}/files/list`, { path: "missing-dir" }), 404, "file_not_found");
    assertError(await call("POST", `${base}/files/delete`, { path: "missing.txt" }), 404, "file_not_found");
    assertError(await call("POST", `${base}/files/read`, { path: "missing-dir/x/y.txt" }), 404, "file_not_found");
    const d = await download("missing.txt");
    assert.equal(d.status, 404);
    assert.equal(JSON.parse(d.body.toString()).error.code, "file_not_found");
  });

  test("reading or downloading a directory is 404 file_not_found", async () => {
    await ok("/files/mkdir", { path: "a-dir" }, ["message", "path"]);
    assertError(await call("POST", `${base}/files/read`, { path: "a-dir" }), 404, "file_not_found");
    assertError(await call("POST", `${base}/files/read`, { path: "/home/user" }), 404, "file_not_found");
    assert.equal((await download("a-dir")).status, 404);
  });

  test("listing a file, writing under a file, mkdir over a file: 400", async () => {
    await write("plain.txt", "x");
    assertError(await call("POST", `${base}/files/list`, { path: "plain.txt" }), 400, "invalid_request");
    assertError(await call("POST", `${base}/files/write`, { path: "plain.txt/child.txt", content: "x" }), 400, "invalid_request");
    assertError(await call("POST", `${base}/files/mkdir`, { path: "plain.txt" }), 400, "invalid_request");
    assertError(await call("POST", `${base}/files/write`, { path: "a-dir", content: "x" }), 404, "file_not_found");
  });

  test("the home directory and / cannot be deleted; read-only system paths cannot be written", async () => {
    for (const path of ["/home/user", ".", "/", "../.."]) {
      assertError(await call("POST", `${base}/files/delete`, { path }), 400, "invalid_request");
    }
    assert.equal((await sh("echo still-here > probe.txt && cat probe.txt")).stdout, "still-here\n");
    for (const path of ["/usr/bin/python3", "/usr/new-file", "/etc/passwd"]) {
      assertError(await call("POST", `${base}/files/write`, { path, content: "x" }), 400, "invalid_request");
    }
    assertError(await call("POST", `${base}/files/delete`, { path: "/usr/bin/python3" }), 400, "invalid_request");
  });

  test("request validation: 400", async () => {
    for (const [route, body] of [
      ["/files/read", {}],
      ["/files/read", { path: "" }],
      ["/files/read", { path: 5 }],
      ["/files/write", { path: "x.txt" }],
      ["/files/write", { path: "x.txt", content: 5 }],
      ["/files/delete", {}],
      ["/files/mkdir", { path: null }],
      ["/files/read", { path: "a\u0000b" }],
      ["/files/read", { path: "x".repeat(5000) }],
    ] as const) {
      assertError(await call("POST", `${base}${route}`, body), 400, "invalid_request");
    }
    const res = await fetch(`${server.url}${base}/download`, { headers: { authorization: `Bearer ${server.key}` } });
    assert.equal(res.status, 400, "download without ?path=");
  });

  test("an unknown sandbox is 404, a killed one 400, no key 401", async () => {
    assertError(await call("POST", "/v1/agents/sandboxes/nope/files/read", { path: "x" }), 404, "sandbox_not_found");
    const gone = await newSandbox();
    await call("DELETE", `/v1/agents/sandboxes/${gone}`);
    assertError(await call("POST", `/v1/agents/sandboxes/${gone}/files/write`, { path: "x", content: "y" }), 400, "invalid_state");
    const res = await fetch(`${server.url}${base}/files/list`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 401);
  });

  test("files/read of a file over the JSON limit is 413; download still works", async () => {
    await sh(`head -c ${READ_LIMIT + 1} /dev/zero > big.bin`);
    assertError(await call("POST", `${base}/files/read`, { path: "big.bin" }), 413, "payload_too_large");
    const d = await download("big.bin");
    assert.equal(d.status, 200);
    assert.equal(d.body.length, READ_LIMIT + 1);
    await ok("/files/delete", { path: "big.bin" }, ["message", "path"]);
  });
});

describe("nothing outside the sandbox is reachable", () => {
  test("../../etc/passwd resolves to the sandbox's own /etc/passwd", async () => {
    const r = await read("../../etc/passwd");
    assert.equal(r.path, "/etc/passwd");
    assert.equal(r.content, SANDBOX_PASSWD);
    assert.notEqual(r.content, fs.readFileSync("/etc/passwd", "utf8"));
    assert.equal((await read("../../../../../../etc/passwd")).content, SANDBOX_PASSWD);
    assert.equal((await download("/home/user/../../etc/passwd")).body.toString(), SANDBOX_PASSWD);
  });

  test("host-only files and directories do not exist in the sandbox", async () => {
    assert.ok(fs.existsSync("/etc/shadow"));
    assertError(await call("POST", `${base}/files/read`, { path: "/etc/shadow" }), 404, "file_not_found");
    for (const hostPath of [server.dataDir, server.workspaceDir, "/root", "/etc/hostname-does-not-exist", process.cwd()]) {
      assert.ok(hostPath === "/etc/hostname-does-not-exist" || fs.existsSync(hostPath), hostPath);
      for (const route of ["/files/read", "/files/list"]) {
        const res = await call("POST", `${base}${route}`, { path: hostPath });
        assert.ok([400, 404].includes(res.status), `${route} ${hostPath}: ${res.status}`);
      }
    }
    // The service's own database is not readable under its host path.
    assert.equal((await download(`${server.dataDir}/agentbox.db`)).status, 404);
  });

  test("a symlink to /etc made inside the sandbox reaches the sandbox's /etc, not the host's", async () => {
    assert.equal((await sh("ln -s /etc /home/user/e && ln -s /etc/shadow /home/user/shadow-link && echo ok")).stdout, "ok\n");
    assertError(await call("POST", `${base}/files/read`, { path: "e/shadow" }), 404, "file_not_found");
    assertError(await call("POST", `${base}/files/read`, { path: "shadow-link" }), 404, "file_not_found");
    const passwd = await read("e/passwd");
    assert.equal(passwd.content, SANDBOX_PASSWD);
    assert.equal((await download("e/passwd")).body.toString(), SANDBOX_PASSWD);
    // Writing through it fails (the sandbox's /etc is read-only) and the host's /etc is untouched.
    assertError(await call("POST", `${base}/files/write`, { path: "e/planted", content: "x" }), 400, "invalid_request");
    assert.ok(!fs.existsSync("/etc/planted"));
    const listing = await ok<{ files: { name: string }[] }>("/files/list", { path: "e" }, ["files"]);
    const names = listing.files.map((f) => f.name);
    assert.ok(names.includes("passwd") && !names.includes("shadow"), names.join(","));
  });

  test("a symlink to a host path that exists only on the host leads nowhere", async () => {
    await sh(`ln -s ${server.dataDir} data-link && ln -s /root root-link`);
    for (const path of ["data-link/agentbox.db", "root-link"]) {
      const res = await call("POST", `${base}/files/read`, { path });
      assert.ok([400, 404].includes(res.status), `${path}: ${res.status}`);
    }
  });

  test("the supervisor's own descriptors and /proc are off limits; FIFOs and devices are refused", async () => {
    await sh("ln -s /proc/self/fd/1 out-link; ln -s /proc/self/fd/0 in-link; mkfifo fifo");
    for (const path of ["/proc/self/fd/0", "/proc/self/environ", "in-link", "/proc/1/cmdline"]) {
      assertError(await call("POST", `${base}/files/read`, { path }), 400, "invalid_request");
    }
    for (const path of ["out-link", "/proc/self/fd/1", "/proc/self/mem"]) {
      assertError(await call("POST", `${base}/files/write`, { path, content: "forged" }), 400, "invalid_request");
    }
    assertError(await call("POST", `${base}/files/read`, { path: "fifo" }), 400, "invalid_request");
    assertError(await call("POST", `${base}/files/write`, { path: "fifo", content: "x" }), 400, "invalid_request");
    assertError(await call("POST", `${base}/files/read`, { path: "/dev/zero" }), 400, "invalid_request");
    // The sandbox still answers: nothing blocked or corrupted the supervisor's link.
    assert.equal((await read("e/passwd")).content, SANDBOX_PASSWD);
  });
});

describe("upload and download", () => {
  test("a 5 MB random binary file round-trips byte for byte (sha256 equal)", async () => {
    const data = crypto.randomBytes(5 * 1000 * 1000);
    const up = await upload("/upload", { path: "/home/user/bin/random.bin", data, pathFirst: true });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.deepEqual(up.body, { message: up.body.message, path: "/home/user/bin/random.bin", size: data.length });
    assert.equal(typeof up.body.message, "string");
    const down = await download("bin/random.bin");
    assert.equal(down.status, 200);
    assert.equal(down.headers.get("content-type"), "application/octet-stream");
    assert.equal(Number(down.headers.get("content-length")), data.length);
    assert.equal(crypto.createHash("sha256").update(down.body).digest("hex"), crypto.createHash("sha256").update(data).digest("hex"));
    const inside = await sh("sha256sum bin/random.bin | cut -d' ' -f1");
    assert.equal(inside.stdout.trim(), crypto.createHash("sha256").update(data).digest("hex"));
    await ok("/files/delete", { path: "bin" }, ["message", "path"]);
  });

  test("/files/upload is the same route; `path` may come after the file", async () => {
    const data = Buffer.from([0, 1, 2, 3, 255, 254, 0]);
    const up = await upload("/files/upload", { path: "other/place.dat", data });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.deepEqual(Object.keys(up.body).sort(), ["message", "path", "size"]);
    assert.equal(up.body.path, "/home/user/other/place.dat");
    assert.deepEqual((await download("/home/user/other/place.dat")).body, data);
  });

  test("without `path` the file lands at /home/user/<filename>; a directory path receives it by name", async () => {
    const up = await upload("/upload", { data: Buffer.from("named"), filename: "report.csv" });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal(up.body.path, "/home/user/report.csv");
    assert.equal((await read("report.csv")).content, "named");
    await ok("/files/mkdir", { path: "inbox" }, ["message", "path"]);
    assert.equal(
      (await upload("/upload", { data: Buffer.from("1"), filename: "a.txt", path: "inbox" })).body.path,
      "/home/user/inbox/a.txt",
    );
    assert.equal(
      (await upload("/upload", { data: Buffer.from("2"), filename: "b.txt", path: "new-dir/" })).body.path,
      "/home/user/new-dir/b.txt",
    );
    assert.equal(
      (await upload("/upload", { data: Buffer.from("3"), filename: "c.txt", query: "?path=q%20dir/c%20d.txt" })).body.path,
      "/home/user/q dir/c d.txt",
    );
    // A filename that tries to climb out is reduced to its last component.
    assert.equal((await upload("/upload", { data: Buffer.from("4"), filename: "../../etc/evil.txt" })).body.path, "/home/user/evil.txt");
  });

  test("upload paths follow the same rules: ../ and symlinks stay in the sandbox", async () => {
    const up = await upload("/upload", { data: Buffer.from("x"), path: "../../etc/passwd" });
    assertError(up, 400, "invalid_request");
    assert.notEqual(fs.readFileSync("/etc/passwd", "utf8"), "x");
  });

  test("download of percent-encoded paths: spaces, unicode, reserved characters", async () => {
    const names = ["with space.txt", "ünï cødé ✓.txt", "a&b=c?d#e%f+g.txt"];
    for (const name of names) {
      await write(`enc/${name}`, name);
      const d = await download(`/home/user/enc/${name}`);
      assert.equal(d.status, 200, name);
      assert.equal(d.body.toString(), name);
      assert.match(d.headers.get("content-disposition") ?? "", /^attachment; filename\*=UTF-8''/);
    }
    assert.equal((await download("enc/with%20space.txt", true)).body.toString(), "with space.txt");
  });

  test("an upload over the limit is 413 and leaves no file", async () => {
    const up = await upload("/upload", { data: crypto.randomBytes(UPLOAD_LIMIT + 1), path: "too-big.bin" });
    assertError(up, 413, "payload_too_large");
    assertError(await call("POST", `${base}/files/read`, { path: "too-big.bin" }), 404, "file_not_found");
  });

  test("a full sandbox disk is 413", async () => {
    const data = crypto.randomBytes(5 * MiB);
    let full: { status: number; body: Record<string, unknown> } | undefined;
    for (let i = 0; i < 4 && !full; i++) {
      const up = await upload("/upload", { data, path: `fill/${i}.bin` });
      if (up.status !== 200) full = up;
    }
    assert.ok(full, `a ${DISK_MB} MB disk cannot hold 20 MB`);
    assertError(full, 413, "payload_too_large");
    await ok("/files/delete", { path: "fill" }, ["message", "path"]);
  });

  test("malformed uploads are 400", async () => {
    assertError(await upload("/upload", { path: "x" }), 400, "invalid_request");
    assertError(await call("POST", `${base}/upload`, { path: "x", content: "not multipart" }), 400, "invalid_request");
    assertError(await upload("/upload", { data: Buffer.from("x"), filename: "" }), 400, "invalid_request");
  });
});
