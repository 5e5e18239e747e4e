// Forwarding a request to the node that owns its sandbox: the request's body and the answer are
// streamed both ways through a keep-alive connection pool (memory bounded by the streams'
// backpressure, never buffered whole), so runs, file transfers and event streams all pass as they are.
import http from "node:http";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import net from "node:net";
import type { Duplex, Readable, Writable } from "node:stream";
import { ApiError } from "../errors.js";
import { NodeConnections } from "./node-connections.js";

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

export class Forwarder {
  private readonly agent = new NodeConnections();
  /** Owner URLs as parsed once: host, port and Host header. */
  private readonly targets = new Map<string, { hostname: string; port: number; host: string }>();
  /** Requests in flight per owner node: a node found lost has its own failed at once instead of hanging. */
  private readonly inFlight = new Map<string, Set<{ destroy(err?: Error): unknown }>>();

  private target(url: string): { hostname: string; port: number; host: string } {
    let t = this.targets.get(url);
    if (!t) {
      const u = new URL(url);
      t = { hostname: u.hostname, port: Number(u.port || 80), host: u.host };
      this.targets.set(url, t);
    }
    return t;
  }

  private hold(nodeId: string, out: http.ClientRequest | net.Socket): void {
    let open = this.inFlight.get(nodeId);
    if (!open) {
      open = new Set();
      this.inFlight.set(nodeId, open);
    }
    const held = open;
    held.add(out);
    out.on("close", () => held.delete(out));
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
    const out = this.request(req, owner, extra, body);
    this.hold(owner.id, out);
    this.relay(out, req, res, onFail, { body, own });
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
        this.hold(owner.id, out);
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

  private request(req: IncomingMessage, owner: { url: string }, extra: Record<string, string>, body?: Buffer): http.ClientRequest {
    const to = this.target(owner.url);
    return http.request({
      host: to.hostname,
      port: to.port,
      method: req.method,
      path: req.url,
      headers: forwardedRequestHeaders(req.headers, extra, to.host, body?.length),
      agent: this.agent,
    });
  }

  /**
   * Sends the client's request's body into `out` (`body`, or its own stream) and pipes the owner's
   * answer back (see forward()). `failure`: the 503's message; `early`: the owner's answer if it
   * came already (connect()); `own`: see forward().
   */
  relay(
    out: http.ClientRequest,
    req: IncomingMessage,
    res: ServerResponse,
    onFail: () => void,
    opts: {
      failure?: string;
      early?: IncomingMessage;
      body?: Buffer;
      own?: Record<string, string | number | string[] | undefined>;
    } = {},
  ): void {
    const { own, body } = opts;
    let answered = false;
    const onAnswer = (answer: IncomingMessage) => {
      answered = true;
      const back = answerHeaders(answer.rawHeaders, own);
      res.writeHead(answer.statusCode ?? 502, back.headers);
      // An event stream's head goes out at once (its first event may be a while); other answers
      // send their head with the first bytes of the body.
      if (back.stream) res.flushHeaders();
      pass(answer, res);
      answer.on("error", () => res.destroy());
    };
    if (opts.early) onAnswer(opts.early);
    else out.on("response", onAnswer);
    out.on("error", () => {
      onFail();
      if (answered || res.headersSent) {
        res.destroy();
        return;
      }
      const message = opts.failure ?? "The node that runs this sandbox or deployment did not answer; retry shortly";
      const err = new ApiError("node_unavailable", message, 1);
      res.writeHead(err.status, { "content-type": "application/json; charset=utf-8", "retry-after": "1" });
      res.end(JSON.stringify({ error: { code: err.code, message: err.message } }));
    });
    // The client went away: so does the forwarded request (and the owner sees its stream close).
    res.on("close", () => {
      if (!res.writableFinished) out.destroy();
    });
    if (body) out.end(body);
    else pass(req, out);
  }

  /**
   * Relays an Upgrade request (a WebSocket to a sandbox's port) to the owner as it came, with
   * `extra` headers, and then the bytes both ways; the owner answers the handshake itself.
   */
  tunnel(req: IncomingMessage, socket: Duplex, head: Buffer, owner: { id: string; url: string }, extra: Record<string, string>): void {
    const url = this.target(owner.url);
    const out = net.connect({ host: url.hostname, port: url.port, noDelay: true });
    this.hold(owner.id, out);
    const lines = [`${req.method} ${req.url} HTTP/1.1`, `host: ${url.host}`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = (req.rawHeaders[i] as string).toLowerCase();
      if (name === "host" || name in extra) continue;
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
  }
}
