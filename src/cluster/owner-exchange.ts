// The relay's exchange with an owner node on the hot path of forwarding, through undici's
// low-level client: one Pool per owner (kept-alive connections, Keep-Alive timeouts, HTTP/1.1
// framing), a request dispatched with the client's raw headers and its body as the client's own
// stream, and the owner's answer handed by undici's handler callbacks straight into the client's
// response. No ClientRequest, IncomingMessage or fetch Response is built per request: those cost
// the forwarding node more CPU than the rest of its work on a forwarded run.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Dispatcher, Pool } from "undici";
import { BEFORE_SERVER_TIMEOUT_MS, TCP_KEEPALIVE_MS } from "./node-connections.js";
import { answerHeaders, answerUnavailable } from "./relay-headers.js";

/** Larger answer heads are refused (node:http's own limit is 16 KiB). */
const MAX_HEAD = 64 * 1024;
/**
 * A request body up to this size (a run's) is read whole before it is sent: it goes in one write
 * with the head, without a stream relay set up per request. Larger ones stream with backpressure.
 */
const WHOLE_BODY_MAX = 64 * 1024;

/** The client went away: the exchange is aborted with this (not the owner's failure). */
class ClientGone extends Error {}

/**
 * One request's answer on its way to the client: undici's handler for it, in the callbacks its
 * HTTP/1.1 client calls itself (the newer controller callbacks are wrapped around these, and
 * build a header object per answer this does not need). Backpressure both ways: undici holds the
 * client's body stream while the owner's connection is full, and this pauses reading the owner
 * while the client's response is full.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private abort: ((err?: Error) => void) | undefined;
  /** The client went away before its answer was complete. */
  private gone = false;
  /** Bytes of the answer's body still to come (its Content-Length), -1 when not framed by one. */
  private remaining = -1;
  /** Reading the owner waits for the client's response to drain. */
  private held = false;
  private resume: (() => void) | undefined;
  private readonly drained = () => {
    this.held = false;
    this.resume?.();
  };

  constructor(
    private readonly res: ServerResponse,
    private readonly onFail: () => void,
  ) {
    // The client went away before its answer was complete: so does this exchange (the owner sees
    // its connection close).
    res.once("close", () => {
      if (res.writableFinished) return;
      this.gone = true;
      this.abort?.(new ClientGone());
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.gone) abort(new ClientGone());
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // An interim answer (103 Early Hints): the final one follows.
    if (status < 200) return true;
    this.resume = resume;
    const raw: string[] = new Array(rawHeaders.length);
    for (let i = 0; i < rawHeaders.length; i++) raw[i] = (rawHeaders[i] as Buffer).toString("latin1");
    const back = answerHeaders(raw);
    this.res.writeHead(status, back.headers);
    // An event stream's head goes out at once (its first event may be a while); other answers send
    // their head with the first bytes of the body.
    if (back.stream) this.res.flushHeaders();
    else this.remaining = back.length ?? -1;
    return true;
  }

  onData(chunk: Buffer): boolean {
    const res = this.res;
    let more: boolean;
    if (!res.headersSent) {
      // The head and the body's first bytes in one write (node:http joins a one-byte string to the
      // head): a run's whole answer, mostly.
      const data = chunk.toString("latin1");
      if (chunk.length === this.remaining) {
        res.end(data, "latin1");
        return true;
      }
      more = res.write(data, "latin1");
    } else more = res.write(chunk);
    if (!more && !this.held) {
      this.held = true;
      res.once("drain", this.drained);
    }
    return !this.held;
  }

  onComplete(): void {
    if (!this.res.writableEnded) this.res.end();
  }

  /** A failure: 503 before the owner's answer began, a cut answer after; the client's leaving is not the owner's failure. */
  onError(err: Error): void {
    if (err instanceof ClientGone || this.gone) return;
    this.onFail();
    if (this.res.headersSent) this.res.destroy();
    else answerUnavailable(this.res);
  }
}

/** The connections to one owner node. */
export class OwnerPool {
  private readonly pool: Pool;

  constructor(readonly url: string) {
    this.pool = new Pool(url, {
      // A run, a file transfer or an event stream takes as long as it takes (the owner bounds it).
      headersTimeout: 0,
      bodyTimeout: 0,
      maxHeaderSize: MAX_HEAD,
      // Not used again a second before the owner's announced `Keep-Alive: timeout=` would close it.
      keepAliveTimeoutThreshold: BEFORE_SERVER_TIMEOUT_MS,
      // Nagle off: a request's head and body go out as written; TCP keep-alive finds an owner that vanished.
      connect: { noDelay: true, keepAlive: true, keepAliveInitialDelay: TCP_KEEPALIVE_MS },
    });
  }

  /**
   * Sends `req` to the owner (`headers`: the ones to send, flat `name, value, ...`, the owner's
   * Host and the body's Content-Length among them; `length`: the body's, which follows from `req`)
   * and relays its answer to `res`.
   */
  send(req: IncomingMessage, res: ServerResponse, headers: string[], length: number, onFail: () => void): void {
    const opts = { method: req.method as Dispatcher.HttpMethod, path: req.url as string, headers };
    if (length === 0 || length > WHOLE_BODY_MAX) {
      this.pool.dispatch({ ...opts, body: length > 0 ? req : null }, new Exchange(res, onFail));
      return;
    }
    // The client's going away before its body is whole ends it here (nothing was sent yet).
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      this.pool.dispatch({ ...opts, body }, new Exchange(res, onFail));
    });
  }

  /** Fails every exchange in flight (the owner was found lost); the pool is not used again. */
  destroy(reason?: string): void {
    this.pool.destroy(new Error(reason ?? "closed")).catch(() => {});
  }
}
