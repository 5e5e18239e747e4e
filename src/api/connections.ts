// Client connections: at most `maxConnections` open at once in total and `maxConnectionsPerAddress`
// from one client address, so that one address holding thousands of idle sockets leaves the
// difference (the reserve) to everyone else. Refused connections are closed at once: answering
// them would cost the very resources a flood is after. Slow or silent clients are closed by Node's
// own header timeout (set in app.ts), checked every second.
import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "pino";

export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/**
 * The key connections are counted under: the IPv4 address, or the /64 network of an IPv6 one
 * (one host commonly has a whole /64 to pick addresses from).
 */
export function addressKey(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1] as string;
  if (!address.includes(":")) return address;
  const [head = "", tail = ""] = address.toLowerCase().split("::", 2);
  const left = head === "" ? [] : head.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::") ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/** Counts open connections per address; refuses one over the cap. */
export class ConnectionCounter {
  private readonly open = new Map<string, number>();
  refused = 0;

  constructor(private readonly perAddress: number) {}

  /** Takes a slot for the address; false if it already holds its share. */
  admit(key: string): boolean {
    const n = this.open.get(key) ?? 0;
    if (n >= this.perAddress) {
      this.refused += 1;
      return false;
    }
    this.open.set(key, n + 1);
    return true;
  }

  release(key: string): void {
    const n = (this.open.get(key) ?? 1) - 1;
    if (n <= 0) this.open.delete(key);
    else this.open.set(key, n);
  }

  count(key: string): number {
    return this.open.get(key) ?? 0;
  }
}

/** How often refusals are logged at most: a flood must not become a flood of log lines. */
const LOG_EVERY_MS = 10_000;

/** What the limiter reports, for metrics. */
export interface ConnectionEvents {
  refused(reason: "per_address" | "total"): void;
  opened(): void;
  closed(): void;
}

export function limitConnections(server: Server, limits: ConnectionLimits, log: Logger, events?: ConnectionEvents): ConnectionCounter {
  // Past the total Node closes new connections itself, before any 'connection' listener runs.
  server.maxConnections = limits.maxConnections;
  server.on("drop", () => events?.refused("total"));
  // accept() failing (EMFILE when the process is out of descriptors) is an 'error' on the listening
  // server, which Fastify stops listening for once it listens: unheard, it would end the process.
  let lastAcceptLog = 0;
  server.on("error", (err: NodeJS.ErrnoException) => {
    const now = Date.now();
    if (now - lastAcceptLog < LOG_EVERY_MS) return;
    lastAcceptLog = now;
    log.error({ err: err.message, code: err.code }, "accepting a connection failed");
  });
  const counter = new ConnectionCounter(limits.maxConnectionsPerAddress);
  let lastLog = 0;
  let refusedSinceLog = 0;
  server.on("connection", (socket: Socket) => {
    const key = addressKey(socket.remoteAddress);
    if (!counter.admit(key)) {
      socket.destroy();
      events?.refused("per_address");
      refusedSinceLog += 1;
      const now = Date.now();
      if (now - lastLog >= LOG_EVERY_MS) {
        log.warn(
          { address: key, refused: refusedSinceLog, per_address: limits.maxConnectionsPerAddress },
          "connections refused: the address holds its share of connections",
        );
        lastLog = now;
        refusedSinceLog = 0;
      }
      return;
    }
    events?.opened();
    socket.once("close", () => {
      counter.release(key);
      events?.closed();
    });
  });
  return counter;
}
