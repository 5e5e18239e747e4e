// Forwarding over the node's own connections (src/cluster/forward.ts, src/cluster/owner-lines.ts):
// a loopback "owner" server, a loopback "forwarding node" that sends every request to it with
// Forwarder.forward(), and a client. No service, no sandbox: what goes over the wire is checked.
import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
import type net from "node:net";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { Forwarder, requestHead } from "../../src/cluster/forward.js";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let handler: Handler = (_req, res) => res.end("ok");
/** The owner's ends of the connections its requests came on. */
let ownerSockets = new Set<net.Socket>();
const owner = http.createServer((req, res) => {
  ownerSockets.add(req.socket);
  handler(req, res);
});
const forwarder = new Forwarder();
let failures = 0;
const front = http.createServer((req, res) =>
  forwarder.forward(req, res, { id: "owner", url: `http://127.0.0.1:${(owner.address() as AddressInfo).port}` }, { "x-test": "1" }, () => {
    failures++;
  }),
);
let url = "";
/** A request that hangs (a connection left paused in the pool) fails its test instead of the run. */
const BOUNDED = { timeout: 20_000 };

before(async () => {
  owner.listen(0, "127.0.0.1");
  front.listen(0, "127.0.0.1");
  await Promise.all([once(owner, "listening"), once(front, "listening")]);
  url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
});

after(() => {
  forwarder.close();
  owner.closeAllConnections();
  front.closeAllConnections();
  owner.close();
  front.close();
});

/** One request through the forwarding node (a fresh connection each: node:http's own agent, not kept). */
function send(
  method: string,
  path: string,
  opts: { body?: Buffer | Buffer[]; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method, headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    const parts = opts.body === undefined ? [] : Array.isArray(opts.body) ? opts.body : [opts.body];
    for (const part of parts) req.write(part);
    req.end();
  });
}

test("the request's head: request line, headers, blank line", () => {
  assert.equal(requestHead("POST", "/a?b=1", ["host", "n:1", "x-a", "v"]), "POST /a?b=1 HTTP/1.1\r\nhost: n:1\r\nx-a: v\r\n\r\n");
});

test("requests one after the other share one kept-alive connection, each with its headers and body", BOUNDED, async () => {
  const seen: { method: string; url: string; extra: unknown; body: string }[] = [];
  handler = (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({
        method: req.method as string,
        url: req.url as string,
        extra: req.headers["x-test"],
        body: Buffer.concat(chunks).toString(),
      });
      res.setHeader("x-owner", "yes");
      res.end(`answer ${seen.length}`);
    });
  };
  ownerSockets = new Set();
  for (let i = 1; i <= 5; i++) {
    const res = await send("POST", `/run/${i}`, { body: Buffer.from(`body ${i}`), headers: { "content-type": "text/plain" } });
    assert.equal(res.status, 200);
    assert.equal(res.headers["x-owner"], "yes");
    assert.equal(res.body.toString(), `answer ${i}`);
  }
  assert.deepEqual(
    seen.map((s) => s.body),
    ["body 1", "body 2", "body 3", "body 4", "body 5"],
  );
  assert.ok(seen.every((s) => s.method === "POST" && s.extra === "1"));
  assert.equal(ownerSockets.size, 1, "one connection to the owner for the five");
});

test(
  "a body the client sends in chunks reaches the owner whole (chunked again), and a chunked answer comes back whole",
  BOUNDED,
  async () => {
    const parts = Array.from({ length: 40 }, (_, i) => Buffer.alloc(1000 + i, 97 + (i % 26)));
    handler = (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const got = Buffer.concat(chunks);
        res.write(`length ${got.length} te ${req.headers["transfer-encoding"]}\n`);
        for (const p of parts) res.write(p);
        res.end();
      });
    };
    const res = await send("PUT", "/upload", { body: parts, headers: { "transfer-encoding": "chunked" } });
    const total = parts.reduce((n, p) => n + p.length, 0);
    const header = `length ${total} te chunked\n`;
    assert.equal(res.body.subarray(0, header.length).toString(), header);
    assert.ok(res.body.subarray(header.length).equals(Buffer.concat(parts)));
  },
);

test("answers without a body (HEAD, 204, 304) end at their head, and the connection serves the next", BOUNDED, async () => {
  handler = (req, res) => {
    if (req.url === "/none") res.writeHead(204).end();
    else if (req.url === "/same") res.writeHead(304, { etag: '"x"' }).end();
    else res.writeHead(200, { "content-length": "5" }).end(req.method === "HEAD" ? undefined : "hello");
  };
  ownerSockets = new Set();
  assert.equal((await send("DELETE", "/none")).status, 204);
  assert.equal((await send("GET", "/same")).status, 304);
  const head = await send("HEAD", "/thing");
  assert.equal(head.status, 200);
  assert.equal(head.headers["content-length"], "5");
  assert.equal(head.body.length, 0);
  const got = await send("GET", "/thing");
  assert.equal(got.body.toString(), "hello");
  assert.equal(ownerSockets.size, 1);
});

