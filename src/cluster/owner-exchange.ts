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

/** The client went away: the exchange is aborted with this (not the owner's failure). */
class ClientGone extends Error {}

/**
 * One request's answer on its way to the client: undici's handler for it. Backpressure both ways:
 * undici holds the client's body stream while the owner's connection is full, and this pauses
 * reading the owner while the client's response is full.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  /** The client went away before its answer was complete. */
  private gone = false;
  /** Bytes of the answer's body still to come (its Content-Length), -1 when not framed by one. */
  private remaining = -1;
  private readonly drained = () => this.controller?.resume();

  constructor(
    private readonly res: ServerResponse,
    private readonly onFail: () => void,
  ) {
    // The client went away before its answer was complete: so does this exchange (the owner sees
    // its connection close).
    res.once("close", () => {
      if (res.writableFinished) return;
      this.gone = true;
      this.controller?.abort(new ClientGone());
    });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.gone) controller.abort(new ClientGone());
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number): void {
    // An interim answer (103 Early Hints): the final one follows.
    if (status < 200) return;
    const raw = (controller.rawHeaders as Buffer[]).map((b) => b.toString("latin1"));
    const back = answerHeaders(raw);
    this.res.writeHead(status, back.headers);
    // An event stream's head goes out at once (its first event may be a while); other answers send
    // their head with the first bytes of the body.
    if (back.stream) this.res.flushHeaders();
    else this.remaining = back.length ?? -1;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const res = this.res;
    if (!res.headersSent) {
      // The head and the body's first bytes in one write (node:http joins a one-byte string to the
      // head): a run's whole answer, mostly.
      const data = chunk.toString("latin1");
      if (chunk.length === this.remaining) {
        res.end(data, "latin1");
        return;
      }
      if (!res.write(data, "latin1")) this.hold(controller);
      return;
    }
    if (!res.write(chunk)) this.hold(controller);
  }

  private hold(controller: Dispatcher.DispatchController): void {
    if (controller.paused) return;
    controller.pause();
    this.res.once("drain", this.drained);
  }

  onResponseEnd(): void {
    if (!this.res.writableEnded) this.res.end();
  }

  /** A failure: 503 before the owner's answer began, a cut answer after; the client's leaving is not the owner's failure. */
  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const res = this.res;
    if (err instanceof ClientGone || this.gone) return;
    this.onFail();
    if (res.headersSent) res.destroy();
    else answerUnavailable(res);
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
    this.pool.dispatch(
      { method: req.method as Dispatcher.HttpMethod, path: req.url as string, headers, body: length > 0 ? req : null },
      new Exchange(res, onFail),
    );
  }

  /** Fails every exchange in flight (the owner was found lost); the pool is not used again. */
  destroy(reason?: string): void {
    this.pool.destroy(new Error(reason ?? "closed")).catch(() => {});
  }
}
