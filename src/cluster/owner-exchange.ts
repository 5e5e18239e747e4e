// The relay's own HTTP/1.1 exchange with an owner node, for the hot path of forwarding: the
// request's head goes out as one string (built in one pass over the client's raw headers), its body
// as the raw bytes the client sent, and the owner's answer is read by a small reader
// (answer-reader.ts) straight into the client's response, over kept-alive connections kept per
// owner, last used first. node:http's client did the same with a ClientRequest, an agent's
// bookkeeping, a parser and an IncomingMessage per request, which cost the forwarding node more CPU
// than the rest of its work on a forwarded run.
import type { IncomingMessage, ServerResponse } from "node:http";
import net from "node:net";
import type { AnswerSink } from "./answer-reader.js";
import { AnswerReader } from "./answer-reader.js";
import { idleTimeoutMs, TCP_KEEPALIVE_MS } from "./node-connections.js";
import { answerHeaders, answerUnavailable } from "./relay-headers.js";

/**
 * Where every connection's reads land (node's `onread`: no stream machinery per read); read only
 * within the read's callback, so what outlives it is copied.
 */
const READS = Buffer.allocUnsafe(64 * 1024);

/** One kept-alive connection to an owner, and the request it carries now (if any). */
class OwnerConnection implements AnswerSink {
  private readonly reader = new AnswerReader();
  /** The exchange in progress: the client's response, and what a failure calls. */
  private res: ServerResponse | undefined;
  private onFail: (() => void) | undefined;
  /** Bytes of the request's body still to send. */
  private unsent = 0;
  /** The owner's answer has begun (its head went to the client). */
  private answered = false;
  /** The client's response is full: reading waits for its `drain`. */
  private held = false;
  /** When it was last given back, and how long it may stay idle (ms; 0: no limit, -1: not again). */
  idleAt = 0;
  idleMs = 0;
  private readonly drained = () => {
    this.held = false;
    this.socket.resume();
  };

  constructor(
    readonly socket: net.Socket,
    private readonly pool: OwnerPool,
  ) {
    socket.on("end", () => {
      // A cut answer, or the owner closing an idle connection: the connection is not used again.
      if (!this.reader.end()) socket.destroy();
    });
    // An error is followed by `close`, which does what is needed.
    socket.on("error", () => {});
    socket.on("close", () => {
      this.pool.closed(this);
      this.fail();
    });
  }

  get busy(): boolean {
    return this.res !== undefined;
  }

  /**
   * Sends a request (`head`: its request line and headers, ended by an empty line; `length`: its
   * body's, which follows from `req`) and relays its answer to `res`.
   */
  send(req: IncomingMessage, res: ServerResponse, head: string, length: number, onFail: () => void): void {
    this.res = res;
    this.onFail = onFail;
    this.answered = false;
    this.unsent = length;
    this.reader.start(this, req.method === "HEAD");
    // The client went away before its answer was complete: so does this exchange (the owner sees its connection close).
    res.once("close", () => {
      if (this.res !== res || res.writableFinished) return;
      // Not the owner's failure: its route stays.
      this.onFail = undefined;
      this.socket.destroy();
    });
    const socket = this.socket;
    if (length === 0) {
      socket.write(head, "latin1");
      return;
    }
    let first = true;
    const resumeReq = () => req.resume();
    req.on("data", (chunk: Buffer) => {
      if (this.res !== res) return;
      this.unsent -= chunk.length;
      let more: boolean;
      if (first) {
        // The head and the body's first bytes in one write (a run's whole body, mostly).
        first = false;
        more = socket.write(head + chunk.toString("latin1"), "latin1");
      } else more = socket.write(chunk);
      // Answered before the body was all sent: the connection is free only now.
      if (this.unsent <= 0 && !this.reader.reading) this.done(true);
      else if (!more) {
        req.pause();
        socket.once("drain", resumeReq);
      }
    });
  }

