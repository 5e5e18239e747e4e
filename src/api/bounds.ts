// Bounds on what a request may be, checked before Fastify's routing: the request id a client may
// set, JSON nesting depth, and the answer to requests Node rejects itself (headers too large,
// malformed HTTP, too slow), all in the error envelope.
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
