// Every listener the service opens, driven by a hostile peer: resets (RST) at every stage,
// half-closes, and floods, against the API port, the egress proxy (from inside a real sandbox, on
// its unix socket and through its relay), the port relay's socket, and the port proxy and its
// Upgrade tunnel. Afterwards the service must be up: its process alive, /health answering, a
// sandbox run and a port URL still working.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { type Call, createSandbox, pythonStdout } from "./helpers/api.js";
import { type Internet, startInternet } from "./helpers/internet.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let internet: Internet;
let call: Call;
let box: string;

/** An HTTP server on 8000 that answers every request, and upgrades to an echo when asked to. */
const APP = `
import socket, threading
def serve(c):
    try:
        head = b""
        while b"\\r\\n\\r\\n" not in head:
            part = c.recv(4096)
            if not part: return
            head += part
        if b"upgrade:" in head.lower():
            c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n")
            while True:
                d = c.recv(4096)
                if not d: break
                c.sendall(d)
        else:
            c.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-length: 5\\r\\nconnection: close\\r\\n\\r\\nhello")
    except OSError:
        pass
    finally:
        c.close()
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 8000)); srv.listen(512)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

before(async () => {
  internet = await startInternet();
  server = await startServer({ env: { AGENTBOX_EGRESS_HOSTS: `pypi.test=127.0.0.1:${internet.port}` } });
  call = client(server);
  box = await createSandbox(call, { network: { allow_out: ["pypi.test"] } });
  const write = await call<{ exit_code: number }>("POST", `/v1/agents/sandboxes/${box}/commands/run`, {
    command: `printf '%s' '${APP.replaceAll("'", "'\\''")}' > app.py`,
  });
  assert.equal(write.body.exit_code, 0);
  const bg = await call("POST", `/v1/agents/sandboxes/${box}/commands/run`, { command: "python3 app.py", background: true });
  assert.ok(bg.status < 300, JSON.stringify(bg.body));
  await waitForPort();
});

after(async () => {
  await server?.dispose();
  await internet?.close();
});

async function waitForPort(): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${server.url}/v1/agents/sandboxes/${box}/ports/8000/`, { headers: { authorization: `Bearer ${server.key}` } });
    if (res.status === 200 && (await res.text()) === "hello") return;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail("the sandbox's app never answered through the port proxy");
}

const run = (code: string, timeout = 120) => pythonStdout(call, box, code, timeout);

async function assertUp(): Promise<void> {
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(server.process.exitCode, null, `the service exited:\n${server.logs().slice(-3000)}`);
  assert.equal(server.process.signalCode, null, `the service was killed:\n${server.logs().slice(-3000)}`);
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
  assert.equal((await run("print(6 * 7)")).trim(), "42");
  const other = await createSandbox(call);
  const res = await call<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${other}/code/run`, {
    language: "python",
    code: "print('fine')",
  });
  assert.equal(res.body.logs.stdout.trim(), "fine");
  await call("DELETE", `/v1/agents/sandboxes/${other}`);
}

/** A TCP connection to the service's port; resolves once connected. */
function connect(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port: server.port }, () => resolve(sock));
    sock.on("error", reject);
  });
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Opens `n` connections at once, sends each `send` (if any), waits `waitMs` (for the service to
 * answer or to start a tunnel), then ends each the way `how` says: a reset, or a half-close kept open.
 */
async function wave(n: number, send: string | undefined, how: "reset" | "half-close", waitMs = 300): Promise<void> {
  const socks = (await Promise.allSettled(Array.from({ length: n }, () => connect())))
    .filter((r): r is PromiseFulfilledResult<net.Socket> => r.status === "fulfilled")
    .map((r) => r.value);
  for (const s of socks) {
    s.on("error", () => {});
    if (send !== undefined) s.write(send);
  }
  await settle(waitMs);
  for (const s of socks) {
    if (how === "reset") s.resetAndDestroy();
    else s.end();
  }
  if (how === "half-close") {
    await settle(waitMs);
    for (const s of socks) s.destroy();
  }
}

test("API port: resets, half-closes and floods at every stage of a request", async () => {
  const auth = `Authorization: Bearer ${server.key}\r\n`;
  const partialBody = `POST /v1/agents/sandboxes HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":`;
  const run = `POST /v1/agents/sandboxes/${box}/code/run HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 58\r\n\r\n{"language":"python","code":"import time; time.sleep(1)"}`;
  const stream = `GET /v1/agents/sandboxes/${box}/metrics HTTP/1.1\r\nHost: x\r\n${auth}\r\n`;
  for (const how of ["reset", "half-close"] as const) {
    await wave(200, undefined, how, 100);
    await wave(100, "GET /health HT", how);
    await wave(100, partialBody, how);
    await wave(20, run, how, 200);
    await wave(100, stream, how, 200);
    await wave(50, "GARBAGE\r\n\r\n", how);
  }
  await assertUp();
});

