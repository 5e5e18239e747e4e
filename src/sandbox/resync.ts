// Puts the stream of a supervisor adopted from an earlier API process back in step (see
// ./host-main.ts). That process may have died in the middle of reading a frame, and the
// supervisor may still be answering its requests; neither is of use to the new one. So a ping goes
// out with a random id, and everything read is dropped up to the frame that answers it: its prefix
// is found by its shape (the length fields, a JSON header naming the id) before the id's bytes.
// The id is random, so no earlier answer or output can hold it by chance, and user code cannot
// guess it. What is left after that frame starts a frame boundary.
import crypto from "node:crypto";
import type net from "node:net";
import { encodeRequest, MAX_FRAME, MAX_HEADER } from "./protocol.js";

/** The furthest the frame's start may be before the id: the prefix and the header's first fields. */
const LOOK_BACK = 4096;

/** Where the frame whose JSON header holds `needle` (at `at`) starts in `buf`, and its end; undefined if it is not all here or not found. */
function frameAround(buf: Buffer, at: number, needle: Buffer, marker: string): { start: number; end: number } | "wait" | undefined {
  for (let p = at - 8; p >= Math.max(0, at - 8 - LOOK_BACK); p--) {
    if (buf[p + 8] !== 0x7b) continue; // "{"
    const total = buf.readUInt32BE(p);
    const hlen = buf.readUInt32BE(p + 4);
    if (total > MAX_FRAME || hlen > MAX_HEADER || hlen > total - 4 || p + 8 + hlen < at + needle.length) continue;
    if (p + 8 + hlen > buf.length) return "wait";
    try {
      const header = JSON.parse(buf.subarray(p + 8, p + 8 + hlen).toString("utf8")) as { id?: unknown };
      if (header.id !== marker) continue;
    } catch {
      continue;
    }
    return p + 4 + total > buf.length ? "wait" : { start: p, end: p + 4 + total };
  }
  return undefined;
}

/**
 * Sends the resync ping on `socket` and reads until its answer; resolves with the bytes read after
 * it (the socket is left paused, with no listener of this module's), rejects after `timeoutMs`.
 */
export function resync(socket: net.Socket, timeoutMs: number): Promise<Buffer> {
  const marker = `~resync.${crypto.randomBytes(12).toString("hex")}`;
  const needle = Buffer.from(JSON.stringify(marker));
  return new Promise<Buffer>((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0);
    const finish = (err?: Error, rest?: Buffer) => {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("close", onClose);
      socket.pause();
      if (err) reject(err);
      else resolve(rest ?? Buffer.alloc(0));
    };
    const onData = (chunk: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      const at = buf.indexOf(needle);
      if (at < 0) {
        // Only the tail can still hold the start of the answer.
        const keep = needle.length + LOOK_BACK + 8;
        if (buf.length > keep * 2) buf = buf.subarray(buf.length - keep);
        return;
      }
      const frame = frameAround(buf, at, needle, marker);
      if (frame === "wait") return;
      if (frame === undefined) {
        // The id's bytes, but not in a frame of the answer's shape: keep looking after them.
        buf = buf.subarray(at + needle.length);
        return;
      }
      finish(undefined, buf.subarray(frame.end));
    };
    const onClose = () => finish(new Error("the sandbox's stream closed during its resync"));
    const timer = setTimeout(() => finish(new Error("the sandbox did not answer its resync in time")), timeoutMs);
    socket.on("data", onData);
    socket.once("close", onClose);
    socket.on("error", () => {});
    for (const part of encodeRequest(marker, { op: "ping" })) socket.write(part);
    socket.resume();
  });
}
