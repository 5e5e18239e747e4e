// The supervisor protocol (src/sandbox/protocol.ts): requests encode to the framing the supervisor
// reads, frames from a sandbox decode the same however the bytes are split, and what is oversized,
// malformed or mistyped is refused or dropped rather than trusted.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeEvent, encodeEvent, encodeRequest, type Event, FrameDecoder, MAX_FRAME, ProtocolError } from "../../src/sandbox/protocol.js";

/** The frame the way the supervisor parses it: u32 total, u32 header length, header, body. */
function parse(frame: Buffer): { header: unknown; body: Buffer } {
  const total = frame.readUInt32BE(0);
  const hlen = frame.readUInt32BE(4);
  assert.equal(frame.length, 4 + total);
  return { header: JSON.parse(frame.subarray(8, 8 + hlen).toString()), body: frame.subarray(8 + hlen) };
}

test("a request encodes as prefix, JSON header with its id, and the body uncopied", () => {
  const body = Buffer.from("print(1)");
  const parts = encodeRequest(
    "r7",
    { op: "run", kernel: "python", lang: "python", kind: "python", timeout_ms: 1000, output_cap: 10, async: false },
    body,
  );
  assert.equal(parts.length, 1, "a small body travels in the frame's one buffer");
  const { header, body: got } = parse(Buffer.concat(parts));
  assert.deepEqual(header, {
    op: "run",
    kernel: "python",
    lang: "python",
    kind: "python",
    timeout_ms: 1000,
    output_cap: 10,
    async: false,
    id: "r7",
  });
  assert.equal(got.toString(), "print(1)");
  const bare = encodeRequest("r8", { op: "stats" });
  assert.equal(bare.length, 1);
  assert.deepEqual(parse(Buffer.concat(bare)).header, { op: "stats", id: "r8" });
});

test("a large body is not copied: it follows the header as its own buffer", () => {
  const body = Buffer.alloc(2 ** 20, 3);
  const parts = encodeRequest("r9", { op: "write_chunk", handle: 4 }, body);
  assert.equal(parts.length, 2);
  assert.equal(parts[1], body);
  const { header, body: got } = parse(Buffer.concat(parts));
  assert.deepEqual(header, { op: "write_chunk", handle: 4, id: "r9" });
  assert.ok(got.equals(body));
});

test("a request over the frame limit is never encoded", () => {
  assert.throws(() => encodeRequest("r1", { op: "write_chunk", handle: 1 }, Buffer.alloc(MAX_FRAME)), ProtocolError);
});

/** A chunk event with its pieces joined: how a download is split into pieces depends on the reads. */
const joined = (e: Event) => (e.ev === "chunk" ? { ...e, parts: [Buffer.concat(e.parts)] } : e);

test("frames decode the same whether they arrive whole, byte by byte or glued together", () => {
  const frames = [
    encodeEvent({ ev: "ready", pid: 2 }),
    encodeEvent({ ev: "out", id: "r1", stream: 2 }, Buffer.from("err\n")),
    encodeEvent({ ev: "chunk", id: "r2" }, Buffer.alloc(3000, 7)),
    encodeEvent({ ev: "done", id: "r1", error: null, rc: null, state_lost: false, timed_out: false, exec_ms: 3 }),
  ];
  const all = Buffer.concat(frames);
  const whole = new FrameDecoder().push(all);
  assert.deepEqual(
    whole.map((e) => e.ev),
    ["ready", "out", "chunk", "done"],
  );
  for (const step of [1, 7, 13, 4096]) {
    const d = new FrameDecoder();
    const got: Event[] = [];
    for (let i = 0; i < all.length; i += step) got.push(...d.push(all.subarray(i, i + step)));
    assert.deepEqual(got.map(joined), whole.map(joined), `split every ${step} bytes`);
    assert.equal(d.buffered, 0);
  }
  assert.deepEqual(whole[3], { ev: "done", id: "r1", state_lost: false, timed_out: false, exec_ms: 3 });
  const chunk = whole[2] as Extract<Event, { ev: "chunk" }>;
  assert.equal(chunk.size, 3000);
  assert.ok(Buffer.concat(chunk.parts).equals(Buffer.alloc(3000, 7)));
});

test("an oversized or malformed frame from a sandbox is a protocol error", () => {
  const huge = Buffer.alloc(8);
  huge.writeUInt32BE(MAX_FRAME + 1, 0);
  huge.writeUInt32BE(10, 4);
  assert.throws(() => new FrameDecoder().push(huge), /exceeds the limit/);
  const badHeaderLen = Buffer.alloc(8);
  badHeaderLen.writeUInt32BE(10, 0);
  badHeaderLen.writeUInt32BE(20, 4);
  assert.throws(() => new FrameDecoder().push(badHeaderLen), ProtocolError);
  const notJson = Buffer.concat([Buffer.from([0, 0, 0, 7, 0, 0, 0, 3]), Buffer.from("{{{")]);
  assert.throws(() => new FrameDecoder().push(notJson), /not JSON/);
  assert.throws(() => new FrameDecoder().push(encodeEvent([1, 2] as unknown as Record<string, unknown>)), /not an object/);
});

test("fields of the wrong type are left out; unknown events and events without an id are dropped", () => {
  assert.deepEqual(decodeEvent({ ev: "exit", id: "r1", exit_status: "0", timed_out: 1, bad_cwd: "/x" }, Buffer.alloc(0)), {
    ev: "exit",
    id: "r1",
    bad_cwd: "/x",
  });
  assert.equal(decodeEvent({ ev: "out", stream: 1 }, Buffer.alloc(0)), null);
  assert.equal(decodeEvent({ ev: "surprise", id: "r1" }, Buffer.alloc(0)), null);
  assert.deepEqual(decodeEvent({ ev: "file", id: "r2", status: "weird" }, Buffer.alloc(0)), { ev: "file", id: "r2", status: "invalid" });
  assert.deepEqual(decodeEvent({ ev: "stats", id: "r3", disk_read: -5, network_rx: "x", disk_write: 9 }, Buffer.alloc(0)), {
    ev: "stats",
    id: "r3",
    disk_read: 0,
    disk_write: 9,
    network_rx: 0,
    network_tx: 0,
  });
  const listing = decodeEvent(
    {
      ev: "file",
      id: "r4",
      status: "ok",
      files: [{ name: "a", path: "/a", size: 1, is_dir: false, modified_at: "t", mode: "-rw" }, { name: 3 }, null],
    },
    Buffer.alloc(0),
  );
  assert.deepEqual(listing, {
    ev: "file",
    id: "r4",
    status: "ok",
    files: [{ name: "a", path: "/a", size: 1, is_dir: false, modified_at: "t", mode: "-rw" }],
  });
});

test("a rich result keeps only known representations of the right type", () => {
  const body = Buffer.from(JSON.stringify({ text: "41", html: 5, png: "iVBO", json: { a: 1 }, is_main_result: true, evil: "x" }));
  assert.deepEqual(decodeEvent({ ev: "result", id: "r1" }, body), {
    ev: "result",
    id: "r1",
    result: { text: "41", png: "iVBO", json: { a: 1 }, is_main_result: true },
    bytes: body.length,
  });
  assert.equal(decodeEvent({ ev: "result", id: "r1" }, Buffer.from("not json")), null);
  assert.equal(decodeEvent({ ev: "result", id: "r1" }, Buffer.from("[1]")), null);
  assert.deepEqual(decodeEvent({ ev: "result", id: "r1", too_large: 99 }, Buffer.alloc(0)), { ev: "result", id: "r1", bytes: 99 });
});
