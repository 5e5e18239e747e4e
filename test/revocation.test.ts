// Revoking an API key ends what it has open, at once: an event stream of a background process and
// of a streamed run (each ends with an `end` carrying 401 unauthorized), a streamed chat answer
// of the inference gateway (its upstream call is dropped too), a WebSocket-style tunnel to a
// sandbox port made with the key and one made through a share link of the key, a download the
// client has stopped reading, an upload still being sent (its partial file removed), and the share link itself. Another key of the same tenant keeps its stream.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { type Call, createSandbox } from "./helpers/api.js";
import { eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { type SseAnswer, type SseEvent, sse } from "./helpers/sse.js";
import { startUpstream, type Upstream } from "./helpers/upstream.js";

let server: TestServer;
let admin: Call;
let upstream: Upstream;
let tmp: string;

/** Answers any request on port 8765 with a 101 and then echoes every byte (a tunnel, as after a WebSocket upgrade). */
const ECHO = `
import socket, threading
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 8765)); srv.listen(8)
def serve(c):
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        part = c.recv(4096)
        if not part: return c.close()
        head += part
    c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n")
    while True:
        d = c.recv(4096)
        if not d: break
        c.sendall(d)
    c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

/** Generous: the revocation takes well under a second; this only bounds a test that would otherwise hang. */
const BOUND_MS = 15_000;

function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} was still open ${BOUND_MS / 1000} s after the revocation`)), BOUND_MS);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Follows an event stream; resolves `started` at its first stdout event. */
function follow(key: string, method: string, route: string, body?: unknown): { started: Promise<void>; done: Promise<SseAnswer> } {
  let started!: () => void;
  const startedP = new Promise<void>((r) => {
    started = r;
  });
  const done = sse({ url: server.url, key }, method, route, body, {
    stopWhen: (e: SseEvent) => {
      if (e.event === "stdout") started();
      return false;
    },
  });
  done.then(
    () => started(),
    () => started(),
  );
  return { started: startedP, done };
}

/** An Upgrade request to the sandbox's echo port; resolves once the 101 and an echoed probe came back. */
async function tunnel(path: string, key?: string): Promise<{ sock: net.Socket; closed: Promise<void> }> {
  const sock = net.connect(server.port, "127.0.0.1");
  const closed = new Promise<void>((r) => sock.once("close", () => r()));
  sock.on("error", () => {});
  await new Promise((r) => sock.once("connect", r));
  const auth = key ? `Authorization: Bearer ${key}\r\n` : "";
  sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n${auth}Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n`);
  let got = "";
  sock.on("data", (d) => {
    got += d.toString("latin1");
  });
  for (let i = 0; i < 200 && !got.includes("\r\n\r\n"); i++) await new Promise((r) => setTimeout(r, 50));
  assert.match(got, /^HTTP\/1\.1 101 /);
  sock.write("probe-1");
  for (let i = 0; i < 200 && !got.includes("probe-1"); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(got.includes("probe-1"), "the tunnel echoes");
  return { sock, closed };
}

/** A streamed chat answer whose upstream sends one chunk and then nothing; `ended` when the connection ends. */
async function hangingChat(key: string): Promise<{ ended: Promise<void> }> {
  const res = await fetch(`${server.url}/v1/inference/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "hang-stream", stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  assert.equal((await reader.read()).done, false, "the first chunk arrives");
  const ended = (async () => {
    try {
      while (!(await reader.read()).done) {}
    } catch {
      // cut off: ended all the same
    }
  })();
  return { ended };
}

/**
 * A download whose response head is read and then nothing more, until `drain()`: then it reads
 * what arrives until the connection closes and tells how many bytes came in all.
 */
async function stalledDownload(path: string, key: string): Promise<{ drain(): Promise<number> }> {
  const sock = net.connect(server.port, "127.0.0.1");
  sock.on("error", () => {});
  const closed = new Promise<void>((r) => sock.once("close", () => r()));
  let bytes = 0;
  sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
  const head = await new Promise<string>((r) => sock.once("data", (d) => r(d.toString("latin1"))));
  assert.match(head, /^HTTP\/1\.1 200 /);
  sock.pause();
  return {
    drain: async () => {
      sock.on("data", (d) => {
        bytes += d.length;
      });
      sock.resume();
      await closed;
      return bytes + Buffer.byteLength(head, "latin1");
    },
  };
}

