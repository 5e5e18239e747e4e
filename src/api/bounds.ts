// Bounds on what a request may be, checked before Fastify's routing: the request id a client may
// set, JSON nesting depth, and the answer to requests Node rejects itself (headers too large,
// malformed HTTP, too slow), all in the error envelope; and the lingering close of an answer sent
// before its request body was read.
import crypto from "node:crypto";
import { type IncomingMessage, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { ApiError } from "../errors.js";

/** A client's x-request-id is kept only if it is a plain token; anything else gets a fresh UUID. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestId(req: IncomingMessage): string {
  const given = req.headers["x-request-id"];
  return typeof given === "string" && SANE_REQUEST_ID.test(given) ? given : crypto.randomUUID();
}

/** The characters that matter to nesting: brackets, and the quotes that start strings. */
const STRUCTURE = /[[\]{}"]/g;

/**
 * Whether JSON text nests arrays/objects deeper than `max` (checked before parsing: cheap, and
 * nothing deep is built). The regular expression skips numbers and whitespace natively (a batch of
 * 1,000 vectors is 2.6 MB of digits: 2.3 ms instead of 7 ms character by character), and a string
 * is skipped to its closing quote with indexOf.
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  STRUCTURE.lastIndex = 0;
  for (let m = STRUCTURE.exec(text); m !== null; m = STRUCTURE.exec(text)) {
    const c = text.charCodeAt(m.index);
    if (c === 34 /* " */) {
      // The closing quote is the next one not escaped (preceded by an even number of backslashes).
      let end = m.index + 1;
      for (;;) {
        end = text.indexOf('"', end);
        if (end === -1) return false;
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === 92 /* \ */) backslashes++;
        if (backslashes % 2 === 0) break;
        end++;
      }
      STRUCTURE.lastIndex = end + 1;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > max) return true;
    } else depth--;
  }
  return false;
}

/** Errors Node raises before a request reaches Fastify (headers too large, malformed HTTP, slow client). */
export function clientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const api =
    err.code === "HPE_HEADER_OVERFLOW"
      ? new ApiError("headers_too_large", "The request line and headers are larger than this service accepts")
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? new ApiError("request_timeout", "The request was not received in time")
        : new ApiError("invalid_request", "Malformed HTTP request");
  const body = JSON.stringify({ error: { code: api.code, message: api.message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${api.status} ${STATUS_CODES[api.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Lingering close: what a client may still send after its answer, and for how long. Past `maxMs`
 * a client is closed only when it sent less than `minBytesPerS` on average since the answer: a
 * fixed time cut the slow but steady ones (eight 48 MB uploads refused at once on a busy host
 * took over 30 s to send, and the client saw a broken pipe, never its 503), while the byte bound
 * and the idle bound already stop a client that sends too much or nothing; the rate bound stops a
 * slow drip (64 MiB at the minimum rate is about 4 minutes, less than the request timeout).
 */
export const LINGER = { maxBytes: 64 * 2 ** 20, maxMs: 30_000, minBytesPerS: 256 * 2 ** 10, idleMs: 5_000, checkMs: 250 } as const;

const lingering = new WeakSet<Socket>();

/**
 * Makes the socket close the way nginx's lingering close does, for an answer sent before the
 * request body was read (a 413 for a body over the limit, a 401 before the upload): the answer and
 * a FIN go out, and what the client still sends is read and dropped until it closes, or until it
 * sent `maxBytes`, or went `idleMs` without sending, or `maxMs` passed while it sent less than
 * `minBytesPerS` on average. Closing at once with unread
 * bytes would make the kernel send a reset, and most clients (Node's fetch, Python's urllib) then
 * report a broken pipe instead of the answer. Node calls `destroySoon` when a response that closes
 * the connection has been written; the bytes are read by Node's HTTP parser, which discards the
 * rest of a request body nobody reads, so nothing is buffered. The counts are checked every
 * `checkMs` (the parser reads the socket directly: there is no per-chunk event to count on), so a
 * fast client may send somewhat more than `maxBytes` before the close.
 */
export function lingerBeforeClose(
  socket: Socket,
  request: IncomingMessage,
  limits: { maxBytes: number; maxMs: number; minBytesPerS: number; idleMs: number; checkMs: number } = LINGER,
): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  socket.destroySoon = function lingeringClose(this: Socket) {
    const started = Date.now();
    const startBytes = socket.bytesRead;
    let lastBytes = startBytes;
    let lastProgress = started;
    // Node reads the socket only while the request is read: a body parser that let go of it (a
    // multipart parser unpipes it, which pauses it) would leave the client blocked, cut as idle
    // after idleMs with a reset instead of its answer. What is left of the body is dropped here.
    const drop = () => {
      if (request.complete || request.destroyed) return;
      request.unpipe();
      if (!request.readableFlowing) request.resume();
    };
    drop();
    const check = setInterval(() => {
      drop();
      const now = Date.now();
      if (socket.bytesRead !== lastBytes) {
        lastBytes = socket.bytesRead;
        lastProgress = now;
      }
      const sent = lastBytes - startBytes;
      const slow = now - started > limits.maxMs && sent < (limits.minBytesPerS * (now - started)) / 1000;
      if (sent > limits.maxBytes || now - lastProgress > limits.idleMs || slow) socket.destroy();
    }, limits.checkMs);
    socket.once("close", () => clearInterval(check));
    socket.end();
    return this;
  };
}