test("an answer read until the owner closes (no length) comes back whole; that connection is not used again", BOUNDED, async () => {
  handler = (_req, res) => {
    // HTTP/1.0-style: no length, no chunks, the end of the body is the end of the connection.
    const socket = res.socket as net.Socket;
    res.detachSocket(socket);
    socket.end("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nuntil the end");
  };
  ownerSockets = new Set();
  const res = await send("GET", "/raw");
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), "until the end");
  handler = (_req, res) => res.end("after");
  assert.equal((await send("GET", "/next")).body.toString(), "after");
  assert.equal(ownerSockets.size, 2, "the next request came on a new connection");
});

test("an informational answer (103) is passed over; the final one is relayed", BOUNDED, async () => {
  handler = (_req, res) => {
    res.writeEarlyHints({ link: "</a.css>; rel=preload" });
    res.end("final");
  };
  const res = await send("GET", "/hints");
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), "final");
});

test(
  "an owner that closes before answering: 503 node_unavailable with Retry-After; after its head: the client's answer is cut",
  BOUNDED,
  async () => {
    const failed = failures;
    handler = (req) => req.socket.destroy();
    const res = await send("GET", "/gone");
    assert.equal(res.status, 503);
    assert.equal(res.headers["retry-after"], "1");
    assert.equal(JSON.parse(res.body.toString()).error.code, "node_unavailable");
    assert.equal(failures, failed + 1, "the caller is told (it forgets the route)");

    handler = (req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("part of it");
      setTimeout(() => req.socket.destroy(), 20);
    };
    await assert.rejects(send("GET", "/cut"));
    handler = (_req, res) => res.end("fine again");
    assert.equal((await send("GET", "/after")).body.toString(), "fine again");
  },
);

/** The owner's handler that answers `raw` bytes itself, as a sandbox's server relayed by an owner of another version might. */
const rawAnswer =
  (raw: Buffer): Handler =>
  (_req, res) => {
    const socket = res.socket as net.Socket;
    res.detachSocket(socket);
    socket.end(raw);
  };

test("header bytes 0x80-0xFF (a UTF-8 dash among them) come back as they were sent", BOUNDED, async () => {
  handler = rawAnswer(
    Buffer.concat([
      Buffer.from("HTTP/1.1 200 OK\r\nx-dash: a"),
      Buffer.from("—"),
      Buffer.from("b\r\nx-high: "),
      Buffer.from([0x80, 0x9f, 0xff]),
      Buffer.from("\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"),
    ]),
  );
  const res = await send("GET", "/high");
  assert.equal(res.status, 200);
  assert.equal(res.body.toString(), "ok");
  assert.equal(Buffer.from(res.headers["x-dash"] as string, "latin1").toString("utf8"), "a—b");
  assert.deepEqual([...Buffer.from(res.headers["x-high"] as string, "latin1")], [0x80, 0x9f, 0xff]);
});

test(
  "an answer whose head writeHead would refuse (status 000, a control byte in a name or value) is a 502, not a crash",
  BOUNDED,
  async () => {
    const failed = failures;
    for (const head of ["HTTP/1.1 000 OK\r\n", "HTTP/1.1 200 OK\r\nx\u0001y: v\r\n", "HTTP/1.1 200 OK\r\nx-v: a\u007fb\r\n"]) {
      handler = rawAnswer(Buffer.from(`${head}content-length: 2\r\nconnection: close\r\n\r\nhi`, "latin1"));
      const res = await send("GET", "/bad");
      assert.equal(res.status, 502, JSON.stringify(head));
      assert.equal(JSON.parse(res.body.toString()).error.code, "upstream_error");
    }
    assert.equal(failures, failed, "the owner answered: its route is kept");
    handler = (_req, res) => res.end("fine again");
    assert.equal((await send("GET", "/after")).body.toString(), "fine again");
  },
);

test("a node found lost: its requests in flight fail at once", BOUNDED, async () => {
  handler = () => {}; // never answers
  const pending = send("GET", "/hangs");
  await new Promise((resolve) => setTimeout(resolve, 50));
  forwarder.abort("owner");
  const res = await pending;
  assert.equal(res.status, 503);
});

test(
  "a client that goes away mid-answer closes the owner's connection (its stream sees the end); the owner is not blamed",
  BOUNDED,
  async () => {
    const closed = new Promise<void>((resolve) => {
      handler = (req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: 1\n\n");
        req.socket.on("close", () => resolve());
      };
    });
    const failed = failures;
    const req = http.request(`${url}/events`, { agent: false });
    req.end();
    const [res] = (await once(req, "response")) as [http.IncomingMessage];
    assert.equal(res.headers["content-type"], "text/event-stream");
    await once(res, "data");
    req.destroy();
    await closed;
    // The forwarding node's end of that connection has reported its close by now too.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(failures, failed, "not a failure of the owner (its route is kept)");
  },
);

test("large answers pass with the client's pace; the connection each ends on serves the next request", BOUNDED, async () => {
  const big = Buffer.alloc(1024 * 1024 + 17, 120);
  handler = (req, res) => (req.url === "/big" ? res.end(big) : res.end("small"));
  ownerSockets = new Set();
  for (let i = 0; i < 20; i++) {
    const res = await send("GET", "/big");
    assert.ok(res.body.equals(big));
    assert.equal((await send("GET", "/small")).body.toString(), "small");
  }
  assert.equal(ownerSockets.size, 1);
});