/** A multipart upload that announces 8 MiB, sends its first KiB and then waits; `closed` when the connection ends. */
function halfUpload(path: string, key: string): { closed: Promise<void> } {
  const sock = net.connect(server.port, "127.0.0.1");
  sock.on("error", () => {});
  const closed = new Promise<void>((r) => sock.once("close", () => r()));
  const boundary = "revocationboundary";
  sock.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${8 * 2 ** 20}\r\n\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n${"x".repeat(1024)}`,
  );
  return { closed };
}

before(async () => {
  upstream = await startUpstream();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "revocation-test-"));
  const providers = path.join(tmp, "providers.json");
  fs.writeFileSync(
    providers,
    JSON.stringify({
      providers: [{ name: "local", type: "openai", base_url: upstream.baseUrl, models: ["hang-stream"], timeout_ms: 120_000, retries: 0 }],
    }),
  );
  server = await startServer({ env: { AGENTBOX_PROVIDERS_FILE: providers } });
  admin = client({ url: server.url, key: server.adminKey });
});

after(async () => {
  await server?.dispose();
  await upstream?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const newKey = async (name: string, tenant: string) => {
  const res = await admin<{ key: string; id: string }>("POST", "/v1/admin/keys", { name, tenant_id: tenant });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
};

test("revoking a key ends its event streams, port tunnels and share links at once; another key's stream goes on", async () => {
  const doomed = await newKey("doomed", "tenant-revoke");
  const kept = await newKey("kept", "tenant-revoke");
  const call = client({ url: server.url, key: doomed.key });
  const id = await createSandbox(call);
  const base = `/v1/agents/sandboxes/${id}`;
  const write = await call<{ exit_code: number; stderr: string }>("POST", `${base}/commands/run`, {
    command: `printf '%s' '${ECHO.replaceAll("'", "'\\''")}' > echo.py && head -c 33554432 /dev/zero > big.bin && mkdir updir`,
  });
  assert.equal(write.body.exit_code, 0, write.body.stderr);
  const started = await call<{ pid: number }>("POST", `${base}/commands/run`, {
    command: "while true; do echo tick; sleep 0.2; done",
    background: true,
  });
  const echo = await call("POST", `${base}/commands/run`, { command: "python3 echo.py", background: true });
  assert.ok(started.status < 300 && echo.status < 300);
  const listening = await call<{ exit_code: number }>("POST", `${base}/commands/run`, {
    command:
      "for i in $(seq 100); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8765)).close()' 2>/dev/null && exit 0; sleep 0.1; done; exit 1",
    timeout: 20_000,
  });
  assert.equal(listening.body.exit_code, 0);
  const share = await call<{ url: string }>("POST", `${base}/ports/8765/share`, { expires_in: 3600 });
  assert.equal(share.status, 200);
  const sharePath = new URL(share.body.url).pathname;

  const background = follow(doomed.key, "GET", `${base}/commands/${started.body.pid}/stream`);
  const other = follow(kept.key, "GET", `${base}/commands/${started.body.pid}/stream`);
  const run = follow(doomed.key, "POST", `${base}/code/run`, {
    language: "python",
    code: "import time\nwhile True:\n    print('run', flush=True)\n    time.sleep(0.2)",
    stream: true,
    timeout: 120,
  });
  await Promise.all([background.started, other.started, run.started]);
  const chat = await hangingChat(doomed.key);
  const byKey = await tunnel(`${base}/ports/8765/ws`, doomed.key);
  const byLink = await tunnel(`${sharePath}ws`);
  const download = await stalledDownload(`${base}/download?path=big.bin`, doomed.key);
  const upload = halfUpload(`${base}/files/upload?path=/home/user/updir/x.bin`, doomed.key);
  // Its bytes are arriving in the sandbox (a temporary file next to the target): the upload is under way.
  const keptCall = client({ url: server.url, key: kept.key });
  const inUpdir = async () =>
    (await keptCall<{ stdout: string }>("POST", `${base}/commands/run`, { command: "ls -A updir" })).body.stdout.trim();
  assert.ok(await eventually(async () => (await inUpdir()) !== "", BOUND_MS), "the upload started");

  const revoked = await admin("DELETE", `/v1/admin/keys/${doomed.id}`);
  assert.equal(revoked.status, 200);

  for (const [name, stream] of [
    ["the background process's stream", background],
    ["the streamed run", run],
  ] as const) {
    const answer = await within(stream.done, name);
    const last = answer.events.at(-1);
    assert.equal(last?.event, "end", name);
    assert.equal((last?.data as { error?: { code: string } } | undefined)?.error?.code, "unauthorized", name);
  }
  await within(chat.ended, "the streamed chat answer");
  assert.ok(await eventually(() => upstream.aborted >= 1, BOUND_MS), "the gateway dropped its upstream call");
  // A paused socket notices no close: read what was on its way, then the connection ends short of the file.
  const got = await within(download.drain(), "the download its client stopped reading");
  assert.ok(got < 32 * 2 ** 20, `the download was cut (${got} bytes arrived)`);
  await within(upload.closed, "the upload still being sent");
  assert.ok(await eventually(async () => (await inUpdir()) === "", BOUND_MS), "the partial upload was removed");
  await within(byKey.closed, "the tunnel opened with the key");
  await within(byLink.closed, "the tunnel opened through the key's share link");
  // The link is refused from now on, and the key of course.
  assert.equal((await fetch(share.body.url)).status, 401);
  assert.equal((await call("GET", `${base}/commands`)).status, 401);

  // The other key's stream of the same process still delivers.
  const before = await keptCall<{ stdout: string }>("GET", `${base}/commands/${started.body.pid}`);
  assert.equal(before.status, 200);
  let settled = false;
  void other.done.finally(() => {
    settled = true;
  });
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(settled, false, "the other key's stream is still open");
  await keptCall("DELETE", `${base}/commands/${started.body.pid}`);
  const end = (await within(other.done, "the other stream after its process was killed")).events.at(-1);
  assert.equal(end?.event, "end");
  assert.equal((end?.data as { pid?: number } | undefined)?.pid, started.body.pid);
  await keptCall("DELETE", base);
});
