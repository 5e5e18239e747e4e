// End to end: code/run and commands/run answered as server-sent events (body `stream`, `?stream=true`
// or `Accept: text/event-stream`): output events as produced and in order, rich results, an `end`
// carrying the plain answer, a client hanging up interrupts the run (python state kept), and
// errors before the run stay plain JSON.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, createSandbox } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { type SseEvent, sse } from "./helpers/sse.js";

let server: TestServer;
let call: ReturnType<typeof client>;
let id: string;

before(async () => {
  server = await startServer();
  call = client(server);
  id = await createSandbox(call);
});

after(async () => {
  await server?.dispose();
});

const codeRun = (sandbox: string) => `/v1/agents/sandboxes/${sandbox}/code/run`;
const names = (events: SseEvent[]) => events.map((e) => e.event);
/** Output events as [name, text], consecutive pieces of one stream joined (a print may arrive as two writes). */
function output(events: SseEvent[]): [string, string | undefined][] {
  const out: [string, string | undefined][] = [];
  for (const e of events) {
    const text = (e.data as { text?: string }).text;
    const last = out[out.length - 1];
    if (last && last[0] === e.event && e.event !== "end" && e.event !== "result") last[1] = `${last[1] ?? ""}${text ?? ""}`;
    else out.push([e.event, e.event === "end" ? undefined : text]);
  }
  return out;
}
const endOf = (events: SseEvent[]) => {
  const last = events[events.length - 1];
  assert.equal(last?.event, "end", `the stream ends with end: ${JSON.stringify(events)}`);
  return last.data as Record<string, unknown>;
};

test("code/run streams stdout as it is printed, in order, and ends with the plain answer", async () => {
  const code = "import time, sys\nprint('first', flush=True)\ntime.sleep(1)\nprint('second')\nprint('oops', file=sys.stderr)";
  const res = await sse(server, "POST", codeRun(id), { code, language: "python", stream: true });
  assert.equal(res.status, 200);
  assert.match(res.contentType, /^text\/event-stream/);
  assert.deepEqual(output(res.events), [
    ["stdout", "first\nsecond\n"],
    ["stderr", "oops\n"],
    ["end", undefined],
  ]);
  const first = res.events[0] as SseEvent;
  const end = res.events[res.events.length - 1] as SseEvent;
  assert.equal((first.data as { text: string }).text.startsWith("first"), true);
  // Sent as produced: the first line arrives while the run is still sleeping, not with the end.
  const gap = end.at - first.at;
  assert.ok(gap >= 800, `the first stdout event came ${gap.toFixed(0)} ms before the end (expected >= 800)`);
  const plain = await call("POST", codeRun(id), { code: "print('first')\nprint('second')", language: "python" });
  assert.equal(plain.status, 200);
  const data = endOf(res.events);
  assert.deepEqual(Object.keys(data).sort(), Object.keys(plain.body).sort());
  assert.deepEqual(data.logs, { stdout: "first\nsecond\n", stderr: "oops\n" });
  assert.equal(data.error, null);
  assert.deepEqual(data.results, []);
});

test("?stream=true and Accept: text/event-stream stream too; without either the answer is JSON", async () => {
  const body = { code: "echo hi", language: "bash" };
  const byQuery = await sse(server, "POST", `${codeRun(id)}?stream=true`, body);
  assert.deepEqual(output(byQuery.events), [
    ["stdout", "hi\n"],
    ["end", undefined],
  ]);
  const byAccept = await sse(server, "POST", codeRun(id), body, { headers: { accept: "text/event-stream" } });
  assert.deepEqual(names(byAccept.events).at(-1), "end");
  assert.deepEqual((endOf(byAccept.events).logs as { stdout: string }).stdout, "hi\n");
  const plain = await sse(server, "POST", codeRun(id), body);
  assert.match(plain.contentType, /^application\/json/);
  assert.deepEqual((plain.json as { logs: unknown }).logs, { stdout: "hi\n", stderr: "" });
});

test("rich results are events of their own, in order with the output", async () => {
  const code = "print('before')\ndisplay(7)\n41";
  const res = await sse(server, "POST", codeRun(id), { code, language: "python", stream: true });
  const seen = output(res.events);
  assert.deepEqual(
    seen.map(([name]) => name),
    ["stdout", "result", "result", "end"],
  );
  const results = res.events.filter((e) => e.event === "result").map((e) => e.data);
  assert.deepEqual(results, [{ text: "7" }, { text: "41", is_main_result: true }]);
  assert.deepEqual(endOf(res.events).results, [{ text: "7" }, { text: "41", is_main_result: true }]);
});

test("a client hanging up interrupts the run; the kernel keeps its state and the next run starts at once", async () => {
  const set = await call("POST", codeRun(id), { code: "kept = 42", language: "python" });
  assert.equal(set.status, 200);
  const t0 = performance.now();
  const res = await sse(
    server,
    "POST",
    codeRun(id),
    { code: "import time\nprint('started', flush=True)\ntime.sleep(60)", language: "python", stream: true, timeout: 120 },
    { stopWhen: (e) => e.event === "stdout" },
  );
  assert.deepEqual(names(res.events).slice(0, 1), ["stdout"]);
  // The next run waits for the kernel: it finishes quickly only if the sleeping one was interrupted.
  const next = await call<{ logs: { stdout: string }; error: string | null }>("POST", codeRun(id), {
    code: "print(kept)",
    language: "python",
  });
  const took = performance.now() - t0;
  assert.equal(next.status, 200);
  assert.equal(next.body.error, null);
  assert.equal(next.body.logs.stdout, "42\n");
  assert.ok(took < 20_000, `the next run finished ${took.toFixed(0)} ms after the hang-up's run started (the sleep was 60 s)`);
});

