// The head of an answer from a server the service does not control (a sandbox's own HTTP server,
// relayed on a port URL, a share link, an E2B host name or through a cluster node) checked before it
// reaches `writeHead`, which throws on a bad one: an exception there, in a socket's listener, would
// end the process and every tenant's sandboxes with it. A bad answer is data: a 502 for that request.
import http from "node:http";

/** Why an answer's head cannot be relayed: it becomes a 502 for that one request. */
export class BadAnswer extends Error {}

/** The bytes node's writeHead allows in a reason phrase and a header value (its checkInvalidHeaderChar). */
const FIELD_TEXT = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * The reason phrase to send for `status`: the server's own when it holds only allowed bytes, else
 * the standard one. A reason phrase carries no meaning (RFC 9112 4: a client ignores it), so a bad
 * one is replaced rather than failing an answer that is otherwise fine.
 */
export function reasonPhrase(status: number, reason: string | undefined): string {
  return reason !== undefined && FIELD_TEXT.test(reason) ? reason : (http.STATUS_CODES[status] ?? "");
}

/**
 * Throws BadAnswer unless `status` is an integer 100..599 and every header of `raw` (name, value,
 * name, value...) has a token for a name and a value node's writeHead takes. A bad header fails the
 * whole answer (a 502) rather than being dropped: an answer relayed without one of its headers (its
 * Content-Type, a Set-Cookie, a Location) would be a different answer than the server gave, silently.
 */
export function checkAnswerHead(status: unknown, raw: readonly string[]): void {
  if (typeof status !== "number" || !Number.isInteger(status) || status < 100 || status > 599)
    throw new BadAnswer(`its status ${JSON.stringify(String(status)).slice(0, 40)} is not 100..599`);
  if (raw.length % 2 !== 0) throw new BadAnswer("its headers are malformed");
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    const value = raw[i + 1];
    if (typeof name !== "string" || typeof value !== "string") throw new BadAnswer("its headers are malformed");
    // Node's own checks, as writeHead makes them: what passes here cannot throw there.
    try {
      http.validateHeaderName(name);
    } catch {
      throw new BadAnswer("a header name is not a token");
    }
    try {
      http.validateHeaderValue(name, value);
    } catch {
      throw new BadAnswer(`the value of header '${name}' holds a byte a header may not`);
    }
  }
}

const NOTHING = Buffer.alloc(0);

/**
 * Sends `res`'s head at once, its bytes as they were set. Not flushHeaders(): node writes the head
 * it flushes joined to an empty string body, as UTF-8, so a header byte 0x80-0xFF went out as two
 * bytes; an empty Buffer written sends the head alone, as latin1, and no chunk.
 */
export function sendHeadNow(res: http.ServerResponse): void {
  res.write(NOTHING);
}
