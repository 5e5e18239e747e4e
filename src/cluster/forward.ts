// Forwarding a request to the node that owns its sandbox: the request's body and the answer are
// streamed both ways through a keep-alive connection pool (memory bounded by the streams'
// backpressure, never buffered whole), so runs, file transfers and event streams all pass as they are.
// forward() writes the request's text itself and has the answer parsed on its connection
// (owner-lines.ts); connect() (a request that may be answered here after all) uses node:http's client.
import http from "node:http";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import net from "node:net";
import type { Duplex, Readable, Writable } from "node:stream";
import { BadAnswer, checkAnswerHead, sendHeadNow } from "../common/answer-head.js";
import { isInternalHeader } from "../common/internal-headers.js";
import { ApiError } from "../errors.js";
import { NodeConnections } from "./node-connections.js";
import { type Exchange, type OwnerLine, OwnerLines } from "./owner-lines.js";

/** Hop-by-hop headers (RFC 9110 7.6.1): they describe one connection, not the request. */
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "host"]);

/** What a failed forward tells the client when the caller says nothing more precise. */
const UNAVAILABLE = "The node that runs this sandbox or deployment did not answer; retry shortly";

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
    // Expect: this node has answered it already (node:http sends the client its 100 Continue).
    // A client's own internal channel headers never pass (an origin host with no Host of its own, a node signature).
    if (value === undefined || HOP.has(name) || name === "expect" || isInternalHeader(name) || Object.hasOwn(extra, name)) continue;
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
 * sets none. `stream`: the answer is an event stream (its head goes out at once).
 */
export function answerHeaders(
  raw: readonly string[],
  own?: Record<string, string | number | string[] | undefined>,
): { headers: string[]; stream: boolean } {
  const headers: string[] = [];
  let stream = false;
  const owners = own && new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (HOP.has(name)) continue;
    const value = raw[i + 1] as string;
    if (name === "content-type" && value.startsWith("text/event-stream")) stream = true;
    owners?.add(name);
    headers.push(raw[i] as string, value);
  }
  if (own)
    for (const [name, value] of Object.entries(own)) {
      if (value === undefined || owners?.has(name.toLowerCase())) continue;
      if (Array.isArray(value)) for (const v of value) headers.push(name, v);
      else headers.push(name, String(value));
    }
  return { headers, stream };
}

/**
 * Sends `from` into `to` as it comes, holding `from` while `to` is full: what pipe() does here, with
 * fewer listeners set and removed per request. Nothing more is written once `to` is destroyed (the
 * other side of the relay is torn down then too).
 */
function pass(from: Readable, to: Writable): void {
  const resume = () => from.resume();
  from.on("data", (chunk: Buffer) => {
    if (to.destroyed) return;
    if (!to.write(chunk)) {
      from.pause();
      to.once("drain", resume);
    }
  });
  from.on("end", () => {
    if (!to.destroyed) to.end();
  });
}

/** A forwarded request's head as HTTP/1.1 text: its request line and `headers` (forwardedRequestHeaders()). */
export function requestHead(method: string, url: string, headers: readonly string[]): string {
  let head = `${method} ${url} HTTP/1.1\r\n`;
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return `${head}\r\n`;
}

/**
 * Writes the request's text into `to`: `head`, then the body as it comes from `from` (chunked
 * again when the client sent it in chunks: node:http has taken its chunks apart), holding `from`
 * while `to` is full; `sent` once the body has ended. The head goes out with the body's first bytes.
 */
function sendRequest(from: IncomingMessage, to: net.Socket, head: string, sent: () => void): void {
  const chunked = from.headers["transfer-encoding"] !== undefined;
  to.cork();
  to.write(head, "latin1");
  let corked = true;
  const flush = () => {
    if (corked) {
      corked = false;
      to.uncork();
    }
  };
  const resume = () => from.resume();
  from.on("data", (chunk: Buffer) => {
    if (to.destroyed || chunk.length === 0) return;
    if (chunked) to.write(`${chunk.length.toString(16)}\r\n`, "latin1");
    let room = to.write(chunk);
    if (chunked) room = to.write("\r\n", "latin1");
    flush();
    if (!room) {
      from.pause();
      to.once("drain", resume);
    }
  });
  from.on("end", () => {
    if (to.destroyed) return;
    if (chunked) to.write("0\r\n\r\n", "latin1");
    flush();
    sent();
  });
}

/**
 * Sends the owner's answer's head on to the client (answerHeaders(): `raw`, `own`). It carries a
 * sandbox's server's headers (a port relayed by the owner), so it is checked first: throws
 * BadAnswer for one writeHead would refuse, before anything is sent.
 */
