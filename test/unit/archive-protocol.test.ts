// The snapshot-archive events of the supervisor protocol (src/sandbox/archive-protocol.ts): what a
// sandbox sends is untrusted, so each field is kept only with the right type and unknown statuses
// become errors rather than successes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeEvent, encodeEvent, FrameDecoder } from "../../src/sandbox/protocol.js";

test("an archive answer decodes with its handle, count and message", () => {
  const [event] = new FrameDecoder().push(encodeEvent({ ev: "archive", id: "r1", status: "ok", end: false, handle: 3 }));
  assert.deepEqual(event, { ev: "archive", id: "r1", status: "ok", end: false, handle: 3 });
  assert.deepEqual(
    decodeEvent({ ev: "archive", id: "r2", status: "too_large", end: true, message: "too big", files: 4 }, Buffer.alloc(0)),
    {
      ev: "archive",
      id: "r2",
      status: "too_large",
      end: true,
      files: 4,
      message: "too big",
    },
  );
});

test("mistyped or unknown fields are dropped; an unknown status is an error, never ok", () => {
  const e = decodeEvent({ ev: "archive", id: "r3", status: "great", end: "yes", handle: "7", files: -2, message: 5 }, Buffer.alloc(0));
  assert.deepEqual(e, { ev: "archive", id: "r3", status: "error", end: false });
  assert.equal(decodeEvent({ ev: "archive", status: "ok" }, Buffer.alloc(0)), null, "an answer without its request id is dropped");
  const long = decodeEvent({ ev: "archive", id: "r4", status: "error", end: true, message: "x".repeat(5000) }, Buffer.alloc(0));
  assert.equal(long?.ev === "archive" && long.message?.length, 1000, "messages are capped");
});
