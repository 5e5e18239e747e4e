// The forwarded request's and answer's headers (src/cluster/forward.ts) and the kept-alive
// connections to the owners (src/cluster/node-connections.ts): pure logic, then the pool against a
// plain loopback server (no service, no sandbox).
import assert from "node:assert/strict";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type net from "node:net";
import { test } from "node:test";
import { answerHeaders, forwardedRequestHeaders } from "../../src/cluster/forward.js";
import { idleTimeoutMs, NodeConnections } from "../../src/cluster/node-connections.js";

const extra = { "x-agentbox-node": "api-1", "x-agentbox-node-time": "1700000000000", "x-agentbox-node-sig": "good" };

test("forwarded request: the client's headers, without hop-by-hop ones, then the node's, then the owner's Host", () => {
  const headers = {
    host: "api.example:8080",
    authorization: "Bearer k",
    connection: "keep-alive",
    "content-type": "application/json",
    "content-length": "12",
    "e2b-sandbox-id": "sbx_1",
    "set-cookie": ["a=1", "b=2"],
    unset: undefined,
  };
  assert.deepEqual(forwardedRequestHeaders(headers, extra, "10.0.0.2:3000"), [
    "authorization",
    "Bearer k",
    "content-type",
    "application/json",
    "content-length",
    "12",
    "e2b-sandbox-id",
    "sbx_1",
    "set-cookie",
    "a=1",
    "set-cookie",
    "b=2",
    "x-agentbox-node",
    "api-1",
    "x-agentbox-node-time",
    "1700000000000",
    "x-agentbox-node-sig",
    "good",
    "host",
    "10.0.0.2:3000",
  ]);
});

test("forwarded request: a client's own copies of the node's headers are dropped", () => {
  const headers = {
    "x-agentbox-node-sig": "forged",
    "x-agentbox-node-time": "1",
    "x-agentbox-origin-host": "evil",
    authorization: "Bearer k",
  };
  const sent = forwardedRequestHeaders(headers, { ...extra, "x-agentbox-origin-host": "api.example" }, "owner:3000");
  const named = (name: string) => sent.filter((_, i) => i % 2 === 1 && sent[i - 1] === name);
  assert.deepEqual(named("x-agentbox-node-sig"), ["good"]);
  assert.deepEqual(named("x-agentbox-node-time"), ["1700000000000"]);
  assert.deepEqual(named("x-agentbox-origin-host"), ["api.example"]);
  assert.deepEqual(named("authorization"), ["Bearer k"]);
});

test("forwarded request: a client's internal headers are dropped even when the node sends none of its own (HTTP/1.0, no Host)", () => {
  const sent = forwardedRequestHeaders({ "x-agentbox-origin-host": "evil", "x-agentbox-other": "1", accept: "*/*" }, extra, "owner:3000");
  assert.deepEqual(
    sent.filter((_, i) => i % 2 === 0 && (sent[i] as string).startsWith("x-agentbox-")),
    ["x-agentbox-node", "x-agentbox-node-time", "x-agentbox-node-sig"],
  );
  assert.ok(sent.includes("accept"));
});

test("forwarded request: a body read already goes with its own length and no transfer coding", () => {
  const sent = forwardedRequestHeaders({ "transfer-encoding": "chunked", "content-type": "application/json" }, extra, "owner:3000", 42);
  assert.ok(!sent.includes("transfer-encoding"));
  assert.deepEqual(sent.slice(-2), ["content-length", "42"]);
});

test("answer: the owner's headers without hop-by-hop ones; this node's own only where the owner sets none", () => {
  const raw = ["Content-Type", "application/json", "Keep-Alive", "timeout=72", "Connection", "keep-alive", "X-Request-Id", "owner-1"];
  assert.deepEqual(answerHeaders(raw), {
    headers: ["Content-Type", "application/json", "X-Request-Id", "owner-1"],
    stream: false,
  });
  const own = { "x-request-id": "here-1", "ratelimit-remaining": 9, "set-cookie": ["a=1", "b=2"], unset: undefined };
  assert.deepEqual(answerHeaders(raw, own).headers, [
    "Content-Type",
    "application/json",
    "X-Request-Id",
    "owner-1",
    "ratelimit-remaining",
    "9",
    "set-cookie",
    "a=1",
    "set-cookie",
    "b=2",
  ]);
});

test("answer: an event stream is told apart (its head goes out at once)", () => {
  assert.equal(answerHeaders(["Content-Type", "text/event-stream; charset=utf-8"]).stream, true);
  assert.equal(answerHeaders(["content-type", "application/json"]).stream, false);
});

test("kept-alive connections: idle until a second before the owner's keep-alive timeout; not kept when that is too short", () => {
  assert.equal(idleTimeoutMs(["Keep-Alive", "timeout=72"]), 71_000);
  assert.equal(idleTimeoutMs(["keep-alive", "timeout=5, max=100"]), 4000);
  assert.equal(idleTimeoutMs(["Keep-Alive", "timeout=1"]), undefined);
  assert.equal(idleTimeoutMs(["Keep-Alive", "max=5"]), 0, "no timeout announced: no limit");
  assert.equal(idleTimeoutMs(["Content-Type", "text/plain"]), 0);
  assert.equal(idleTimeoutMs(undefined), 0);
});

/**
 * `count` GETs one after the other through `agent` to a loopback server: the connections the
 * server saw, and the client's end of the last one.
 */
async function sequentialGets(
  agent: NodeConnections,
  port: number,
  count: number,
  server: http.Server,
): Promise<{ seen: Set<unknown>; last?: net.Socket }> {
  const seen = new Set<unknown>();
  let last: net.Socket | undefined;
  const onRequest = (req: http.IncomingMessage) => seen.add(req.socket);
  server.on("request", onRequest);
  for (let i = 0; i < count; i++) {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port, path: "/", agent }, resolve);
      req.on("socket", (socket) => {
        last = socket;
      });
      req.on("error", reject).end();
    });
    res.resume();
    await once(res, "end");
    // The connection is given back on the next tick after the answer's end.
    await new Promise((resolve) => setImmediate(resolve));
  }
  server.off("request", onRequest);
  return { seen, last };
}

test("kept-alive connections: requests one after the other share one; one the server closed is not used again", async () => {
  const server = http.createServer((_req, res) => res.end("ok"));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const agent = new NodeConnections();
  try {
    const first = await sequentialGets(agent, port, 5, server);
    assert.equal(first.seen.size, 1);
    const closed = once(first.last as net.Socket, "close");
    server.closeIdleConnections();
    await closed;
    const again = await sequentialGets(agent, port, 3, server);
    assert.equal(again.seen.size, 1, "a new connection, kept again");
    assert.notEqual(again.last, first.last);
  } finally {
    agent.destroy();
    server.close();
  }
});

test("kept-alive connections: an owner whose keep-alive timeout leaves no margin gets a new connection each time", async () => {
  const server = http.createServer((_req, res) => res.end("ok"));
  server.keepAliveTimeout = 1000; // announced as `Keep-Alive: timeout=1`
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const agent = new NodeConnections();
  try {
    assert.equal((await sequentialGets(agent, port, 3, server)).seen.size, 3);
  } finally {
    agent.destroy();
    server.close();
  }
});
