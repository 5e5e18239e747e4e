// End to end: background processes started by commands/run `background: true` — a server reachable
// from later commands, listed, read, followed as server-sent events, written to through stdin,
// signalled and gone; bounded in number, stdin size and retained output; every bad request a clear 4xx.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { BackgroundOutput as ProcOutput, BackgroundProcess as Proc } from "../src/sandbox/background.js";
import { assertError, createSandbox } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { type SseEvent, sse } from "./helpers/sse.js";

const MAX_PROCS = 3;
const MAX_STDIN = 4096;
const RETAINED = 64 * 1024;

let server: TestServer;
let call: ReturnType<typeof client>;
let id: string;

before(async () => {
  server = await startServer({
    env: {
      AGENTBOX_MAX_BACKGROUND_PROCESSES: String(MAX_PROCS),
      AGENTBOX_MAX_STDIN_BYTES: String(MAX_STDIN),
      AGENTBOX_BACKGROUND_OUTPUT_BYTES: String(RETAINED),
    },
  });
  call = client(server);
  id = await createSandbox(call);
});

after(async () => {
  await server?.dispose();
});

const base = (sandbox = id) => `/v1/agents/sandboxes/${sandbox}/commands`;

async function start(command: string, args?: string[], sandbox = id): Promise<Proc> {
  const res = await call<Proc>("POST", `${base(sandbox)}/run`, { command, args, background: true });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ["args", "command", "pid", "started_at"]);
  assert.ok(Number.isInteger(res.body.pid) && res.body.pid > 1);
  assert.ok(!Number.isNaN(Date.parse(res.body.started_at)));
  return res.body;
}

const get = async (pid: number, sandbox = id) => {
  const res = await call<ProcOutput>("GET", `${base(sandbox)}/${pid}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
};

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const run = (command: string) => call<{ stdout: string; exit_code: number }>("POST", `${base()}/run`, { command });

test("a background http.server answers later commands, is listed, read, followed, signalled and gone", async () => {
  const p = await start("python3 -m http.server 8000 --bind 127.0.0.1", []);
  const fetchPage = `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8000/').status)"`;
  await until("the server to answer", async () => {
    const r = await run(fetchPage);
    return r.body.exit_code === 0 && r.body.stdout.trim() === "200" ? true : undefined;
  });
  const list = await call<{ commands: Proc[] }>("GET", base());
  assert.equal(list.status, 200);
  const listed = list.body.commands.find((c) => c.pid === p.pid);
  assert.ok(listed, JSON.stringify(list.body));
  assert.deepEqual(Object.keys(listed).sort(), ["args", "command", "ended_at", "exit_code", "pid", "started_at", "status"]);
  assert.equal(listed.status, "running");
  assert.equal(listed.exit_code, null);
  assert.equal(listed.command, "python3 -m http.server 8000 --bind 127.0.0.1");
  // The server logs each request on stderr: what it logged so far is readable.
  const seen = await get(p.pid);
  assert.match(seen.stderr, /"GET \/ HTTP\/1\.1" 200/);
  assert.equal(seen.stderr_truncated, false);

  // Follow: the retained output first, then a live request's log line, then TERM ends the stream.
  let signalled = false;
  const followed = sse(server, "GET", `${base()}/${p.pid}/stream`, undefined, {
    stopWhen: () => false,
  });
  await new Promise((r) => setTimeout(r, 300));
  const live = await run(`python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/live-marker')" ; true`);
  assert.equal(live.status, 200);
  await until("the live request in the output", async () => ((await get(p.pid)).stderr.includes("live-marker") ? true : undefined));
  const del = await call<{ message: string; pid: number }>("DELETE", `${base()}/${p.pid}?signal=TERM`);
  assert.equal(del.status, 200);
  assert.equal(del.body.pid, p.pid);
  assert.match(del.body.message, /SIGTERM/);
  signalled = true;
  const res = await followed;
  assert.ok(signalled);
  assert.match(res.contentType, /^text\/event-stream/);
  const text = res.events
    .filter((e) => e.event === "stderr")
    .map((e) => (e.data as { text: string }).text)
    .join("");
  assert.ok(text.indexOf("GET / HTTP") >= 0 && text.indexOf("GET / HTTP") < text.indexOf("live-marker"), text);
  const end = res.events.at(-1) as SseEvent;
  assert.equal(end.event, "end");
  assert.equal((end.data as { pid: number }).pid, p.pid);
  assert.equal((end.data as { exit_code: number }).exit_code, 128 + 15);

  const gone = await get(p.pid);
  assert.equal(gone.status, "exited");
  assert.equal(gone.exit_code, 143);
  assert.ok(gone.ended_at !== null && Date.parse(gone.ended_at) >= Date.parse(gone.started_at));
  const after = await run(fetchPage);
  assert.notEqual(after.body.exit_code, 0, "the server still answers after SIGTERM");
});

