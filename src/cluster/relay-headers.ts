// The headers of a request relayed to its owner node and of the owner's answer on its way back, in
// the flat form node:http and undici take ready-made (name, value, ...), and the answer a client gets
// when the owner does not answer: shared by the node:http relay (forward.ts) and the relay's undici
// exchange (owner-exchange.ts).
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { ApiError } from "../errors.js";
import { FORWARDED_AT, FORWARDED_BY, FORWARDED_SIG } from "./channel-auth.js";

/**
 * The Host the client sent to the node that forwards its request: the owner answers with it, as
 * that node would (a port's URL, a share link, the X-Forwarded-Host a sandbox's server sees), not
 * with its own internal address. Honoured only on a request the channel signature says a node sent.
 */
export const ORIGIN_HOST = "x-agentbox-origin-host";

/** Hop-by-hop headers (RFC 9110 7.6.1): they describe one connection, not the request. */
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "host"]);

/**
 * A forwarded request's headers, as node:http takes them ready-made (name, value, name, value...;
 * no header object to fill): the client's (`headers`, as this node has them: an E2B host name sets
 * one) but the hop-by-hop ones and those in `extra` (the node's own, which a client cannot set: its
 * copies are dropped), then `extra`, then the owner's Host. `bodyLength`: the body was read already
 * and goes as one buffer of that length.
 */
export function forwardedRequestHeaders(
  headers: IncomingHttpHeaders,
  extra: Record<string, string>,
  host: string,
  bodyLength?: number,
): string[] {
  const out: string[] = [];
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP.has(name) || Object.hasOwn(extra, name)) continue;
    if (bodyLength !== undefined && (name === "transfer-encoding" || name === "content-length")) continue;
    if (typeof value === "string") out.push(name, value);
    else for (const v of value) out.push(name, v);
  }
  for (const name in extra) out.push(name, extra[name] as string);
  out.push("host", host);
  if (bodyLength !== undefined) out.push("content-length", String(bodyLength));
  return out;
}

/**
 * The owner's answer's headers as they go back to the client (the same flat form): the owner's
 * (`raw`) but the hop-by-hop ones, after `own` (headers this node set already) where the owner
 * sets none. `stream`: the answer is an event stream (its head goes out at once); `length`: its
 * Content-Length, if any.
 */
export function answerHeaders(
  raw: readonly string[],
  own?: Record<string, string | number | string[] | undefined>,
): { headers: string[]; stream: boolean; length?: number } {
  const headers: string[] = [];
  let stream = false;
  let length: number | undefined;
  const owners = own && new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (HOP.has(name)) continue;
    const value = raw[i + 1] as string;
    if (name === "content-type" && value.startsWith("text/event-stream")) stream = true;
    else if (name === "content-length") length = Number(value);
    owners?.add(name);
    headers.push(raw[i] as string, value);
  }
  if (own)
    for (const [name, value] of Object.entries(own)) {
      if (value === undefined || owners?.has(name.toLowerCase())) continue;
      if (Array.isArray(value)) for (const v of value) headers.push(name, v);
      else headers.push(name, String(value));
    }
  return { headers, stream, length };
}

/** The answer when the owner did not answer (before its answer began): 503 `node_unavailable`. */
export function answerUnavailable(
  res: ServerResponse,
  message = "The node that runs this sandbox or deployment did not answer; retry shortly",
): void {
  const err = new ApiError("node_unavailable", message, 1);
  res.writeHead(err.status, { "content-type": "application/json; charset=utf-8", "retry-after": "1" });
  res.end(JSON.stringify({ error: { code: err.code, message: err.message } }));
}

/** What the relay's hot path reads of a client's request in one pass over its raw headers. */
export interface RelayedHead {
  /** The headers to send on (flat: name, value, ...): the client's, less the hop-by-hop ones and the node's own. */
  headers: string[];
  /** It carries an Authorization header (the owner checks it). */
  authorization: boolean;
  /** It claims to come from a node (the channel's headers): answered here, never relayed. */
  fromNode: boolean;
  /** The client's Host. */
  host: string | undefined;
  /** A body framed by Content-Length or none, and no Expect: the relay's undici exchange takes it as it is. */
  plain: boolean;
  /** The body's length (its Content-Length; 0: none). */
  length: number;
}

/**
 * Reads a request's raw headers (node:http's `rawHeaders`, as the client sent them, in one pass and
 * without the header object node:http would build): the headers a relayed request sends on, without
 * the hop-by-hop ones and without a client's own copies of the headers only a node may set.
 */
export function relayedHead(raw: readonly string[]): RelayedHead {
  const headers: string[] = [];
  let authorization = false;
  let fromNode = false;
  let host: string | undefined;
  let plain = true;
  let length = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    switch (lower) {
      case "authorization":
        authorization = true;
        break;
      case "host":
        host ??= value;
        continue;
      case FORWARDED_BY:
        fromNode = true;
        continue;
      case FORWARDED_AT:
      case FORWARDED_SIG:
      case ORIGIN_HOST:
        continue;
      case "transfer-encoding":
      case "expect":
        plain = false;
        break;
      case "content-length":
        length = Number(value);
        break;
      default:
        if (HOP.has(lower)) continue;
    }
    headers.push(name, value);
  }
  return { headers, authorization, fromNode, host, plain, length };
}
