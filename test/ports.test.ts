// Ports → URLs end to end: a python web server (http.server) and a WebSocket echo server inside a real sandbox,
// reached through the service's port proxy with the owner's key or a share link; 502 when nothing
// listens, 401 without access, 404 for another tenant.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { assertError, type Call, createSandbox } from "./helpers/api.js";
import { createKey } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

/** What every relayed response carries (written out here, not imported: the test pins the value). */
const RELAYED = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";

let server: TestServer;
let call: Call;
let id: string;

/** The sandbox's web app: static files from site/, and a POST that reads its whole body and answers its size. */
const SITE = `
import functools, http.server
class Handler(http.server.SimpleHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        got = len(self.rfile.read(n))
        body = str(got).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("127.0.0.1", 8000), functools.partial(Handler, directory="site")).serve_forever()
`;

/** A WebSocket handshake, then every byte echoed back (enough to prove the upgrade and both directions). */
const WS_ECHO = `
import base64, hashlib, socket
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 8765)); srv.listen(8)
while True:
    c, _ = srv.accept()
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        part = c.recv(4096)
        if not part: break
        head += part
    if b"\\r\\n\\r\\n" not in head:
        c.close(); continue
    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\\r\\n") if l.lower().startswith(b"sec-websocket-key:")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + b"\\r\\n\\r\\n")
    while True:
        d = c.recv(4096)
        if not d: break
        c.sendall(d)
    c.close()
`;

before(async () => {
  server = await startServer();
  call = client(server);
  id = await createSandbox(call);
  const setup = await call<{ exit_code: number; stderr: string }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
    command: `mkdir -p site && echo '<h1>hello from the sandbox</h1>' > site/index.html && printf '%s' '${WS_ECHO.replaceAll("'", "'\\''")}' > ws.py && printf '%s' '${SITE.replaceAll("'", "'\\''")}' > site.py`,
  });
  assert.equal(setup.body.exit_code, 0, setup.body.stderr);
  for (const command of ["python3 site.py", "python3 ws.py"]) {
    const res = await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command, background: true });
    assert.ok(res.status < 300, JSON.stringify(res.body));
  }
  // Until both listen.
  const wait = await call<{ exit_code: number }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, {
    command:
      "for i in $(seq 100); do python3 -c 'import socket; [socket.create_connection((\"127.0.0.1\", p)).close() for p in (8000, 8765)]' 2>/dev/null && exit 0; sleep 0.1; done; exit 1",
    timeout: 20_000,
  });
  assert.equal(wait.body.exit_code, 0);
});

after(async () => {
  await server?.dispose();
});

test("GET /host/{port} gives {url}; the URL serves the sandbox's http.server with the owner's key", async () => {
  const res = await call<{ url: string }>("GET", `/v1/agents/sandboxes/${id}/host/8000`);
  assert.equal(res.status, 200);
  assert.deepEqual(Object.keys(res.body), ["url"]);
  assert.equal(res.body.url, `${server.url}/v1/agents/sandboxes/${id}/ports/8000/`);
  const page = await fetch(`${res.body.url}index.html`, { headers: { authorization: `Bearer ${server.key}` } });
  assert.equal(page.status, 200);
  assert.equal((await page.text()).trim(), "<h1>hello from the sandbox</h1>");
  // An opaque origin of its own: not the dashboard's (no allow-same-origin), and its popups stay sandboxed.
  assert.equal(page.headers.get("content-security-policy"), RELAYED);
  // A POST body streams through to the sandbox's server, which reads all of it.
  const post = await fetch(`${res.body.url}x`, {
    method: "POST",
    body: "a".repeat(100_000),
    headers: { authorization: `Bearer ${server.key}` },
  });
  assert.equal(post.status, 200);
  assert.equal(await post.text(), "100000");
  // No key: 401.
  assertError({ status: (await fetch(res.body.url)).status, body: { error: { code: "unauthorized", message: "x" } } }, 401, "unauthorized");
  assertError(await call("GET", `/v1/agents/sandboxes/${id}/host/70000`), 400, "invalid_request");
});

