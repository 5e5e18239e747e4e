// The kept-alive connections a node forwards requests over: an http.Agent whose connection choice
// is cut down to what forwarding to a few known nodes needs. node:http's own Agent spends a tenth
// of a forwarded request's CPU choosing a connection (it copies the request's options into a new
// object, names the connection from them, keeps per-name maps that grow slow from deleting keys,
// resets async-hooks ids); here a connection is taken from a list per node, last used first.
import http from "node:http";
import net from "node:net";

/** The TCP keep-alive probes' delay on a connection (a node that vanished is found). */
const TCP_KEEPALIVE_MS = 10_000;
/** A kept-alive connection is closed this long before the owner would close it (its `Keep-Alive: timeout=`). */
const BEFORE_SERVER_TIMEOUT_MS = 1000;

/** What node:http keeps on a socket and a request that this pool reads (internal to node:http, stable since Node 12). */
type Held = net.Socket & { _httpMessage?: (http.ClientRequest & { res?: http.IncomingMessage }) | null };

/**
 * How long an idle connection may stay open after an answer (ms): from the answer's
 * `Keep-Alive: timeout=N` (closed a second before the server would, so that no request is sent
 * on a connection the server is closing), 0 for no limit, undefined when it must not be kept.
 */
export function idleTimeoutMs(rawHeaders: readonly string[] | undefined): number | undefined {
  if (!rawHeaders) return 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() !== "keep-alive") continue;
    const hint = /^timeout=(\d+)/.exec(rawHeaders[i + 1] as string)?.[1];
    if (hint === undefined) return 0;
    const ms = Number(hint) * 1000 - BEFORE_SERVER_TIMEOUT_MS;
    return ms > 0 ? ms : undefined;
  }
  return 0;
}

/** An error on an idle connection (the peer reset it): it is closed, and leaves the list then. */
function idleError(this: net.Socket): void {
  this.destroy();
}

export class NodeConnections extends http.Agent {
  /** Idle connections per `host:port`, the last one freed at the end. */
  private readonly idle = new Map<string, net.Socket[]>();
  private readonly open = new Set<net.Socket>();

  constructor() {
    // keepAlive: what ClientRequest reads to send `Connection: keep-alive`.
    super({ keepAlive: true });
  }

  /** Called by http.request() (agent-base and others replace it the same way): gives the request a connection. */
  addRequest(req: http.ClientRequest, options: { host?: string | null; port?: number | string | null }): void {
    const key = `${options.host}:${options.port}`;
    const list = this.idle.get(key);
    let socket: net.Socket | undefined;
    while (list && list.length > 0) {
      const s = list.pop() as net.Socket;
      // One the owner has begun to close (its FIN read, not yet gone from the list) is passed over.
      if (!s.destroyed && s.writable) {
        socket = s;
        break;
      }
    }
    if (socket) {
      socket.removeListener("error", idleError);
      socket.ref();
      req.reusedSocket = true;
    } else socket = this.connect(key, options.host ?? "localhost", Number(options.port));
    req.onSocket(socket);
  }

  private connect(key: string, host: string, port: number): net.Socket {
    // Nagle off: a request's head and body go out as written, never held for the previous one's ACK.
    const socket = net.connect({ host, port, noDelay: true, keepAlive: true, keepAliveInitialDelay: TCP_KEEPALIVE_MS });
    this.open.add(socket);
    // ClientRequest emits `free` on its socket once the answer has ended and the connection may serve again.
    socket.on("free", () => this.free(key, socket));
    socket.on("close", () => {
      this.open.delete(socket);
      const list = this.idle.get(key);
      const at = list?.indexOf(socket) ?? -1;
      if (list && at >= 0) list.splice(at, 1);
    });
    // The idle time ran out (set in free()): closed if still idle.
    socket.on("timeout", () => {
      if (this.idle.get(key)?.includes(socket)) socket.destroy();
    });
    return socket;
  }

  private free(key: string, socket: Held): void {
    const req = socket._httpMessage;
    const timeout = idleTimeoutMs(req?.res?.rawHeaders);
    if (!socket.writable || !req?.shouldKeepAlive || timeout === undefined) {
      socket.destroy();
      return;
    }
    socket._httpMessage = null;
    socket.unref();
    if (socket.timeout !== timeout) socket.setTimeout(timeout);
    socket.once("error", idleError);
    let list = this.idle.get(key);
    if (!list) {
      list = [];
      this.idle.set(key, list);
    }
    list.push(socket);
  }

  override destroy(): void {
    for (const socket of this.open) socket.destroy();
    this.idle.clear();
  }
}
