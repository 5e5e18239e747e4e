// A sandbox's own HTTP server answering with anything at all never ends the service: a python
// raw-socket server in a real sandbox sends malformed answers (status 000, a NUL in the reason
// phrase, every byte value in a header name and in a value, bad chunking, a close mid-body, a 1 MB
// head, a head dripped slowly), reached through the port relay (/ports/{port}/), a share link and
// an E2B host name, on one node and through the API node of a two-node cluster (whose forwarding
// parser once decoded header bytes as ascii and rethrew writeHead's error). Each is a 502 or a cut
// connection for that request; the service stays up and another tenant's sandbox still runs code.
// And no internal channel header (x-agentbox-*) reaches the sandbox's server.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, test } from "node:test";
import { type Call, createSandbox, pythonStdout } from "./helpers/api.js";
import { startCluster, type TestCluster, untilExecutorsUp } from "./helpers/cluster.js";
import { client, startNode, type TestServer } from "./helpers/server.js";

/** The E2B domain both services route host names of (requests here carry the Host themselves). */
const DOMAIN = "e2b.test";

/**
 * The sandbox's server: the answer each path asks for, written byte for byte on the socket. /echo
 * answers the request's header names and its X-Forwarded-Host.
 */
const SERVER = `
import json, socket, threading, time
def answer(c, path, head):
    if path == "/echo":
        names = sorted({l.split(b":", 1)[0].strip().lower().decode("latin1") for l in head.split(b"\\r\\n")[1:] if b":" in l})
        fwd = [l.split(b":", 1)[1].strip().decode("latin1") for l in head.split(b"\\r\\n")[1:] if l.lower().startswith(b"x-forwarded-host:")]
        body = json.dumps({"names": names, "forwarded_host": fwd}).encode()
        c.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\ncontent-length: " + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)
    elif path == "/ok":
        c.sendall(b"HTTP/1.1 200 OK\\r\\nX-Dash: a\\xe2\\x80\\x94b\\r\\nX-High: \\x80\\x9f\\xff\\r\\nContent-Length: 2\\r\\n\\r\\nok")
    elif path == "/status000":
        c.sendall(b"HTTP/1.1 000 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
    elif path == "/nul-reason":
        c.sendall(b"HTTP/1.1 200 O\\x00K\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
    elif path.startswith("/name/"):
        c.sendall(b"HTTP/1.1 200 OK\\r\\nX-B" + bytes([int(path[6:])]) + b"d: v\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
    elif path.startswith("/value/"):
        c.sendall(b"HTTP/1.1 200 OK\\r\\nX-V: a" + bytes([int(path[7:])]) + b"z\\r\\nContent-Length: 2\\r\\n\\r\\nhi")
    elif path == "/bad-chunks":
        c.sendall(b"HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n5\\r\\nhello\\r\\nzz\\r\\nxx\\r\\n")
        time.sleep(1)
    elif path == "/close-mid-body":
        c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 1000\\r\\n\\r\\n" + b"x" * 10)
    elif path == "/huge-head":
        c.sendall(b"HTTP/1.1 200 OK\\r\\n" + b"".join(b"X-Big-%d: %s\\r\\n" % (i, b"y" * 1000) for i in range(1000)) + b"\\r\\nhi")
    elif path == "/ws-bad":
        c.sendall(b"HTTP/1.1 000 N\\x00pe\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n")
        time.sleep(1)
    elif path == "/ws-bad-header":
        c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nX-Bad: a\\x01b\\r\\n\\r\\n")
        time.sleep(1)
    elif path == "/ws-ok":
        c.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nX-High: \\x80\\xff\\r\\n\\r\\n")
        while True:
            d = c.recv(4096)
            if not d: break
            c.sendall(d)
    elif path == "/drip":
        c.sendall(b"HTTP/1.1 200 OK\\r\\nX-Drip: ")
        for _ in range(120):
            time.sleep(0.5)
            c.sendall(b"d")
def serve(c):
    try:
        head = b""
        while b"\\r\\n\\r\\n" not in head:
            part = c.recv(65536)
            if not part: return
            head += part
        answer(c, head.split(b" ")[1].decode("latin1"), head.split(b"\\r\\n\\r\\n")[0])
    except OSError:
        pass
    finally:
        c.close()
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 8000)); srv.listen(64)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

/** What came back: a status and body, or `cut` (the connection failed before the answer ended). */
interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  cut: boolean;
}

/** One request on a connection of its own; never throws (a refused or cut connection is `cut`). */
function get(base: string, path: string, headers: Record<string, string> = {}): Promise<Got> {
  return new Promise((resolve) => {
    const got: Got = { status: 0, headers: {}, body: "", cut: true };
    const req = http.request(`${base}${path}`, { headers, agent: false, timeout: 60_000 }, (res) => {
      got.status = res.statusCode ?? 0;
      got.headers = res.headers;
      res.setEncoding("latin1");
      res.on("data", (d: string) => {
        got.body += d;
      });
      res.on("end", () => resolve({ ...got, cut: false }));
      res.on("error", () => resolve(got));
      res.on("aborted", () => resolve(got));
    });
    req.on("error", () => resolve(got));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

/** A 502 JSON error, or a connection cut after the head (the answer went bad mid-body). */
function assertRefused(got: Got, what: string): void {
  if (got.status === 502) {
    assert.equal(JSON.parse(got.body).error.code, "upstream_error", what);
    return;
  }
  assert.ok(
    got.status === 200 && got.cut,
    `${what}: expected a 502 or a cut answer, got ${got.status} (cut: ${got.cut}) ${got.body.slice(0, 200)}`,
  );
}

/** `items` through `fn`, `width` at a time. */
async function inBatches<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(fn))));
  return out;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/;
/** Bytes a header value may hold (node's writeHead and its parser agree on these). */
const valueByteOk = (b: number) => b === 0x09 || (b >= 0x20 && b <= 0x7e) || b >= 0x80;
const BYTES = Array.from({ length: 256 }, (_, b) => b);

/** A service (one node, or a cluster's API node) with tenant A's sandbox serving SERVER and tenant B's sandbox. */
interface Place {
  server: TestServer;
  /** The node that runs the sandboxes (the same as `server` on one node). */
  owner: TestServer;
  call: Call;
  callB: Call;
  id: string;
  idB: string;
  key: string;
}

/** Sets up `server` for the tests: tenant B's key (admin API), both sandboxes, SERVER listening in A's. */
async function prepare(server: TestServer, owner: TestServer, adminKey: string): Promise<Place> {
  const call = client(server);
  const admin = client({ url: server.url, key: adminKey });
  const made = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "tenant-b" });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const callB = client({ url: server.url, key: made.body.key });
  const [id, idB] = await Promise.all([createSandbox(call), createSandbox(callB)]);
  await pythonStdout(call, id, `open("/home/user/srv.py", "w").write(${JSON.stringify(SERVER)})`);
  const bg = await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "python3 /home/user/srv.py", background: true });
  assert.ok(bg.status < 300, JSON.stringify(bg.body));
  const listening = await pythonStdout(
    call,
    id,
    `import socket, time
