// The egress proxy: one unix socket per sandbox (its relay forwards the sandbox's proxy connections
// there, so the socket itself says which sandbox a connection is from). Speaks HTTP proxy: CONNECT
// (HTTPS and any TCP) and absolute-form http:// requests. Every connection: resolve the name here,
// check the name and every address against the sandbox's policy, connect to the checked address
// (never a second lookup), log it, count its bytes. A refusal is a 403 whose status line says why.
// Every socket here is the sandbox's to break: each has its error handled from the moment it
// exists, and a connection over the caps is destroyed at once (budget.ts).
import net from "node:net";
import type { Slot } from "./budget.js";
import type { Decision } from "./policy.js";
import { readUntil } from "./read-until.js";
import type { Resolved } from "./resolver.js";

const MAX_HEAD = 16 * 1024;
const HEAD_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;
const IDLE_TIMEOUT_MS = 10 * 60_000;
/** How long an answered connection may stay open for its peer to read the answer and close. */
const ANSWER_LINGER_MS = 5000;

export interface EgressLogEntry {
  time: string;
  host: string;
  port: number;
  /** The address connected to (or the first one resolved, for a refusal); null if none. */
  address: string | null;
  allowed: boolean;
  reason: string;
  /** Bytes from the sandbox out / from the internet in. */
  bytes_out: number;
  bytes_in: number;
}

/** What the proxy asks of the sandbox it serves. */
export interface EgressContext {
  resolve(host: string): Promise<Resolved>;
  /** The decision when the name alone settles it (no lookup then). */
  decideByName(host: string): Decision | undefined;
  /** The decision under the sandbox's policy now (a policy change applies to the next connection). */
  decide(host: string, addresses: string[], trusted: string[]): Decision;
  /** A new entry in the sandbox's log; the proxy updates its byte counts as they flow. */
  record(entry: EgressLogEntry): void;
  /** Bytes moved (counted once each, when they pass). */
  count(bytesOut: number, bytesIn: number): void;
  /** A slot for a new connection, or why there is none (the connection is then destroyed at once). */
  admit(): Slot | string;
}

/** The proxy of one sandbox: its listening socket, and close() which also ends every connection it holds. */
export interface EgressProxy {
  server: net.Server;
  close(): void;
}

/** The request line and headers of a proxy request. */
interface Head {
  method: string;
  host: string;
  port: number;
  /** For absolute-form requests: the request to send upstream. */
  upstreamHead?: Buffer;
}

function response(status: number, message: string): string {
  const text = message.replace(/[\r\n]+/g, " ");
  const body = `${text}\n`;
  return (
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-AgentBox-Egress: ${status === 403 ? "denied" : "error"}\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * Answers and closes: the answer and a FIN go out, whatever the peer still sends is dropped, and
 * the socket is destroyed when the peer closes too or after ANSWER_LINGER_MS (the server is
 * half-open, so a peer that never closes would otherwise keep it forever).
 */
function answer(sock: net.Socket, status: number, message: string): void {
  if (sock.destroyed) return;
  const timer = setTimeout(() => sock.destroy(), ANSWER_LINGER_MS);
  sock.once("close", () => clearTimeout(timer));
  sock.once("end", () => sock.destroy());
  sock.resume();
  sock.end(response(status, message));
}

/** Parses the head; a string is the refusal to answer with 400. */
function parseHead(raw: Buffer): Head | string {
  const text = raw.toString("latin1");
  const lines = text.split("\r\n");
  const m = /^([A-Z]{1,20}) (\S{1,8000}) HTTP\/(1\.[01])$/.exec(lines[0] ?? "");
  if (!m) return "malformed proxy request";
  const [, method, target, version] = m as unknown as [string, string, string, string];
  if (method === "CONNECT") {
    const hp = /^(?:\[([0-9a-fA-F:.]+)\]|([^:/[\]]+)):(\d{1,5})$/.exec(target);
    const port = Number(hp?.[3]);
    if (!hp || port < 1 || port > 65535) return `CONNECT needs host:port, got '${target.slice(0, 200)}'`;
    return { method, host: (hp[1] ?? hp[2]) as string, port };
  }
  if (target.startsWith("https://")) return "send https:// requests through CONNECT";
  if (!target.startsWith("http://")) return "this is a proxy: requests need an absolute http:// URL or CONNECT";
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return `malformed URL '${target.slice(0, 200)}'`;
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = url.port ? Number(url.port) : 80;
  // Upstream gets an origin-form request on a connection of its own, closed after the response.
  const keep = lines.slice(1).filter((l) => l !== "" && !/^(proxy-connection|proxy-authorization|connection|keep-alive)\s*:/i.test(l));
  const head = `${method} ${url.pathname}${url.search} HTTP/${version}\r\n${keep.join("\r\n")}${keep.length ? "\r\n" : ""}Connection: close\r\n\r\n`;
  return { method, host, port, upstreamHead: Buffer.from(head, "latin1") };
}

async function connectAny(addresses: string[], port: number): Promise<{ sock: net.Socket; address: string } | { error: string }> {
  let error = "no address";
  for (const address of addresses) {
    const result = await new Promise<net.Socket | string>((resolve) => {
      const sock = net.connect({ host: address, port });
      // Settles the attempt on the first error; any later one (after the caller took the socket
      // over, before or after it added its own listener) only destroys the socket.
      sock.on("error", (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        sock.destroy();
        resolve(err.code ?? err.message);
      });
      const timer = setTimeout(() => {
        sock.destroy();
        resolve("timed out");
      }, CONNECT_TIMEOUT_MS);
      sock.once("connect", () => {
        clearTimeout(timer);
        resolve(sock);
      });
    });
    if (typeof result !== "string") return { sock: result, address };
    error = result;
  }
  return { error };
}

/** Serves one sandbox's egress socket. */
export function egressServer(ctx: EgressContext): EgressProxy {
  const open = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    // First, before anything can fail: a reset or a broken pipe ends this connection only.
    client.on("error", () => client.destroy());
    const slot = ctx.admit();
    if (typeof slot === "string") {
      // Refused at once, without waiting for the peer: a flood must not hold descriptors. The
      // answer goes out if the socket takes it right away, as a courtesy.
      client.write(response(503, `agentbox egress: ${slot}`));
      client.destroy();
      return;
    }
    open.add(client);
    client.once("close", () => {
      open.delete(client);
      slot.release();
    });
    handle(client, ctx).catch(() => client.destroy());
  });
  // accept() failing (EMFILE when the process is out of descriptors) is reported here: the
  // listener stays, the connection is the peer's to retry.
  server.on("error", () => {});
  return {
    server,
    close() {
      server.close();
      for (const sock of open) sock.destroy();
    },
  };
}

