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

/** A status line as HTTP/1.x servers send it; the reason phrase is optional. */
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/;
/** A header line: a name, a colon, the value (its surrounding blanks are not part of it). */
const HEADER_LINE = /^([^:]*):[ \t]*(.*?)[ \t]*$/;

/**
 * An answer's head read off a connection as it came (up to its blank line, bytes as latin1), for a
 * relay that does not parse it with node:http (a WebSocket handshake's answer): checked as
 * checkAnswerHead() checks one, and written again as HTTP/1.1 text (the reason phrase as
 * reasonPhrase() has it), so that only a well-formed head goes on. Throws BadAnswer.
 */
export function rewrittenAnswerHead(head: string): string {
  const lines = head.split("\r\n");
  const status = STATUS_LINE.exec(lines[0] as string);
  if (!status) throw new BadAnswer("its status line is malformed");
  const headers: string[] = [];
  for (const line of lines.slice(1)) {
    const m = HEADER_LINE.exec(line);
    if (!m) throw new BadAnswer("a header line is malformed");
    headers.push(m[1] as string, m[2] as string);
  }
  const code = Number(status[1]);
  checkAnswerHead(code, headers);
  let text = `HTTP/1.1 ${code} ${reasonPhrase(code, status[2])}\r\n`;
  for (let i = 0; i < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return `${text}\r\n`;
}