function writeAnswerHead(
  res: ServerResponse,
  status: number,
  raw: readonly string[],
  own?: Record<string, string | number | string[] | undefined>,
): void {
  const back = answerHeaders(raw, own);
  checkAnswerHead(status, back.headers);
  try {
    res.writeHead(status, back.headers);
  } catch (err) {
    // Not expected once checked: still this answer's failure, never the process's.
    throw new BadAnswer(`its head could not be sent: ${(err as Error).message}`);
  }
  // An event stream's head goes out at once (its first event may be a while); other answers send
  // their head with the first bytes of the body.
  if (back.stream) sendHeadNow(res);
}

/** Answers the client 503 `node_unavailable` (the owner could not be reached), or cuts its answer if it has begun. */
function unavailable(res: ServerResponse, message: string): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const err = new ApiError("node_unavailable", message, 1);
  res.writeHead(err.status, { "content-type": "application/json; charset=utf-8", "retry-after": "1" });
  res.end(JSON.stringify({ error: { code: err.code, message: err.message } }));
}

/**
 * Answers the client 502 `upstream_error` (the owner's answer could not be read or relayed: `err`),
 * or cuts its answer if it has begun. The owner did answer: its route stays as it is.
 */
function badAnswer(res: ServerResponse, err: Error): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({
    error: {
      code: "upstream_error",
      message: `The answer could not be relayed: ${err instanceof BadAnswer ? err.message : "it is malformed"}`,
    },
  });
  res.writeHead(502, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** What a request in flight to a node offers for its node's loss: to be failed at once. */
interface Destroyable {
  destroy(err?: Error): unknown;
}

export class Forwarder {
  private readonly agent = new NodeConnections();
  private readonly lines = new OwnerLines();
  /** Owner URLs as parsed once: host, port and Host header. */
  private readonly targets = new Map<string, { hostname: string; port: number; host: string }>();
  /** Requests in flight per owner node: a node found lost has its own failed at once instead of hanging. */
  private readonly inFlight = new Map<string, Set<Destroyable>>();

  private target(url: string): { hostname: string; port: number; host: string } {
    let t = this.targets.get(url);
    if (!t) {
      const u = new URL(url);
      t = { hostname: u.hostname, port: Number(u.port || 80), host: u.host };
      this.targets.set(url, t);
    }
    return t;
  }

  /** Keeps `out` among the requests in flight to a node until the function returned is called. */
  private hold(nodeId: string, out: Destroyable): () => void {
    let open = this.inFlight.get(nodeId);
    if (!open) {
      open = new Set();
      this.inFlight.set(nodeId, open);
    }
    const held = open;
    held.add(out);
    return () => held.delete(out);
  }

  /** hold() until `out` closes. */
  private holdUntilClosed(nodeId: string, out: http.ClientRequest | net.Socket): void {
    out.on("close", this.hold(nodeId, out));
  }

  /**
   * Sends the request to `target` (the owner's base URL) with `extra` headers added and pipes the
   * answer back. Before the owner answered, a failure is a 503 `node_unavailable`; after, the
   * client's connection is cut (its answer cannot be completed). `body`: the request's body, read
   * already (a completion whose `model` said where it goes); without it the request is streamed on.
   * `own`: headers this node has set for the answer already (the owner's win).
   */
  forward(
    req: IncomingMessage,
    res: ServerResponse,
    owner: { id: string; url: string },
    extra: Record<string, string>,
    onFail: () => void,
    body?: Buffer,
    own?: Record<string, string | number | string[] | undefined>,
  ): void {
    const to = this.target(owner.url);
    let whole = body !== undefined;
    let ended = false;
    // The client's side is full: the owner's is held (and let go at the end, which a finished
    // answer's `drain` never says, before the connection serves another exchange).
    let held = false;
    const resume = () => {
      held = false;
      line.socket.resume();
    };
    const finish = () => {
      ended = true;
      release();
    };
    const exchange: Exchange = {
      head: ({ status, headers }) => {
        writeAnswerHead(res, status, headers, own);
        return req.method === "HEAD" || status === 204 || status === 304;
      },
      body: (chunk) => {
        if (!res.destroyed && !res.write(chunk) && !held) {
          held = true;
          line.socket.pause();
          res.once("drain", resume);
        }
      },
      done: () => {
        finish();
        res.end();
        if (held) {
          res.off("drain", resume);
          resume();
        }
        this.lines.give(line, whole);
      },
      fail: (bad) => {
        // Closed here because the client went away: nothing to tell anyone.
        if (ended) return;
        finish();
        if (bad) return badAnswer(res, bad);
        onFail();
        unavailable(res, UNAVAILABLE);
      },
    };
    const line: OwnerLine = this.lines.take(to.hostname, to.port, exchange);
    const release = this.hold(owner.id, line.socket);
    // The client went away: so does the exchange (the owner sees its connection close).
    res.on("close", () => {
      if (ended) return;
      finish();
      line.socket.destroy();
    });
    const head = requestHead(req.method as string, req.url as string, forwardedRequestHeaders(req.headers, extra, to.host, body?.length));
    if (body) {
      line.socket.cork();
      line.socket.write(head, "latin1");
      line.socket.write(body);
      line.socket.uncork();
    } else
      sendRequest(req, line.socket, head, () => {
        whole = true;
      });
  }

  /**
   * Sends the request's head to the owner with `Expect: 100-continue` and waits for the owner's
   * HTTP server to answer it, without reading the client's body: undefined when the owner does not
   * answer within `waitMs` (refused, unreachable, or a kept-alive connection to a node that died),
   * and the request is then still whole, to be answered here. Answered: relay() sends the body on
   * (with `answer`, when the owner's answer came at once, as a GET's may).
   */
  connect(
    req: IncomingMessage,
    owner: { id: string; url: string },
    extra: Record<string, string>,
    waitMs: number,
  ): Promise<{ out: http.ClientRequest; answer?: IncomingMessage } | undefined> {
    // The head goes out at once (Node sends it without waiting for a body when this is set).
    const out = this.request(req, owner, { ...extra, expect: "100-continue" });
    return new Promise((resolve) => {
      let answer: IncomingMessage | undefined;
      const fail = () => {
        clearTimeout(timer);
        out.off("error", fail);
        // A destroyed request may still report its error: nobody is listening for it any more.
        out.on("error", () => {});
        out.destroy();
        resolve(undefined);
      };
      const early = (a: IncomingMessage) => {
        answer = a;
      };
      const answered = () => {
        clearTimeout(timer);
        out.off("error", fail);
        this.holdUntilClosed(owner.id, out);
        // The answer may follow the 100 in the same packet, before relay() listens: kept for it.
        out.once("response", early);
        resolve({
          out,
          get answer() {
            return answer;
          },
        });
      };
      const timer = setTimeout(fail, waitMs);
      out.once("error", fail);
      out.once("continue", answered);
    });
  }

  private request(req: IncomingMessage, owner: { url: string }, extra: Record<string, string>): http.ClientRequest {
    const to = this.target(owner.url);
    return http.request({
      host: to.hostname,
      port: to.port,
      method: req.method,
      path: req.url,
      headers: forwardedRequestHeaders(req.headers, extra, to.host),
      agent: this.agent,
    });
  }

  /**
   * Sends the client's request's body into `out` and pipes the owner's answer back (see forward()).
   * `failure`: the 503's message; `early`: the owner's answer if it came already (connect()).
   */
  relay(
    out: http.ClientRequest,
    req: IncomingMessage,
    res: ServerResponse,
    onFail: () => void,
    opts: { failure?: string; early?: IncomingMessage } = {},
  ): void {
    let answered = false;
    const onAnswer = (answer: IncomingMessage) => {
      answered = true;
      answer.on("error", () => res.destroy());
      try {
        writeAnswerHead(res, answer.statusCode ?? 502, answer.rawHeaders);
      } catch (err) {
        out.destroy();
        return badAnswer(res, err as Error);
      }
      pass(answer, res);
    };
    if (opts.early) onAnswer(opts.early);
    else out.on("response", onAnswer);
    out.on("error", () => {
      onFail();
      if (answered) res.destroy();
      else unavailable(res, opts.failure ?? UNAVAILABLE);
    });
    // The client went away: so does the forwarded request (and the owner sees its stream close).
    res.on("close", () => {
      if (!res.writableFinished) out.destroy();
    });
    pass(req, out);
  }

  /**
   * Relays an Upgrade request (a WebSocket to a sandbox's port) to the owner as it came, with
   * `extra` headers, and then the bytes both ways; the owner answers the handshake itself.
   */
  tunnel(req: IncomingMessage, socket: Duplex, head: Buffer, owner: { id: string; url: string }, extra: Record<string, string>): void {
    const url = this.target(owner.url);
    const out = net.connect({ host: url.hostname, port: url.port, noDelay: true });
    this.holdUntilClosed(owner.id, out);
    const lines = [`${req.method} ${req.url} HTTP/1.1`, `host: ${url.host}`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = (req.rawHeaders[i] as string).toLowerCase();
      if (name === "host" || isInternalHeader(name) || name in extra) continue;
      lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    }
    for (const [name, value] of Object.entries(extra)) lines.push(`${name}: ${value}`);
    out.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length) out.write(head);
    out.on("error", () => socket.destroy());
    socket.on("error", () => out.destroy());
    socket.on("close", () => out.destroy());
    out.on("close", () => socket.destroy());
    socket.pipe(out);
    out.pipe(socket);
  }

  /** Fails every request in flight to a node (it was found lost): 503 `node_unavailable`, or a cut stream. */
  abort(nodeId: string): void {
    const open = this.inFlight.get(nodeId);
    if (!open) return;
    this.inFlight.delete(nodeId);
    for (const out of open) out.destroy(new Error(`node ${nodeId} was lost`));
  }

  close(): void {
    this.agent.destroy();
    this.lines.destroy();
  }
}