test("stdin reaches a background process and its echo is read back; eof ends it", async () => {
  const p = await start('python3 -u -c \'import sys\nfor line in sys.stdin: print("echo:" + line.strip())\nprint("bye")\'');
  const w = await call<{ message: string; pid: number }>("POST", `${base()}/${p.pid}/stdin`, { data: "hello\nworld\n" });
  assert.equal(w.status, 200, JSON.stringify(w.body));
  assert.equal(w.body.pid, p.pid);
  const out = await until("the echo", async () => {
    const s = await get(p.pid);
    return s.stdout.includes("echo:world") ? s.stdout : undefined;
  });
  assert.equal(out, "echo:hello\necho:world\n");
  assert.equal((await call("POST", `${base()}/${p.pid}/stdin`, { data: "last\n", eof: true })).status, 200);
  const done = await until("the exit", async () => {
    const s = await get(p.pid);
    return s.status === "exited" ? s : undefined;
  });
  assert.equal(done.exit_code, 0);
  assert.equal(done.stdout, "echo:hello\necho:world\necho:last\nbye\n");
  // A finished process's stream replays its output and ends at once.
  const replay = await sse(server, "GET", `${base()}/${p.pid}/stream`);
  assert.equal(
    replay.events
      .filter((e) => e.event === "stdout")
      .map((e) => (e.data as { text: string }).text)
      .join(""),
    done.stdout,
  );
  assert.deepEqual(replay.events.at(-1)?.data, { pid: p.pid, exit_code: 0 });
  const closed = await call("POST", `${base()}/${p.pid}/stdin`, { data: "more" });
  assertError(closed, 400, "invalid_state");
});

test("only the latest output is retained, marked as truncated", async () => {
  const p = await start(`python3 -c "import sys; sys.stdout.write('a' * ${RETAINED} + 'THE-END')"`);
  const s = await until("the exit", async () => {
    const o = await get(p.pid);
    return o.status === "exited" ? o : undefined;
  });
  assert.equal(s.stdout.length, RETAINED);
  assert.ok(s.stdout.endsWith("THE-END"));
  assert.equal(s.stdout_truncated, true);
  assert.equal(s.stderr_truncated, false);
});

test("bad requests: unknown pid, unknown signal, stdin over the limit, too many processes, a killed sandbox", async () => {
  assertError(await call("GET", `${base()}/999999`), 404, "process_not_found");
  assertError(await call("DELETE", `${base()}/999999`), 404, "process_not_found");
  assertError(await call("POST", `${base()}/999999/stdin`, { data: "x" }), 404, "process_not_found");
  const stream = await sse(server, "GET", `${base()}/999999/stream`);
  assertError({ status: stream.status, body: stream.json }, 404, "process_not_found");
  assertError(await call("GET", `${base()}/abc`), 400, "invalid_request");

  const other = await createSandbox(call);
  const procs: Proc[] = [];
  for (let i = 0; i < MAX_PROCS; i++) procs.push(await start("sleep 300", [], other));
  const first = procs[0] as Proc;
  assertError(await call("DELETE", `${base(other)}/${first.pid}?signal=STOP`), 400, "invalid_request");
  assertError(await call("POST", `${base(other)}/${first.pid}/stdin`, { data: "x".repeat(MAX_STDIN + 1) }), 413, "payload_too_large");
  const over = await call("POST", `${base(other)}/run`, { command: "sleep 300", background: true });
  assertError(over, 429, "quota_exceeded");
  // Default signal KILL frees a place.
  const killed = await call<{ message: string }>("DELETE", `${base(other)}/${first.pid}`);
  assert.equal(killed.status, 200);
  assert.match(killed.body.message, /SIGKILL/);
  await until("the kill", async () => ((await get(first.pid, other)).status === "exited" ? true : undefined));
  assert.equal((await get(first.pid, other)).exit_code, 137);
  await start("sleep 300", [], other);

  // The processes end with their sandbox; asking about them afterwards is a clear 4xx.
  assert.equal((await call("DELETE", `/v1/agents/sandboxes/${other}`)).status, 200);
  assertError(await call("GET", base(other)), 400, "invalid_state");
  const dead = await sse(server, "GET", `${base(other)}/${first.pid}/stream`);
  assertError({ status: dead.status, body: dead.json }, 400, "invalid_state");
});