test("commands/run streams stdout and stderr and ends with the plain command answer", async () => {
  const res = await sse(server, "POST", `/v1/agents/sandboxes/${id}/commands/run`, {
    command: "echo one; sleep 1; echo two >&2; exit 3",
    stream: true,
  });
  assert.deepEqual(output(res.events), [
    ["stdout", "one\n"],
    ["stderr", "two\n"],
    ["end", undefined],
  ]);
  const gap = (res.events.at(-1) as SseEvent).at - (res.events[0] as SseEvent).at;
  assert.ok(gap >= 800, `the first event came ${gap.toFixed(0)} ms before the end`);
  const end = endOf(res.events);
  assert.deepEqual(Object.keys(end).sort(), ["duration_ms", "error", "exit_code", "stderr", "stdout", "success"]);
  assert.equal(end.exit_code, 3);
  assert.equal(end.stdout, "one\n");
  assert.equal(end.stderr, "two\n");
});

test("a hung-up command is killed", async () => {
  const marker = `/tmp/hangup-${Date.now()}`;
  await sse(
    server,
    "POST",
    `/v1/agents/sandboxes/${id}/commands/run`,
    { command: `echo go; sleep 3; touch ${marker}`, stream: true },
    { stopWhen: (e) => e.event === "stdout" },
  );
  await new Promise((r) => setTimeout(r, 4000));
  const check = await call<{ exit_code: number }>("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: `test -e ${marker}` });
  assert.equal(check.body.exit_code, 1, "the command went on after its client hung up");
});

test("errors before the run are plain JSON: unknown sandbox, killed sandbox, bad body, bad query", async () => {
  const unknown = await sse(server, "POST", codeRun("nope"), { code: "1", language: "python", stream: true });
  assert.match(unknown.contentType, /^application\/json/);
  assertError({ status: unknown.status, body: unknown.json }, 404, "sandbox_not_found");
  const bad = await sse(server, "POST", codeRun(id), { code: "1", language: "cobol", stream: true });
  assertError({ status: bad.status, body: bad.json }, 400, "invalid_request");
  const doomed = await createSandbox(call);
  assert.equal((await call("DELETE", `/v1/agents/sandboxes/${doomed}`)).status, 200);
  const killed = await sse(server, "POST", codeRun(doomed), { code: "print(1)", language: "python", stream: true });
  assert.match(assertError({ status: killed.status, body: killed.json }, 400, "invalid_state").error.message, /terminated/);
  const cmd = await sse(server, "POST", `/v1/agents/sandboxes/${doomed}/commands/run`, { command: "true", stream: true });
  assert.match(assertError({ status: cmd.status, body: cmd.json }, 400, "invalid_state").error.message, /terminated/);
  const query = await sse(server, "POST", `${codeRun(id)}?stream=maybe`, { code: "1", language: "python" });
  assertError({ status: query.status, body: query.json }, 400, "invalid_request");
});

test("an error during the run is the end event: a timeout", async () => {
  const res = await sse(server, "POST", codeRun(id), {
    code: "print('x', flush=True)\nwhile True: pass",
    language: "python",
    timeout: 1,
    stream: true,
  });
  const end = endOf(res.events);
  assert.match(String(end.error), /timed out|Timeout|KeyboardInterrupt/i);
});

test("the OpenAPI document shows the stream field, the query parameter and the event-stream answer", async () => {
  const res = await call<{ paths: Record<string, Record<string, Record<string, unknown>>> }>("GET", "/openapi.json");
  assert.equal(res.status, 200);
  for (const route of ["/v1/agents/sandboxes/{sandbox_id}/code/run", "/v1/agents/sandboxes/{sandbox_id}/commands/run"]) {
    const op = res.body.paths[route]?.post as {
      parameters: { name: string; in: string }[];
      requestBody: { content: { "application/json": { schema: { properties: Record<string, unknown> } } } };
      responses: Record<string, { content: Record<string, unknown> }>;
    };
    assert.ok(op, route);
    assert.ok(op.requestBody.content["application/json"].schema.properties.stream, `${route}: body field stream`);
    assert.ok(
      op.parameters.some((p) => p.name === "stream" && p.in === "query"),
      `${route}: ?stream`,
    );
    assert.ok(op.responses["200"]?.content["text/event-stream"], `${route}: text/event-stream answer`);
  }
  const stream = res.body.paths["/v1/agents/sandboxes/{sandbox_id}/commands/{pid}/stream"]?.get as {
    responses: Record<string, { content: object }>;
  };
  assert.deepEqual(Object.keys(stream.responses["200"]?.content ?? {}), ["text/event-stream"]);
});
