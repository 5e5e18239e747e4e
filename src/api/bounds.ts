// Bounds on what a request may be, checked before Fastify's routing: the request id a client may
// set, JSON nesting depth, and the answer to requests Node rejects itself (headers too large,
// malformed HTTP, too slow), all in the error envelope.
import crypto from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

/** A client's x-request-id is kept only if it is a plain token; anything else gets a fresh UUID. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestId(req: IncomingMessage): string {
  const given = req.headers["x-request-id"];
  return typeof given === "string" && SANE_REQUEST_ID.test(given) ? given : crypto.randomUUID();
}

/** Whether JSON text nests arrays/objects deeper than `max` (checked before parsing: cheap, and nothing deep is built). */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > max) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}

/** Errors Node raises before a request reaches Fastify (headers too large, malformed HTTP, slow client). */
export function clientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, reason, code, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "headers_too_large", "The request line and headers are larger than this service accepts"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "invalid_request", "The request was not received in time"]
        : [400, "Bad Request", "invalid_request", "Malformed HTTP request"];
  const body = JSON.stringify({ error: { code, message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
