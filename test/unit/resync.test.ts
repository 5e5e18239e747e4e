// The resync of a supervisor stream taken over from a dead API process (src/sandbox/resync.ts): a
// stand-in supervisor answers the ping after the rest of a frame the old process had started to
// read, answers to the old process's requests and output that mimics the answer's shape; what is
// left after the answer's frame starts exactly at a frame boundary.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { encodeEvent, FrameDecoder } from "../../src/sandbox/protocol.js";
import { resync } from "../../src/sandbox/resync.js";

/** A connected pair: [the service's end, the stand-in supervisor's end]. */
async function pair(): Promise<[net.Socket, net.Socket, () => void]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "resync-"));
  const file = path.join(dir, "s");
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(file, r));
  const accepted = new Promise<net.Socket>((r) => server.once("connection", r));
  const client = net.connect(file);
  await new Promise((r) => client.once("connect", r));
  const other = await accepted;
  return [
    client,
    other,
    () => {
      client.destroy();
      other.destroy();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  ];
}

/** The id of the ping the supervisor is sent (read from the request frame). */
function readPing(sock: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    sock.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length < 8) return;
      const total = buf.readUInt32BE(0);
      const hlen = buf.readUInt32BE(4);
      if (buf.length < 4 + total) return;
      const header = JSON.parse(buf.subarray(8, 8 + hlen).toString()) as { op: string; id: string };
      assert.equal(header.op, "ping");
      resolve(header.id);
    });
  });
}

test("the answer is found after a cut frame, stale answers and look-alike output; what follows is whole frames", async () => {
  const [service, supervisor, done] = await pair();
  try {
    const pending = resync(service, 5000);
    const id = await readPing(supervisor);
    const stale = encodeEvent({ ev: "out", id: "r41", stream: 1 }, Buffer.from(`{"ev": "ok", "id": "~resync.0"}`));
    // The tail of a frame the dead process had started to read, stale frames, then the answer and one more.
    supervisor.write(Buffer.concat([stale.subarray(5), encodeEvent({ ev: "ok", id: "r42" }), stale]));
    // Output holding the id itself (which code in a sandbox cannot know): not a frame of the answer's shape.
    supervisor.write(encodeEvent({ ev: "out", id: "r43", stream: 1 }, Buffer.from(`{"ev": "ok", "id": ${JSON.stringify(id)}}`)));
    const answer = encodeEvent({ ev: "ok", id });
    const after = encodeEvent({ ev: "ok", id: "rab.1" });
    // Split across writes, in the middle of the answer's prefix.
    supervisor.write(answer.subarray(0, 3));
    await new Promise((r) => setTimeout(r, 20));
    supervisor.write(Buffer.concat([answer.subarray(3), after]));
    const rest = await pending;
    // The rest may come later on the socket, too: read what resync left, then the socket.
    const decoder = new FrameDecoder();
    const events = decoder.push(rest);
    if (events.length === 0) {
      service.resume();
      const chunk = await new Promise<Buffer>((r) => service.once("data", r));
      events.push(...decoder.push(chunk));
    }
    assert.deepEqual(
      events.map((e) => ("id" in e ? e.id : e.ev)),
      ["rab.1"],
    );
  } finally {
    done();
  }
});

test("no answer within the deadline rejects (the caller restarts the sandbox)", async () => {
  const [service, , done] = await pair();
  try {
    await assert.rejects(resync(service, 200), /did not answer/);
  } finally {
    done();
  }
});