async function readHead(client: net.Socket): Promise<{ head: Buffer; rest: Buffer } | undefined> {
  const got = await readUntil(client, "\r\n\r\n", { max: MAX_HEAD, timeoutMs: HEAD_TIMEOUT_MS });
  // An over-long head is answered as a malformed one (an empty head).
  if (got === "too long") return { head: Buffer.alloc(0), rest: Buffer.alloc(0) };
  return got && { head: got.before, rest: got.after };
}

async function handle(client: net.Socket, ctx: EgressContext): Promise<void> {
  const got = await readHead(client);
  if (!got) return void client.destroy();
  const head = parseHead(got.head);
  if (typeof head === "string") return answer(client, 400, `agentbox egress: ${head}`);
  const target = `${head.host}:${head.port}`;
  const early = ctx.decideByName(head.host);
  const resolved: Resolved = early ? { addresses: [], trusted: [] } : await ctx.resolve(head.host);
  const decision = early ?? ctx.decide(head.host, resolved.addresses, resolved.trusted);
  const entry: EgressLogEntry = {
    time: new Date().toISOString(),
    host: head.host,
    port: head.port,
    address: resolved.addresses[0] ?? null,
    allowed: decision.allowed,
    reason: decision.reason,
    bytes_out: 0,
    bytes_in: 0,
  };
  ctx.record(entry);
  if (!decision.allowed) return answer(client, 403, `agentbox egress: ${target} ${decision.reason}`);
  const up = await connectAny(resolved.addresses, resolved.port ?? head.port);
  if ("error" in up) {
    entry.allowed = false;
    entry.reason = `connect failed: ${up.error}`;
    return answer(client, 502, `agentbox egress: could not connect to ${target} (${up.error})`);
  }
  entry.address = up.address;
  const upstream = up.sock;
  upstream.on("error", () => client.destroy());
  if (client.destroyed) return void upstream.destroy();
  upstream.setNoDelay(true);
  client.setNoDelay(true);
  for (const s of [client, upstream]) {
    s.setTimeout(IDLE_TIMEOUT_MS, () => {
      client.destroy();
      upstream.destroy();
    });
  }
  client.on("close", () => upstream.destroy());
  upstream.on("data", (d: Buffer) => {
    entry.bytes_in += d.length;
    ctx.count(0, d.length);
  });
  client.on("data", (d: Buffer) => {
    entry.bytes_out += d.length;
    ctx.count(d.length, 0);
  });
  if (head.upstreamHead) {
    entry.bytes_out += head.upstreamHead.length;
    ctx.count(head.upstreamHead.length, 0);
    upstream.write(head.upstreamHead);
  } else {
    client.write("HTTP/1.1 200 Connection established\r\n\r\n");
  }
  if (got.rest.length) {
    entry.bytes_out += got.rest.length;
    ctx.count(got.rest.length, 0);
    upstream.write(got.rest);
  }
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
}
