// The relay's undici exchange with an owner node (src/cluster/owner-exchange.ts): the request head
// read from a client's raw headers, then whole exchanges through a loopback relay to a loopback
// owner (no service, no sandbox).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { Forwarder } from "../../src/cluster/forward.js";
import { relayedHead } from "../../src/cluster/relay-headers.js";

test("relayed head: the client's headers but hop-by-hop ones and the node's own; key, node claim, Host and framing read", () => {
  const head = relayedHead([
    "Host",
    "api.example:3000",
    "Authorization",
    "Bearer k",
    "Connection",
    "keep-alive",
    "X-AgentBox-Node-Sig",
    "forged",
    "x-agentbox-origin-host",
    "evil.example",
    "Content-Type",
    "application/json",
    "Content-Length",
    "42",
    "X-Custom",
    "a",
    "X-Custom",
    "b",
  ]);
  assert.deepEqual(head.headers, [
    "Authorization",
    "Bearer k",
    "Content-Type",
    "application/json",
    "Content-Length",
    "42",
    "X-Custom",
    "a",
    "X-Custom",
    "b",
  ]);
  assert.deepEqual([head.authorization, head.fromNode, head.host, head.plain, head.length], [true, false, "api.example:3000", true, 42]);
  assert.equal(relayedHead(["x-agentbox-node", "n1"]).fromNode, true);
  assert.equal(relayedHead(["Transfer-Encoding", "chunked"]).plain, false, "a chunked body goes through node:http's client");
  assert.equal(relayedHead(["Expect", "100-continue"]).plain, false);
  assert.equal(relayedHead(["Host", "h"]).authorization, false);
});

/** An owner server, a relay server that relays every request to it by Forwarder.exchange(), and the relay's port. */
async function relayTo(owner: http.RequestListener): Promise<{
  port: number;
  ownerHost: string;
  failures: () => number;
  /** The owner found lost (Forwarder.abort()). */
  lose(): void;
  close(): void;
}> {
  const ownerServer = http.createServer(owner);
  ownerServer.listen(0, "127.0.0.1");
  await once(ownerServer, "listening");
  const ownerUrl = `http://127.0.0.1:${(ownerServer.address() as AddressInfo).port}`;
  const forwarder = new Forwarder();
  let failures = 0;
  const relay = http.createServer((req, res) => {
    const head = relayedHead(req.rawHeaders);
    forwarder.exchange(
      req,
      res,
      { id: "owner", url: ownerUrl },
      [...head.headers, "host", forwarder.hostOf(ownerUrl)],
      head.length,
      () => failures++,
    );
  });
  relay.listen(0, "127.0.0.1");
  await once(relay, "listening");
  return {
    port: (relay.address() as AddressInfo).port,
    ownerHost: forwarder.hostOf(ownerUrl),
    failures: () => failures,
    lose: () => forwarder.abort("owner"),
    close() {
      forwarder.close();
      relay.close();
      ownerServer.close();
      relay.closeAllConnections();
      ownerServer.closeAllConnections();
    },
  };
}

async function call(port: number, method: string, path: string, body?: Buffer, agent?: http.Agent) {
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port, method, path, agent, headers: body ? { "content-length": body.length } : {} },
      resolve,
    );
    req.on("error", reject).end(body);
  });
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) };
}

