// End to end: the envd methods E2B's JavaScript SDK does not call, as raw Connect requests. The
// polled directory watchers (filesystem.Filesystem/CreateWatcher, GetWatcherEvents,
// RemoveWatcher) are what E2B's Python SDK uses for its synchronous `files.watch_dir` and
// `WatchHandle.get_new_events()`; it cannot be installed here, so these are its requests as it
// sends them: Connect unary calls with the JSON codec, proto3 JSON field names, and its headers.
// process.Process/StreamInput (client streaming) no SDK sends: a Connect client that streams its
// request body (chunked over HTTP/1.1) does.
import assert from "node:assert/strict";
import http from "node:http";
import { before, describe, test } from "node:test";
import { Sandbox } from "e2b";
import { e2bService, filesystemRpc } from "./helpers/e2b.js";

const e2b = e2bService();
const sandboxes = e2b.sandboxes;

interface Event {
  name: string;
  type: string;
}

const rpc = (id: string, method: string, message: unknown) => filesystemRpc(e2b.server, id, method, message);

async function createWatcher(id: string, path: string, recursive = false): Promise<string> {
  const r = await rpc(id, "CreateWatcher", recursive ? { path, recursive } : { path });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(typeof r.body.watcherId, "string");
  return r.body.watcherId as string;
}

