// The egress proxy: one unix socket per sandbox (its relay forwards the sandbox's proxy connections
// there, so the socket itself says which sandbox a connection is from). Speaks HTTP proxy: CONNECT
// (HTTPS and any TCP) and absolute-form http:// requests. Every connection: resolve the name here,
// check the name and every address against the sandbox's policy, connect to the checked address
// (never a second lookup), log it, count its bytes. A refusal is a 403 whose status line says why.
import net from "node:net";
import type { Decision } from "./policy.js";
import { readUntil } from "./read-until.js";
import type { Resolved } from "./resolver.js";

const MAX_HEAD = 16 * 1024;
const HEAD_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;
const IDLE_TIMEOUT_MS = 10 * 60_000;

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
  maxConnections: number;
}

/** The request line and headers of a proxy request. */
interface Head {
  method: string;
  host: string;
  port: number;
  /** For absolute-form requests: the request to send upstream. */
  upstreamHead?: Buffer;
}

function answer(sock: net.Socket, status: number, message: string): void {
  const text = message.replace(/[\r\n]+/g, " ");
  const body = `${text}\n`;
  sock.end(
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-AgentBox-Egress: ${status === 403 ? "denied" : "error"}\r\nConnection: close\r\n\r\n${body}`,
  );
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
      const timer = setTimeout(() => {
        sock.destroy();
        resolve("timed out");
      }, CONNECT_TIMEOUT_MS);
      sock.once("connect", () => {
        clearTimeout(timer);
        sock.removeAllListeners("error");
        resolve(sock);
      });
      sock.once("error", (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve(err.code ?? err.message);
      });
    });
    if (typeof result !== "string") return { sock: result, address };
    error = result;
  }
  return { error };
}

/** Serves one sandbox's egress socket. */
export function egressServer(ctx: EgressContext): net.Server {
  let open = 0;
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    if (open >= ctx.maxConnections) {
      answer(client, 503, `agentbox egress: more than ${ctx.maxConnections} connections open at once`);
      return;
    }
    open += 1;
    client.once("close", () => {
      open -= 1;
    });
    client.on("error", () => client.destroy());
    void handle(client, ctx);
  });
  return server;
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
  if (client.destroyed) return void upstream.destroy();
  upstream.setNoDelay(true);
  client.setNoDelay(true);
  for (const s of [client, upstream]) {
    s.setTimeout(IDLE_TIMEOUT_MS, () => {
      client.destroy();
      upstream.destroy();
    });
  }
  upstream.on("error", () => client.destroy());
  client.on("error", () => upstream.destroy());
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