test("relay exchange: runs one after the other share one connection; bodies and answers pass byte for byte both ways", async () => {
  const sockets = new Set<unknown>();
  const r = await relayTo(async (req, res) => {
    sockets.add(req.socket);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (req.url === "/echo") {
      res.setHeader("content-type", "application/octet-stream");
      res.setHeader("x-sha", crypto.createHash("sha256").update(body).digest("hex"));
      res.end(body);
    } else if (req.url === "/big") {
      // A large answer in chunks (chunked transfer coding), as a file download streams.
      const piece = Buffer.alloc(256 * 1024, 7);
      for (let i = 0; i < 20; i++) if (!res.write(piece)) await once(res, "drain");
      res.end();
    } else res.end(JSON.stringify({ method: req.method, url: req.url, host: req.headers.host, length: body.length }));
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < 5; i++) {
      const got = await call(r.port, "POST", `/run?i=${i}`, Buffer.from('{"code":"1 + 1"}'), agent);
      assert.equal(got.status, 200);
      assert.deepEqual(JSON.parse(got.body.toString()), { method: "POST", url: `/run?i=${i}`, host: r.ownerHost, length: 16 });
    }
    assert.equal(sockets.size, 1, "one kept-alive connection to the owner");
    const upload = crypto.randomBytes(3 * 1024 * 1024 + 5);
    const echoed = await call(r.port, "PUT", "/echo", upload, agent);
    assert.equal(echoed.headers["x-sha"], crypto.createHash("sha256").update(upload).digest("hex"));
    assert.ok(echoed.body.equals(upload), "a 3 MiB body and its answer byte for byte");
    const big = await call(r.port, "GET", "/big", undefined, agent);
    assert.equal(big.body.length, 20 * 256 * 1024);
    assert.ok(big.body.every((b) => b === 7));
    const head = await call(r.port, "HEAD", "/x", undefined, agent);
    assert.deepEqual([head.status, head.body.length], [200, 0]);
    assert.equal(r.failures(), 0);
  } finally {
    agent.destroy();
    r.close();
  }
});

test("relay exchange: an event stream's head and events pass as they come; the client's going away closes the owner's side", async () => {
  let ownerSawClose: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    ownerSawClose = resolve;
  });
  const r = await relayTo((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: first\n\n");
    res.on("close", () => ownerSawClose());
  });
  try {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get({ host: "127.0.0.1", port: r.port, path: "/events" }, resolve).on("error", reject);
    });
    assert.equal(res.headers["content-type"], "text/event-stream");
    const [first] = (await once(res, "data")) as [Buffer];
    assert.equal(first.toString(), "data: first\n\n");
    res.destroy();
    await closed;
    assert.equal(r.failures(), 0, "the client's leaving is not the owner's failure");
  } finally {
    r.close();
  }
});

test("relay exchange: an owner that does not answer is a 503 node_unavailable with Retry-After, and the route is forgotten", async () => {
  const r = await relayTo((req) => req.socket.destroy());
  try {
    const got = await call(r.port, "POST", "/run", Buffer.from("{}"));
    assert.equal(got.status, 503);
    assert.equal(got.headers["retry-after"], "1");
    assert.equal(JSON.parse(got.body.toString()).error.code, "node_unavailable");
    assert.equal(r.failures(), 1);
  } finally {
    r.close();
  }
});

test("relay exchange: the owner found lost cuts an answer begun and fails one not begun with a 503; the next request gets a new connection", async () => {
  let calls = 0;
  const r = await relayTo((req, res) => {
    calls++;
    if (req.url === "/begun") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: first\n\n");
    } else if (req.url === "/ok") res.end("ok");
    // "/silent": no answer at all.
  });
  try {
    const begun = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get({ host: "127.0.0.1", port: r.port, path: "/begun" }, resolve).on("error", reject);
    });
    await once(begun, "data");
    const silent = call(r.port, "POST", "/silent", Buffer.from("{}"));
    while (calls < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    const cut = new Promise<boolean>((resolve) => {
      begun.on("end", () => resolve(false));
      begun.on("error", () => resolve(true));
      begun.on("aborted", () => resolve(true));
    });
    r.lose();
    assert.equal(await cut, true, "the answer begun is cut, not ended as if complete");
    const failed = await silent;
    assert.equal(failed.status, 503);
    assert.equal(JSON.parse(failed.body.toString()).error.code, "node_unavailable");
    assert.equal(r.failures(), 2);
    const again = await call(r.port, "GET", "/ok");
    assert.deepEqual([again.status, again.body.toString()], [200, "ok"]);
  } finally {
    r.close();
  }
});
