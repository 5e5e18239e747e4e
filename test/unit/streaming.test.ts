// Pure parts of streaming and background processes: the `bg` event decoded field by field (the
// sandbox is untrusted), output bytes to text with UTF-8 sequences split across chunks, abort
// wiring, when a request asks for a stream, and the event stream in the OpenAPI document.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { FastifyRequest } from "fastify";
import { documentEventStreams, wantsStream } from "../../src/api/sse.js";
import { decodeEvent } from "../../src/sandbox/protocol.js";
import { onAbort, outputWatch, type RunObserver } from "../../src/sandbox/observe.js";

/** A well-formed running process as the sandbox reports it (kept as is by the decoder); a fresh copy each call. */
const running = () => ({
  pid: 9,
  command: "sleep 1",
  status: "running",
  exit_code: null,
  started_at: "2026-01-01T00:00:00.000Z",
  ended_at: null,
  stdout_len: 3,
});

test("the bg event: known fields of the right type kept, the rest dropped", () => {
  const header = {
    ev: "bg",
    id: "r1",
    status: "ok",
    procs: [
      running(),
      { pid: "x", command: "bad" },
      { pid: 10, command: "true", status: "exited", exit_code: 0, started_at: "s", ended_at: "e", stdout_dropped: -5, extra: 1 },
    ],
  };
  const ev = decodeEvent(header, Buffer.from("abcde"));
  assert.deepEqual(ev, {
    ev: "bg",
    id: "r1",
    status: "ok",
    procs: [running(), { pid: 10, command: "true", status: "exited", exit_code: 0, started_at: "s", ended_at: "e", stdout_dropped: 0 }],
    body: Buffer.from("abcde"),
  });
  const odd = decodeEvent({ ev: "bg", id: "r2", status: "whatever", procs: "no", message: 5 }, Buffer.alloc(0));
  assert.deepEqual(odd, { ev: "bg", id: "r2", status: "spawn_error", procs: [], body: Buffer.alloc(0) });
  assert.equal(decodeEvent({ ev: "bg", status: "ok" }, Buffer.alloc(0)), null, "an answer without its request id is dropped");
});

test("output bytes become text; a UTF-8 character split between chunks is sent whole", () => {
  const seen: [string, string][] = [];
  const observer: RunObserver = { started() {}, output: (s, t) => seen.push([s, t]), result() {} };
  const watch = outputWatch(observer);
  const euro = Buffer.from("€");
  watch.output(1, Buffer.concat([Buffer.from("a"), euro.subarray(0, 2)]));
  watch.output(2, Buffer.from("err"));
  watch.output(1, euro.subarray(2));
  assert.deepEqual(seen, [
    ["stdout", "a"],
    ["stderr", "err"],
    ["stdout", "€"],
  ]);
});

test("onAbort: cancels once on abort, at once when already aborted, never after release", () => {
  let n = 0;
  const a = new AbortController();
  onAbort(a.signal, () => n++);
  a.abort();
  a.abort();
  assert.equal(n, 1);
  const b = new AbortController();
  b.abort();
  onAbort(b.signal, () => n++);
  assert.equal(n, 2);
  const c = new AbortController();
  const release = onAbort(c.signal, () => n++);
  release();
  c.abort();
  assert.equal(n, 2);
  onAbort(undefined, () => n++)();
  assert.equal(n, 2);
});

test("a request asks for a stream by body, query or Accept header", () => {
  const req = (query: Record<string, unknown>, accept?: string) =>
    ({ query, headers: accept ? { accept } : {} }) as unknown as FastifyRequest;
  assert.equal(wantsStream(req({}), true), true);
  assert.equal(wantsStream(req({}), false), false);
  assert.equal(wantsStream(req({}), undefined), false);
  assert.equal(wantsStream(req({ stream: "true" }), undefined), true);
  assert.equal(wantsStream(req({ stream: "1" }), undefined), true);
  assert.equal(wantsStream(req({ stream: "false" }), undefined), false);
  assert.equal(wantsStream(req({}, "text/event-stream"), undefined), true);
  assert.equal(wantsStream(req({}, "application/json"), undefined), false);
});

test("the OpenAPI document gets a text/event-stream answer on the streaming routes only", () => {
  const json = { "application/json": { schema: { type: "object" } } };
  const doc = {
    paths: {
      "/v1/agents/sandboxes/{sandbox_id}/code/run": { post: { responses: { "200": { content: { ...json } } } } },
      "/v1/agents/sandboxes/{sandbox_id}/commands/{pid}/stream": { get: { responses: { "200": { content: { ...json } } } } },
      "/v1/agents/sandboxes/{sandbox_id}/files": { get: { responses: { "200": { content: { ...json } } } } },
    },
  };
  const out = documentEventStreams(doc).paths;
  assert.deepEqual(Object.keys(out["/v1/agents/sandboxes/{sandbox_id}/code/run"].post.responses["200"].content).sort(), [
    "application/json",
    "text/event-stream",
  ]);
  assert.deepEqual(Object.keys(out["/v1/agents/sandboxes/{sandbox_id}/commands/{pid}/stream"].get.responses["200"].content), [
    "text/event-stream",
  ]);
  assert.deepEqual(Object.keys(out["/v1/agents/sandboxes/{sandbox_id}/files"].get.responses["200"].content), ["application/json"]);
});