test("egress proxy, from inside the sandbox: resets, half-closes and floods on its socket and its relay port", async () => {
  const out = await run(
    `
import resource, socket, struct, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
def unix():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(5); s.connect("/run/agentbox/egress.sock"); return s
def tcp():
    return socket.create_connection(("127.0.0.1", 3128), timeout=5)
def reset(s):
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()
sends = [b"", b"CONNECT pypi.te", b"CONNECT pypi.test:80 HTTP/1.1\\r\\n\\r\\nGET / HTTP/1.1\\r\\nHost: pypi.test\\r\\n\\r\\n",
         b"GET http://pypi.test/big HTTP/1.1\\r\\nHost: pypi.test\\r\\n\\r\\n", b"GARBAGE\\r\\n\\r\\n", b"X" * 20000,
         b"CONNECT other.test:80 HTTP/1.1\\r\\n\\r\\n"]
n = 0
for opener in (unix, tcp):
    for data in sends:
        for ending in ("reset", "half", "drop"):
            held = []
            for i in range(150):
                try:
                    s = opener()
                    if data: s.sendall(data)
                    held.append(s)
                except OSError:
                    pass
            time.sleep(0.3)
            for s in held:
                n += 1
                try:
                    if ending == "reset": reset(s)
                    elif ending == "half": s.shutdown(socket.SHUT_WR)
                    else: s.close()
                except OSError:
                    pass
            time.sleep(0.1)
            for s in held: s.close()
print("connections", n)
`,
    300,
  );
  assert.match(out, /connections \d+/);
  await assertUp();
  // Egress itself still works.
  const fetched = await run(`import urllib.request\nprint(urllib.request.urlopen("http://pypi.test/ok", timeout=20).read().decode())`);
  assert.equal(fetched.trim(), "hello from pypi.test /ok");
});

test("port relay socket, from inside the sandbox: junk, resets, half-closes, a flood and a stolen control line", async () => {
  const out = await run(`
import socket, struct, time
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(5); s.connect("/run/agentbox/ports.sock"); return s
n = 0
for data in (b"", b"DATA 0123", b"DATA " + b"0" * 32 + b"\\n", b"X" * 5000, b"FAIL x y\\n"):
    for ending in ("reset", "half", "drop"):
        held = []
        for i in range(150):
            try:
                s = conn()
                if data: s.sendall(data)
                held.append(s)
            except OSError:
                pass
        time.sleep(0.2)
        for s in held:
            n += 1
            try:
                if ending == "reset":
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); s.close()
                elif ending == "half": s.shutdown(socket.SHUT_WR)
                else: s.close()
            except OSError:
                pass
        for s in held: s.close()
# Taking over the control line, then dropping it: only this sandbox's port relay is affected.
c = conn(); c.sendall(b"CTRL\\n"); time.sleep(0.5); c.close()
print("connections", n)
`);
  assert.match(out, /connections \d+/);
  await assertUp();
  // The relay comes back (the service restarts it) and the port answers again.
  const restart = await call("PUT", `/v1/agents/sandboxes/${box}/network`, { allow_out: ["pypi.test"] });
  assert.equal(restart.status, 200);
  await waitForPort();
});

test("port proxy and Upgrade tunnel: resets and half-closes mid-request, mid-tunnel, and in floods", async () => {
  const auth = `Authorization: Bearer ${server.key}\r\n`;
  const path = `/v1/agents/sandboxes/${box}/ports/8000/`;
  const upgrade = `GET ${path} HTTP/1.1\r\nHost: x\r\n${auth}Connection: Upgrade\r\nUpgrade: echo\r\n\r\nbytes for the echo`;
  const refused = `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n`;
  const get = `GET ${path} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`;
  const post = `POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 1000000\r\n\r\n${"y".repeat(5000)}`;
  for (const how of ["reset", "half-close"] as const) {
    await wave(100, upgrade, how, 500);
    await wave(100, refused, how, 200);
    await wave(50, get, how, 300);
    await wave(50, post, how, 300);
    await wave(30, upgrade, how, 0);
  }
  await assertUp();
  await waitForPort();
});
