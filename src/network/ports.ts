// The host's end of a sandbox's port connections: a unix socket the sandbox's relay connects to.
// The relay's first connection ("CTRL") is the control line the host asks for connections on
// ("OPEN <id> <port>"); each answer arrives as a new connection ("DATA <id>", then the bytes of the
// sandbox's 127.0.0.1:<port>) or a "FAIL <id> <reason>" line. Whatever arrives here comes from the
// sandbox and is treated as such: bounded lines, ids that must match an open request, and a
// connection slot (budget.ts) held until the first line says what the connection is, so that a
// sandbox flooding the socket is refused at once instead of holding the service's descriptors.
import crypto from "node:crypto";
import net from "node:net";
import type { Slot } from "./budget.js";
import { readUntil } from "./read-until.js";

const LINE_MAX = 512;
const FIRST_LINE_TIMEOUT_MS = 5000;
const OPEN_TIMEOUT_MS = 5000;
const MAX_PENDING = 256;

export class PortUnavailable extends Error {}

interface Pending {
  resolve(sock: net.Socket): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** Reads one "\n"-terminated line; the bytes after it are pushed back. */
async function firstLine(sock: net.Socket): Promise<string | undefined> {
  const got = await readUntil(sock, "\n", { max: LINE_MAX, timeoutMs: FIRST_LINE_TIMEOUT_MS });
  if (got === undefined || got === "too long") return undefined;
  if (got.after.length) sock.unshift(got.after);
  return got.before.toString("latin1");
}

export class PortBroker {
  readonly server: net.Server;
  private control: net.Socket | undefined;
  private controlWaiters: (() => void)[] = [];
  private readonly pending = new Map<string, Pending>();
  private closed = false;
  /** Connections that have not said what they are yet. */
  private readonly unnamed = new Set<net.Socket>();

  /**
   * `onControlLost`: the relay's control connection ended (the relay or the whole sandbox process
   * restarted). `admit`: a slot for a new connection until its first line is read, or the refusal.
   */
  constructor(
    private readonly onControlLost: () => void = () => {},
    private readonly admit: () => Slot | string = () => ({ release() {} }),
  ) {
    this.server = net.createServer((sock) => {
      sock.on("error", () => sock.destroy());
      const slot = this.admit();
      if (typeof slot === "string") return void sock.destroy();
      this.unnamed.add(sock);
      sock.once("close", () => slot.release());
      void this.accept(sock)
        .catch(() => sock.destroy())
        .finally(() => {
          this.unnamed.delete(sock);
          slot.release();
        });
    });
    // accept() failing (EMFILE) is reported here; the relay retries.
    this.server.on("error", () => {});
  }

  get connected(): boolean {
    return this.control !== undefined && !this.control.destroyed;
  }

  private async accept(sock: net.Socket): Promise<void> {
    const line = await firstLine(sock);
    if (this.closed) return void sock.destroy();
    if (line === "CTRL") return this.setControl(sock);
    const m = line === undefined ? null : /^DATA ([0-9a-f]{32})$/.exec(line);
    const waiting = m ? this.pending.get(m[1] as string) : undefined;
    if (!m || !waiting) return void sock.destroy();
    this.pending.delete(m[1] as string);
    clearTimeout(waiting.timer);
    waiting.resolve(sock);
  }

  private setControl(sock: net.Socket): void {
    this.control?.destroy();
    this.control = sock;
    let buf = "";
    sock.setEncoding("latin1");
    sock.on("data", (chunk: string) => {
      buf += chunk;
      if (buf.length > 64 * 1024) return void sock.destroy();
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const m = /^FAIL ([0-9a-f]{32}) (.{1,300})$/.exec(line);
        const waiting = m ? this.pending.get(m[1] as string) : undefined;
        if (m && waiting) {
          this.pending.delete(m[1] as string);
          clearTimeout(waiting.timer);
          waiting.reject(new PortUnavailable(m[2] as string));
        }
      }
    });
    sock.on("close", () => {
      if (this.control !== sock) return;
      this.control = undefined;
      if (!this.closed) this.onControlLost();
    });
    sock.resume();
    for (const w of this.controlWaiters.splice(0)) w();
  }

  /** Waits up to `ms` for the relay's control connection. */
  waitForControl(ms: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.controlWaiters = this.controlWaiters.filter((w) => w !== wake);
        resolve(false);
      }, ms);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.controlWaiters.push(wake);
    });
  }

  /** A connection to 127.0.0.1:`port` inside the sandbox (the relay must be connected). */
  open(port: number): Promise<net.Socket> {
    const control = this.control;
    if (!control || control.destroyed) return Promise.reject(new PortUnavailable("the sandbox's network relay is not running"));
    if (this.pending.size >= MAX_PENDING) return Promise.reject(new PortUnavailable("too many port connections are being opened at once"));
    const id = crypto.randomBytes(16).toString("hex");
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new PortUnavailable(`port ${port} did not answer within ${OPEN_TIMEOUT_MS / 1000} s`));
      }, OPEN_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      control.write(`OPEN ${id} ${port}\n`);
    });
  }

  close(): void {
    this.closed = true;
    this.control?.destroy();
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new PortUnavailable("the sandbox ended"));
      this.pending.delete(id);
    }
    this.server.close();
    for (const sock of this.unnamed) sock.destroy();
  }
}
