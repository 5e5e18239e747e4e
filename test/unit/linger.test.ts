// The lingering close of an answer sent before its request body was read (bounds.ts), on a real
// loopback socket with short bounds: a client that keeps sending steadily past the time bound is
// read to its end and never sees a reset (eight uploads refused at once on a busy host were cut
// at 30 s and their client reported a broken pipe instead of the 503); a slow drip is still closed
// soon after the time bound.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { Writable } from "node:stream";
import { after, before, test } from "node:test";
import { lingerBeforeClose } from "../../src/api/bounds.js";

const KIB = 1024;
/** Short bounds: past 300 ms a client must keep 512 KiB/s on average. */
const LIMITS = { maxBytes: 64 * 2 ** 20, maxMs: 300, minBytesPerS: 512 * KIB, idleMs: 2_000, checkMs: 25 };

let server: http.Server;
let port: number;

before(async () => {
  server = http.createServer((req, res) => {
    // Refused before the body is read, as a 413 or a 503 of an upload is.
    if (req.url === "/parsed") {
      // A body parser that took the body and let go of it (a multipart parser unpipes it when it
      // gives up), which leaves the request paused: nothing reads the socket unless the close does.
      const sink = new Writable({ write: (_chunk, _enc, done) => done() });
      req.pipe(sink);
      req.unpipe(sink);
    }
    res.setHeader("connection", "close");
    lingerBeforeClose(req.socket, req, LIMITS);
    res.end("refused");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});

after(() => new Promise<void>((r) => server.close(() => r())));

/** Sends a body of `pieces` pieces of `size` bytes, one every `everyMs`; what the client saw. */
function send(
  pieces: number,
  size: number,
  everyMs: number,
  path = "/upload",
): Promise<{ answer: string; error?: string; sent: number; ms: number }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    // Half-open, as an HTTP client still sending its body is after the answer's FIN.
    const sock = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    let answer = "";
    let sent = 0;
    let error: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    sock.on("data", (d) => {
      answer += d.toString("latin1");
    });
    sock.on("error", (err: NodeJS.ErrnoException) => {
      error = err.code ?? err.message;
    });
    sock.on("close", () => {
      clearInterval(timer);
      resolve({ answer, error, sent, ms: Date.now() - t0 });
    });
    sock.write(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${pieces * size}\r\n\r\n`);
    const piece = Buffer.alloc(size, 0x61);
    timer = setInterval(() => {
      if (sock.destroyed) return;
      sock.write(piece);
      sent += 1;
      if (sent === pieces) {
        clearInterval(timer);
        sock.end();
      }
    }, everyMs);
  });
}

test("a client that keeps sending past the time bound is read to its end and gets the answer, no reset", async () => {
  // 64 KiB every 20 ms (~3 MiB/s) for ~1.5 s: five times the time bound, well above the rate.
  const r = await send(75, 64 * KIB, 20);
  assert.equal(r.error, undefined, `the client saw ${r.error} after ${r.ms} ms, ${r.sent} pieces sent`);
  assert.equal(r.sent, 75);
  assert.match(r.answer, /^HTTP\/1\.1 200 OK[\s\S]*refused$/);
});

test("a slow drip is closed soon after the time bound", async () => {
  // 1 KiB every 20 ms (~50 KiB/s) for 4 s: under the rate, closed after ~300 ms.
  const r = await send(200, KIB, 20);
  assert.ok(r.sent < 100, `${r.sent} pieces were read from a slow drip (${r.ms} ms)`);
  assert.ok(r.ms < 2_000, `closed after ${r.ms} ms`);
  assert.match(r.answer, /refused/);
});

test("a request its body parser let go of (paused) is still read to its end: the client gets the answer, no reset", async () => {
  const r = await send(75, 64 * KIB, 20, "/parsed");
  assert.equal(r.error, undefined, `the client saw ${r.error} after ${r.ms} ms, ${r.sent} pieces sent`);
  assert.equal(r.sent, 75);
  assert.match(r.answer, /refused$/);
});
