// The forwarded request's and answer's headers (src/cluster/forward.ts) and the kept-alive
// connections' idle time (src/cluster/node-connections.ts): pure logic, no sockets.
import assert from "node:assert/strict";
import { test } from "node:test";
import { answerHeaders, forwardedRequestHeaders } from "../../src/cluster/forward.js";
import { idleTimeoutMs } from "../../src/cluster/node-connections.js";

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