test("a share link works without the key until it expires, and only for its port", async () => {
  const res = await call<{ url: string; expires_at: string }>("POST", `/v1/agents/sandboxes/${id}/ports/8000/share`, { expires_in: 2 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ["expires_at", "url"]);
  assert.ok(Math.abs(Date.parse(res.body.expires_at) - Date.now() - 2000) < 1500);
  const page = await fetch(`${res.body.url}index.html`);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /hello from the sandbox/);
  assert.equal(page.headers.get("content-security-policy"), RELAYED);
  // The same token on another port, or tampered with, is refused.
  assert.equal((await fetch(res.body.url.replace("/ports/8000/", "/ports/8765/"))).status, 401);
  assert.equal((await fetch(res.body.url.replace(/_share\/(.)/, (_m, c) => `_share/${c === "A" ? "B" : "A"}`))).status, 401);
  await new Promise((r) => setTimeout(r, 2500));
  const late = await fetch(`${res.body.url}index.html`);
  assert.equal(late.status, 401);
  assert.match(await late.text(), /expired/);
  assertError(await call("POST", `/v1/agents/sandboxes/${id}/ports/8000/share`, { expires_in: 0 }), 400, "invalid_request");
});

test("a WebSocket upgrade reaches the sandbox's server and streams both ways", async () => {
  const sock = net.connect(server.port, "127.0.0.1");
  await new Promise((r) => sock.once("connect", r));
  sock.write(
    `GET /v1/agents/sandboxes/${id}/ports/8765/ws HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
      "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
  );
  let got = "";
  sock.on("data", (d) => {
    got += d.toString("latin1");
  });
  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  };
  await until(() => got.includes("\r\n\r\n"));
  assert.match(got, /^HTTP\/1\.1 101 /);
  assert.match(got, /Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/);
  got = "";
  sock.write("ping-123");
  await until(() => got.includes("ping-123"));
  assert.equal(got, "ping-123");
  sock.destroy();
  // Without a key: refused before anything reaches the sandbox.
  const anon = net.connect(server.port, "127.0.0.1");
  anon.write(`GET /v1/agents/sandboxes/${id}/ports/8765/ HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`);
  const answer = await new Promise<string>((r) => anon.once("data", (d) => r(d.toString())));
  assert.match(answer, /^HTTP\/1\.1 401 /);
  anon.destroy();
});

test("nothing listening is a 502 with a clear message; another tenant's sandbox is a 404", async () => {
  const res = await call("GET", `/v1/agents/sandboxes/${id}/ports/8001/`);
  const body = assertError(res, 502, "upstream_error");
  assert.match(body.error.message, /Nothing answered on port 8001 .*nothing is listening on port 8001/);
  const other = createKey(server.dataDir, "ports-other", "tenant-ports-other");
  const otherCall = client({ url: server.url, key: other.key });
  assertError(await otherCall("GET", `/v1/agents/sandboxes/${id}/ports/8000/`), 404, "sandbox_not_found");
  assertError(await otherCall("GET", `/v1/agents/sandboxes/${id}/host/8000`), 404, "sandbox_not_found");
  assertError(await otherCall("POST", `/v1/agents/sandboxes/${id}/ports/8000/share`, { expires_in: 60 }), 404, "sandbox_not_found");
});

test("code in the sandbox can neither replace nor add a socket the service connects to", async () => {
  const res = await call<{ logs: { stdout: string }; error: string | null }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
    language: "python",
    code: `import os, socket
print(sorted(os.listdir("/run/agentbox")))
for attempt in (lambda: os.unlink("/run/agentbox/ports.sock"),
                lambda: os.symlink("/var/run/docker.sock", "/run/agentbox/evil.sock"),
                lambda: open("/run/agentbox/x", "w"),
                lambda: os.rename("/run/agentbox/ports.sock", "/run/agentbox/y"),
                lambda: socket.socket(socket.AF_UNIX).bind("/run/agentbox/z.sock")):
    try:
        attempt(); print("DONE")
    except OSError as e:
        print("refused", e.errno)
print(sorted(os.listdir("/run/agentbox")))`,
  });
  assert.equal(res.body.error, null);
  const lines = res.body.logs.stdout.trim().split("\n");
  assert.equal(lines[0], "['ports.sock']");
  assert.equal(lines.filter((l) => l.startsWith("refused")).length, 5, res.body.logs.stdout);
  assert.equal(lines.at(-1), "['ports.sock']");
  // The port URL still reaches the sandbox's server.
  const page = await fetch(`${server.url}/v1/agents/sandboxes/${id}/ports/8000/index.html`, {
    headers: { authorization: `Bearer ${server.key}` },
  });
  assert.equal(page.status, 200);
});