for _ in range(600):
    try:
        socket.create_connection(("127.0.0.1", 8000)).close()
        print("up")
        break
    except OSError:
        time.sleep(0.1)`,
  );
  assert.equal(listening.trim(), "up", "the sandbox's server listens");
  return { server, owner, call, callB, id, idB, key: server.key };
}

let single: Place;
let cluster: TestCluster;
let clustered: Place;

before(async () => {
  const env = { AGENTBOX_E2B_DOMAIN: DOMAIN };
  const startSingle = async () => {
    const server = await startNode({ env });
    return prepare(server, server, server.adminKey);
  };
  const startTwoNodes = async () => {
    cluster = await startCluster({ leaseMs: 15_000 });
    const api = await cluster.node("api", "api", { ...env, AGENTBOX_WARM_POOL: "0" });
    const exec = await cluster.node("exec", "executor", env);
    await untilExecutorsUp(api, cluster.adminKey, 1);
    return prepare(api, exec, cluster.adminKey);
  };
  [single, clustered] = await Promise.all([startSingle(), startTwoNodes()]);
});

after(async () => {
  await single?.server.dispose();
  await cluster?.dispose();
});

/** The three ways to a port: its path with the key, a share link, the E2B host name. */
async function ways(p: Place): Promise<Array<{ name: string; base: string; prefix: string; headers: Record<string, string> }>> {
  const share = await p.call<{ url: string }>("POST", `/v1/agents/sandboxes/${p.id}/ports/8000/share`, { expires_in: 600 });
  assert.equal(share.status, 200, JSON.stringify(share.body));
  const shareUrl = new URL(share.body.url);
  return [
    { name: "path", base: p.server.url, prefix: `/v1/agents/sandboxes/${p.id}/ports/8000`, headers: { authorization: `Bearer ${p.key}` } },
    { name: "share link", base: p.server.url, prefix: shareUrl.pathname.replace(/\/$/, ""), headers: {} },
    {
      name: "E2B host name",
      base: p.server.url,
      prefix: "",
      headers: { host: `8000-${p.id}.${DOMAIN}`, authorization: `Bearer ${p.key}` },
    },
  ];
}

/** The service is up, answers, and tenant B's sandbox (and A's) still run code. */
async function assertStillServing(p: Place, what: string): Promise<void> {
  for (const s of new Set([p.server, p.owner])) {
    assert.equal(s.process.exitCode, null, `${what}: a node exited:\n${s.logs().slice(-3000)}`);
    assert.equal((await fetch(`${s.url}/health`)).status, 200, `${what}: /health`);
  }
  assert.equal((await pythonStdout(p.callB, p.idB, "print(6 * 7)")).trim(), "42", `${what}: tenant B runs code`);
  assert.equal((await pythonStdout(p.call, p.id, "print(1)")).trim(), "1", `${what}: tenant A runs code`);
}

/** Every malformed answer, through every way to the port: refused for that request only. */
async function malformedAnswers(p: Place, where: string): Promise<void> {
  const cases = ["/status000", "/nul-reason", "/bad-chunks", "/close-mid-body", "/huge-head", "/drip"];
  const all = await ways(p);
  // Tenant B runs code while the drip and the rest are under way (their answers are all pending at once).
  const pending = all.flatMap((w) =>
    cases.map(async (c) => ({ what: `${where} ${w.name} ${c}`, got: await get(w.base, `${w.prefix}${c}`, w.headers) })),
  );
  assert.equal((await pythonStdout(p.callB, p.idB, "print(2 + 2)")).trim(), "4", `${where}: tenant B during the hostile answers`);
  for (const { what, got } of await Promise.all(pending)) {
    // A reason phrase carries no meaning: a bad one is replaced by the standard one, the answer passes.
    if (what.endsWith("/nul-reason") && got.status === 200) {
      assert.equal(got.body, "hi", what);
      continue;
    }
    assertRefused(got, what);
  }
  // A well-formed answer with bytes 0x80-0xFF in its header values passes whole, each byte as it was sent.
  for (const w of all) {
    const ok = await get(w.base, `${w.prefix}/ok`, w.headers);
    assert.equal(ok.status, 200, `${where} ${w.name} /ok: ${ok.body}`);
    assert.equal(ok.body, "ok");
    assert.equal(Buffer.from(ok.headers["x-dash"] as string, "latin1").toString("utf8"), "a—b");
    assert.equal(ok.headers["x-high"], "\x80\x9f\xff");
  }
  await assertStillServing(p, where);
}

/** Every byte value in a header name and in a header value, through the path form. */
async function everyByte(p: Place, where: string): Promise<void> {
  const w = (await ways(p))[0] as { base: string; prefix: string; headers: Record<string, string> };
  const names = await inBatches(BYTES, 16, (b) => get(w.base, `${w.prefix}/name/${b}`, w.headers));
  const values = await inBatches(BYTES, 16, (b) => get(w.base, `${w.prefix}/value/${b}`, w.headers));
  for (const b of BYTES) {
    const name = names[b] as Got;
    const what = `${where}: header name with byte 0x${b.toString(16)}`;
    if (TOKEN.test(String.fromCharCode(b))) {
      assert.equal(name.status, 200, what);
      assert.equal(name.headers[`x-b${String.fromCharCode(b).toLowerCase()}d`], "v", what);
    } else if (b !== 0x3a) assertRefused(name, what);
    // ':' ends the name: "X-B" with the value "d: v", a well-formed header.
    else assert.ok(name.status === 200 || name.status === 502, what);
    const value = values[b] as Got;
    const whatV = `${where}: header value with byte 0x${b.toString(16)}`;
    if (valueByteOk(b)) {
      assert.equal(value.status, 200, `${whatV}: ${value.body}`);
      assert.equal(value.headers["x-v"], `a${String.fromCharCode(b)}z`, whatV);
    } else assertRefused(value, whatV);
  }
  await assertStillServing(p, where);
}

test("one node: every malformed answer of a sandbox's server is a 502 or a cut answer for that request only", async () => {
  await malformedAnswers(single, "one node");
});

test("one node: every byte value in a header name and value: relayed when valid, else a 502", async () => {
  await everyByte(single, "one node");
});

test("a cluster's API node: every malformed answer of a sandbox's server is a 502 or a cut answer for that request only", async () => {
  await malformedAnswers(clustered, "cluster");
});

test("a cluster's API node: every byte value in a header name and value: relayed when valid, else a 502", async () => {
  await everyByte(clustered, "cluster");
});

/** An Upgrade request on a raw connection: the answer's head and what followed it, once `send` (if any) is echoed or the connection ends. */
function upgrade(base: string, path: string, headers: Record<string, string>, send = ""): Promise<{ head: string; rest: string }> {
  const u = new URL(base);
  return new Promise((resolve) => {
    const sock = net.connect(Number(u.port), u.hostname);
    let got = "";
    const done = () => {
      const at = got.indexOf("\r\n\r\n");
      resolve(at < 0 ? { head: got, rest: "" } : { head: got.slice(0, at), rest: got.slice(at + 4) });
      sock.destroy();
    };
    sock.setEncoding("latin1");
    sock.on("data", (d: string) => {
      got += d;
      if (got.includes("\r\n\r\n") && got.startsWith("HTTP/1.1 101")) {
        if (!send) done();
        else if (got.endsWith(send)) done();
        else if (!got.includes(send) && got.endsWith("\r\n\r\n")) sock.write(send);
      }
    });
    sock.on("end", done);
    sock.on("error", done);
    sock.setTimeout(30_000, done);
    const lines = Object.entries({ connection: "Upgrade", upgrade: "websocket", ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
    sock.write(`GET ${path} HTTP/1.1\r\n${headers.host ? "" : "host: x\r\n"}${lines.join("")}\r\n`);
  });
}

test("a WebSocket (Upgrade) answer of a sandbox's server is checked before it reaches the client: a bad head is a 502", async () => {
  for (const [where, p] of [
    ["one node", single],
    ["cluster", clustered],
  ] as const) {
    for (const w of await ways(p)) {
      for (const path of ["/ws-bad", "/ws-bad-header"]) {
        const bad = await upgrade(w.base, `${w.prefix}${path}`, w.headers);
        assert.match(bad.head, /^HTTP\/1\.1 502 /, `${where} ${w.name} ${path}: ${JSON.stringify(bad.head)}`);
        assert.equal(JSON.parse(bad.rest).error.code, "upstream_error");
      }
      const ok = await upgrade(w.base, `${w.prefix}/ws-ok`, w.headers, "ping");
      assert.match(ok.head, /^HTTP\/1\.1 101 /, `${where} ${w.name}: ${JSON.stringify(ok.head)}`);
      assert.match(ok.head, /\r\nX-High: \x80\xff(\r\n|$)/, `${where} ${w.name}: header bytes kept`);
      assert.equal(ok.rest, "ping", `${where} ${w.name}: bytes flow both ways`);
    }
    await assertStillServing(p, `${where} WebSocket`);
  }
});

/** What the sandbox's /echo saw of a request. */
type Echo = { names: string[]; forwarded_host: string[] };

/** A raw HTTP/1.0 request without Host: its answer's body. */
function http10(base: string, path: string, lines: string[]): Promise<string> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname);
    let got = "";
    sock.setEncoding("latin1");
    sock.on("data", (d: string) => {
      got += d;
    });
    sock.on("end", () => resolve(got.slice(got.indexOf("\r\n\r\n") + 4)));
    sock.on("error", reject);
    sock.write(`GET ${path} HTTP/1.0\r\n${lines.map((l) => `${l}\r\n`).join("")}\r\n`);
  });
}

test("no internal channel header (x-agentbox-*) reaches a sandbox's server, on one node or forwarded", async () => {
  const client_ = { "x-agentbox-origin-host": "evil.example", "x-agentbox-anything": "1" };
  for (const [where, p] of [
    ["one node", single],
    ["cluster", clustered],
  ] as const) {
    const prefix = `/v1/agents/sandboxes/${p.id}/ports/8000`;
    const plain = await get(p.server.url, `${prefix}/echo`, { authorization: `Bearer ${p.key}` });
    assert.equal(plain.status, 200, plain.body);
    const seen = JSON.parse(plain.body) as Echo;
    assert.deepEqual(
      seen.names.filter((n) => n.startsWith("x-agentbox-")),
      [],
      `${where}: the sandbox saw ${seen.names.join(", ")}`,
    );
    // The client's own internal headers: dropped, with a Host (HTTP/1.1) and without (HTTP/1.0).
    const withHost = JSON.parse((await get(p.server.url, `${prefix}/echo`, { authorization: `Bearer ${p.key}`, ...client_ })).body) as Echo;
    assert.deepEqual(
      withHost.names.filter((n) => n.startsWith("x-agentbox-")),
      [],
      `${where}: the sandbox saw ${withHost.names.join(", ")}`,
    );
    const raw = await http10(p.server.url, `${prefix}/echo`, [`Authorization: Bearer ${p.key}`, "X-Agentbox-Origin-Host: evil.example"]);
    const noHost = JSON.parse(raw) as Echo;
    assert.deepEqual(
      noHost.names.filter((n) => n.startsWith("x-agentbox-")),
      [],
      `${where} HTTP/1.0: the sandbox saw ${noHost.names.join(", ")}`,
    );
    assert.ok(!noHost.forwarded_host.includes("evil.example"), `${where} HTTP/1.0: the client's origin host was taken`);
  }
  // In a cluster a client cannot claim to be a node either (a forged signature is refused).
  const forged = await get(clustered.server.url, `/v1/agents/sandboxes/${clustered.id}/ports/8000/echo`, {
    authorization: `Bearer ${clustered.key}`,
    "x-agentbox-node": "exec",
    "x-agentbox-node-time": String(Date.now()),
    "x-agentbox-node-sig": "forged",
  });
  assert.equal(forged.status, 401, forged.body);
});
