// The enveloped messages of an E2B StreamInput body (src/e2b/envelopes.ts): however a client cuts
// its bytes, each byte is copied at most once, a message in too many pieces is refused, and bad
// envelopes are client errors, never a crash.
import assert from "node:assert/strict";
import { test } from "node:test";
import { clientMessages, PieceQueue } from "../../src/e2b/envelopes.js";
import { ApiError } from "../../src/errors.js";

function envelope(message: unknown, flags = 0): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let off = 0; off < bytes.length; off += size) yield bytes.subarray(off, off + size);
}

async function collect(body: AsyncIterable<Buffer>, limits = { maxMessage: 8 * 2 ** 20, maxPieces: 16_384 }, queue = new PieceQueue()) {
  const out: Record<string, unknown>[] = [];
  for await (const m of clientMessages(body, limits, queue)) out.push(m);
  return out;
}

test("messages cut anywhere arrive whole and in order", async () => {
  const bytes = Buffer.concat([envelope({ a: 1 }), envelope({ b: "two" }), envelope(null), envelope({ c: [3] })]);
  for (const size of [1, 2, 3, 5, 7, 64]) assert.deepEqual(await collect(pieces(bytes, size)), [{ a: 1 }, { b: "two" }, {}, { c: [3] }]);
});

test("an 8 MiB message in 512-byte pieces copies each byte at most once", async () => {
  const message = envelope({ pad: "x".repeat(8 * 2 ** 20 - 20) });
  const queue = new PieceQueue();
  const t0 = performance.now();
  const [m] = await collect(pieces(message, 512), undefined, queue);
  assert.equal(String(m?.pad).length, 8 * 2 ** 20 - 20);
  assert.ok(queue.copied <= message.length, `copied ${queue.copied} bytes for a message of ${message.length}`);
  // Linear work: well under a second here; re-copying the whole buffer per piece took minutes.
  assert.ok(performance.now() - t0 < 10_000);
});

test("a message in more pieces than allowed is refused before it is whole", async () => {
  const message = envelope({ pad: "x".repeat(10_000) });
  await assert.rejects(collect(pieces(message, 1), { maxMessage: 2 ** 20, maxPieces: 1000 }), (err: ApiError) => {
    assert.equal(err.code, "invalid_request");
    assert.match(err.message, /pieces/);
    return true;
  });
});

test("bad envelopes are client errors", async () => {
  const cases: [Buffer, string][] = [
    [envelope({ a: 1 }, 2), "invalid_request"],
    [envelope({ a: 1 }, 1), "invalid_request"],
    [Buffer.concat([Buffer.from([0, 0, 0, 0, 3]), Buffer.from("{x}")]), "invalid_request"],
    [envelope([1, 2]), "invalid_request"],
    [envelope("text"), "invalid_request"],
    [Buffer.from([0, 0xff, 0xff, 0xff, 0xff]), "payload_too_large"],
    [envelope({ a: 1 }).subarray(0, 8), "invalid_request"],
  ];
  for (const [bytes, code] of cases)
    await assert.rejects(collect(pieces(bytes, 3)), (err: ApiError) => err instanceof ApiError && err.code === code, bytes.toString("hex"));
});