/** Asks for the watcher's new events until `want` is among all seen so far (a watch polls: events come late). */
async function until(id: string, watcherId: string, seen: Event[], want: Event): Promise<void> {
  const has = () => seen.some((e) => e.name === want.name && e.type === want.type);
  for (let i = 0; i < 100 && !has(); i++) {
    const r = await rpc(id, "GetWatcherEvents", { watcherId });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    seen.push(...((r.body.events ?? []) as Event[]));
    if (!has()) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(has(), `${want.type} ${want.name} in ${JSON.stringify(seen)}`);
}

describe("polled directory watchers (the Python SDK's watch_dir)", () => {
  let sbx: Sandbox;
  before(async () => {
    sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
  });

  test("create, write and remove after the watcher starts are its events, each told once", async () => {
    await sbx.files.makeDir("watched");
    await sbx.files.write("watched/before.txt", "already here");
    const watcherId = await createWatcher(sbx.sandboxId, "watched");
    const seen: Event[] = [];
    await sbx.files.write("watched/new.txt", "one");
    await until(sbx.sandboxId, watcherId, seen, { name: "new.txt", type: "EVENT_TYPE_CREATE" });
    await sbx.files.write("watched/new.txt", "one and two");
    await until(sbx.sandboxId, watcherId, seen, { name: "new.txt", type: "EVENT_TYPE_WRITE" });
    await sbx.files.remove("watched/new.txt");
    await until(sbx.sandboxId, watcherId, seen, { name: "new.txt", type: "EVENT_TYPE_REMOVE" });
    assert.ok(!seen.some((e) => e.name === "before.txt"), "what was there before the watcher is no event");
    // Counted for new.txt only: a write goes through a temporary `.upload-*.part` file next to its
    // target (renamed into place), which a poll can catch on a busy machine as a create of its own.
    assert.equal(
      seen.filter((e) => e.type === "EVENT_TYPE_CREATE" && e.name === "new.txt").length,
      1,
      `an event is handed out once: ${JSON.stringify(seen)}`,
    );

    // The proto's own field name is taken too; once removed, the watcher is gone.
    assert.deepEqual(await rpc(sbx.sandboxId, "RemoveWatcher", { watcher_id: watcherId }), { status: 200, body: {} });
    const gone = await rpc(sbx.sandboxId, "GetWatcherEvents", { watcherId });
    assert.equal(gone.status, 404);
    assert.equal(gone.body.code, "not_found");
  });

  test("recursive: changes deep in the tree, named by their path under the watched directory", async () => {
    await sbx.files.makeDir("tree/a/b");
    const watcherId = await createWatcher(sbx.sandboxId, "tree", true);
    const seen: Event[] = [];
    await sbx.files.write("tree/a/b/deep.txt", "one");
    await until(sbx.sandboxId, watcherId, seen, { name: "a/b/deep.txt", type: "EVENT_TYPE_CREATE" });
    await sbx.files.makeDir("tree/a/c");
    await until(sbx.sandboxId, watcherId, seen, { name: "a/c", type: "EVENT_TYPE_CREATE" });
    await sbx.files.remove("tree/a/b");
    await until(sbx.sandboxId, watcherId, seen, { name: "a/b/deep.txt", type: "EVENT_TYPE_REMOVE" });
    assert.equal((await rpc(sbx.sandboxId, "RemoveWatcher", { watcherId })).status, 200);
  });

  test("errors: a missing directory, a file, an unknown watcher, another sandbox's watcher", async () => {
    const missing = await rpc(sbx.sandboxId, "CreateWatcher", { path: "no/such/dir" });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, "not_found");
    await sbx.files.write("plain.txt", "x");
    assert.equal((await rpc(sbx.sandboxId, "CreateWatcher", { path: "plain.txt" })).body.code, "invalid_argument");
    assert.equal((await rpc(sbx.sandboxId, "GetWatcherEvents", { watcherId: "nope" })).body.code, "not_found");
    assert.equal((await rpc(sbx.sandboxId, "GetWatcherEvents", {})).body.code, "invalid_argument");

    const other = await Sandbox.create();
    sandboxes.push(other.sandboxId);
    const watcherId = await createWatcher(sbx.sandboxId, "/home/user");
    const elsewhere = await rpc(other.sandboxId, "GetWatcherEvents", { watcherId });
    assert.equal(elsewhere.status, 404, "a watcher belongs to its sandbox");
    assert.equal((await rpc(other.sandboxId, "RemoveWatcher", { watcherId })).status, 404);
    assert.equal((await rpc(sbx.sandboxId, "RemoveWatcher", { watcherId })).status, 200);
  });

  test("polled and streamed watches share AGENTBOX_E2B_MAX_WATCHERS (8) per sandbox; a removed one frees its place", async () => {
    const box = await Sandbox.create();
    sandboxes.push(box.sandboxId);
    const streamed = await box.files.watchDir("/home/user", () => {});
    const polled: string[] = [];
    try {
      for (let i = 0; i < 7; i++) polled.push(await createWatcher(box.sandboxId, "/home/user"));
      const refused = await rpc(box.sandboxId, "CreateWatcher", { path: "/home/user" });
      assert.equal(refused.status, 429);
      assert.equal(refused.body.code, "resource_exhausted");
      assert.equal((await rpc(box.sandboxId, "RemoveWatcher", { watcherId: polled.pop() })).status, 200);
      let again: { status: number; body: Record<string, unknown> } | undefined;
      for (let i = 0; i < 50 && again?.status !== 200; i++) {
        again = await rpc(box.sandboxId, "CreateWatcher", { path: "/home/user" });
        if (again.status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(again?.status, 200, "a place is free again once a watcher is removed");
      polled.push(again?.body.watcherId as string);
    } finally {
      await streamed.stop();
      for (const watcherId of polled) await rpc(box.sandboxId, "RemoveWatcher", { watcherId });
    }
  });

  test("a watcher lives through a pause: no events while paused, the changes after the resume are seen", async () => {
    const box = await Sandbox.create();
    sandboxes.push(box.sandboxId);
    const watcherId = await createWatcher(box.sandboxId, "/home/user");
    assert.equal(await box.pause(), true);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const whilePaused = await rpc(box.sandboxId, "GetWatcherEvents", { watcherId });
    assert.deepEqual(whilePaused, { status: 200, body: { events: [] } });
    const resumed = await Sandbox.connect(box.sandboxId);
    await resumed.files.write("after-resume.txt", "x");
    await until(box.sandboxId, watcherId, [], { name: "after-resume.txt", type: "EVENT_TYPE_CREATE" });
    assert.equal((await rpc(box.sandboxId, "RemoveWatcher", { watcherId })).status, 200);
  });
});

/** A Connect envelope around one JSON message (flags 0). */
function envelope(message: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

/** The enveloped JSON messages of a Connect streaming response: [flags, message]. */
function envelopes(buf: Buffer): [number, Record<string, unknown>][] {
  const out: [number, Record<string, unknown>][] = [];
  for (let off = 0; off + 5 <= buf.length; ) {
    const len = buf.readUInt32BE(off + 1);
    out.push([buf.readUInt8(off), JSON.parse(buf.subarray(off + 5, off + 5 + len).toString())]);
    off += 5 + len;
  }
  return out;
}

/** An open StreamInput call over HTTP/1.1 (chunked request body): send messages, then end it for the answer. */
function streamInput(sandboxId: string) {
  const url = new URL(`${e2b.server.url}/e2b/process.Process/StreamInput`);
  const req = http.request(url, {
    method: "POST",
    headers: {
      "content-type": "application/connect+json",
      "connect-protocol-version": "1",
      "x-access-token": e2b.server.key,
      "e2b-sandbox-id": sandboxId,
    },
  });
  const answer = new Promise<{ status: number; messages: [number, Record<string, unknown>][] }>((resolve, reject) => {
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, messages: envelopes(Buffer.concat(chunks)) }));
    });
    req.on("error", reject);
  });
  req.flushHeaders();
  const write = (bytes: Buffer) => new Promise<void>((resolve, reject) => req.write(bytes, (err) => (err ? reject(err) : resolve())));
  return {
    send: (message: unknown) => write(envelope(message)),
    /** Writes raw bytes (a part of an envelope). */
    write,
    end: async () => {
      req.end();
      return answer;
    },
  };
}