  /** A read of the connection (`n` bytes in READS); false holds further reads (the client's response is full). */
  read(n: number): boolean {
    if (!this.reader.reading) {
      // Bytes from an owner that owes no answer: the connection cannot be trusted to frame the next one.
      this.socket.destroy();
      return false;
    }
    try {
      this.reader.feed(READS.subarray(0, n));
    } catch {
      this.socket.destroy();
      return false;
    }
    return !this.held;
  }

  onHead(status: number, rawHeaders: string[]): void {
    const res = this.res as ServerResponse;
    this.answered = true;
    this.idleMs = idleTimeoutMs(rawHeaders) ?? -1;
    const back = answerHeaders(rawHeaders);
    res.writeHead(status, back.headers);
    // An event stream's head goes out at once (its first event may be a while).
    if (back.stream) res.flushHeaders();
  }

  onBody(chunk: Buffer, last: boolean): void {
    const res = this.res as ServerResponse;
    // Copied out of READS (as a one-byte string: node:http then sends a whole answer, head and
    // body, in one write).
    const data = chunk.toString("latin1");
    if (last) {
      res.end(data, "latin1");
      return;
    }
    if (!res.write(data, "latin1") && !this.held) {
      this.held = true;
      res.once("drain", this.drained);
    }
  }

  onEnd(reusable: boolean): void {
    const res = this.res as ServerResponse;
    if (!res.writableEnded) res.end();
    // The request's body is still being sent (an answer that did not wait for it): its end frees the connection.
    if (this.unsent > 0 && reusable) return;
    this.done(reusable);
  }

  /** The exchange is over: the connection goes back to the pool, or is closed. */
  private done(reusable: boolean): void {
    this.res = undefined;
    this.onFail = undefined;
    // One whose reads wait for a client's `drain` (its last bytes still queued) is not used again.
    if (reusable && this.idleMs >= 0 && this.unsent <= 0 && !this.held && this.socket.writable) this.pool.release(this);
    else this.socket.destroy();
  }

  /** The connection closed: an exchange in progress fails (503 before its answer began, a cut answer after). */
  private fail(): void {
    const res = this.res;
    if (!res) return;
    const onFail = this.onFail;
    this.res = undefined;
    this.onFail = undefined;
    onFail?.();
    if (this.answered || res.headersSent) res.destroy();
    else answerUnavailable(res);
  }
}

/** The connections to one owner node: idle ones last used first, every open one for abort(). */
export class OwnerPool {
  private readonly idle: OwnerConnection[] = [];
  private readonly open = new Set<OwnerConnection>();

  constructor(
    readonly url: string,
    private readonly hostname: string,
    private readonly port: number,
  ) {}

  /** A connection for one request: the last one given back that may still be used, else a new one. */
  take(now = Date.now()): OwnerConnection {
    for (;;) {
      const c = this.idle.pop();
      if (!c) break;
      // One the owner has begun to close, or idle so long that the owner may be closing it: not used again.
      if (c.socket.destroyed || !c.socket.writable || (c.idleMs > 0 && now - c.idleAt >= c.idleMs)) {
        c.socket.destroy();
        continue;
      }
      return c;
    }
    // Nagle off: a request's head and body go out as written; TCP keep-alive finds an owner that vanished.
    let c: OwnerConnection | undefined;
    const socket = net.connect({
      host: this.hostname,
      port: this.port,
      noDelay: true,
      keepAlive: true,
      keepAliveInitialDelay: TCP_KEEPALIVE_MS,
      onread: { buffer: READS, callback: (n: number) => (c as OwnerConnection).read(n) },
    });
    // Never what keeps the process up: an exchange in flight has its client's connection open.
    socket.unref();
    c = new OwnerConnection(socket, this);
    this.open.add(c);
    return c;
  }

  release(c: OwnerConnection, now = Date.now()): void {
    c.idleAt = now;
    this.idle.push(c);
  }

  closed(c: OwnerConnection): void {
    this.open.delete(c);
    const at = this.idle.indexOf(c);
    if (at >= 0) this.idle.splice(at, 1);
  }

  /** Fails every exchange in flight (the owner was found lost). */
  abort(): void {
    for (const c of this.open) if (c.busy) c.socket.destroy();
  }

  destroy(): void {
    for (const c of this.open) c.socket.destroy();
  }
}