/** The Connect error code an end-of-stream envelope carries. */
const errorCode = (m: [number, Record<string, unknown>] | undefined) => (m?.[1].error as { code?: string } | undefined)?.code;

const b64 = (text: string) => Buffer.from(text).toString("base64");

describe("process.Process/StreamInput (client streaming)", () => {
  let sbx: Sandbox;
  before(async () => {
    sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
  });

  test("each input message reaches the process as it arrives, before the client's stream ends", async () => {
    const cat = await sbx.commands.run("cat", { background: true, stdin: true, timeoutMs: 0 });
    const call = streamInput(sbx.sandboxId);
    await call.send({ start: { process: { pid: cat.pid } } });
    await call.send({ data: { input: { stdin: b64("hello\n") } } });
    for (let i = 0; i < 100 && !cat.stdout.includes("hello"); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(cat.stdout, "hello\n", "the first input is written while the stream is still open");
    await call.send({ keepalive: {} });
    await call.send({ data: { input: { stdin: b64("world\n") } } });
    const answer = await call.end();
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.messages, [
      [0, {}],
      [2, {}],
    ]);
    for (let i = 0; i < 100 && !cat.stdout.includes("world"); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(cat.stdout, "hello\nworld\n");
    await cat.kill();
  });

  test("errors end the stream: no start first, an unknown process", async () => {
    const noStart = streamInput(sbx.sandboxId);
    await noStart.send({ data: { input: { stdin: b64("x") } } });
    const a = await noStart.end();
    assert.equal(a.messages.length, 1, JSON.stringify(a.messages));
    assert.equal(a.messages[0]?.[0], 2);
    assert.equal(errorCode(a.messages[0]), "invalid_argument");

    const unknown = streamInput(sbx.sandboxId);
    await unknown.send({ start: { process: { pid: 999999 } } });
    const b = await unknown.end();
    assert.equal(errorCode(b.messages[0]), "not_found");
  });

  test("slow streams that send a large message in small pieces do not starve other requests", async () => {
    // Each piece of an incomplete message used to re-copy all of it: four streams dripping a 6 MiB
    // message in 2 KiB pieces kept the event loop busy for seconds. Now a piece costs the same
    // whatever came before it, and other requests stay fast (a generous bound: the machine is busy).
    const cat = await sbx.commands.run("cat", { background: true, stdin: true, timeoutMs: 0 });
    const message = envelope({ keepalive: {}, pad: "x".repeat(6 * 2 ** 20) });
    const streams = Array.from({ length: 4 }, () => streamInput(sbx.sandboxId));
    for (const s of streams) await s.send({ start: { process: { pid: cat.pid } } });
    let sending = true;
    const latencies: number[] = [];
    const probe = (async () => {
      while (sending) {
        const t0 = performance.now();
        const res = await fetch(`${e2b.server.url}/health`);
        await res.arrayBuffer();
        latencies.push(performance.now() - t0);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const started = performance.now();
    const answers = await Promise.all(
      streams.map(async (s) => {
        for (let off = 0; off < message.length; off += 2048) {
          await s.write(message.subarray(off, off + 2048));
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        return s.end();
      }),
    );
    sending = false;
    await probe;
    for (const a of answers)
      assert.deepEqual(
        a.messages,
        [
          [0, {}],
          [2, {}],
        ],
        JSON.stringify(a.messages).slice(0, 300),
      );
    const worst = Math.max(...latencies);
    assert.ok(latencies.length >= 3, `probed ${latencies.length} times in ${Math.round(performance.now() - started)} ms`);
    assert.ok(worst < 2000, `another request took ${Math.round(worst)} ms while the streams dripped (${latencies.length} probes)`);
    await cat.kill();
  });
});
