// The service's side of the spawner (./spawner-main.ts): starts it, restarts it if it dies, and
// turns its messages (./spawner-protocol.ts) into launches, kills and execs. Each sandbox's byte
// stream to its supervisor is a unix socket the spawner connects to a private listener here (a
// one-time token line first, so the connection is matched to its sandbox) and hands to the
// sandbox process as its stdin/stdout.
import type { TemplateRoot } from "./bwrap.js";
import { type ChildProcess, fork } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SpawnerEvent, SpawnerRequest } from "./spawner-protocol.js";

/** A token line is this long (hex); a connection that sends anything else is dropped. */
const TOKEN_BYTES = 16;
/** A connection that has not sent its token line by then is dropped. */
const TOKEN_WAIT_MS = 10_000;
/** A unix socket's path must fit in 108 bytes (sun_path). */
const MAX_SOCKET_PATH = 100;

export interface LaunchOptions {
  uid: number;
  workspace: string;
  tmpMb: number;
  seccomp: Buffer;
  cgroupProcs: string[];
  /** A custom template's root filesystem; absent, the host's system view. */
  root?: TemplateRoot;
}

export interface LaunchHandlers {
  onLog?: (line: string) => void;
  /** The sandbox process ended (or could not be started, or the spawner died). Called once. */
  onExit: (code: number | null, signal: string | null) => void;
}

/** A sandbox process the spawner started: its pid and its supervisor's byte stream. */
export interface Launched {
  pid: number;
  socket: net.Socket;
}

interface Pending {
  handlers: LaunchHandlers;
  resolve(l: Launched): void;
  reject(err: Error): void;
  pid?: number;
  socket?: net.Socket;
  token: string;
  settled: boolean;
}

/** The spawner's entry beside this file: .ts when the service runs from source, .js when compiled. */
function entry(): string {
  const here = fileURLToPath(import.meta.url);
  return path.join(path.dirname(here), `spawner-main${path.extname(here)}`);
}

/** Only the options that load code (the TypeScript loader); not profilers or inspectors. */
function loaderArgs(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--import" || a === "--loader" || a === "--experimental-loader") out.push(a, argv[++i] as string);
    else if (/^--(import|loader|experimental-loader)=/.test(a)) out.push(a);
  }
  return out;
}

export class Spawner {
  private child: ChildProcess | undefined;
  private readonly server: net.Server;
  /** A temporary directory of the socket's own (removed at close), when the data dir's path is too long. */
  private readonly dir: string | undefined;
  private readonly socketPath: string;
  private readonly launches = new Map<number, Pending>();
  private readonly byToken = new Map<string, number>();
  private readonly execs = new Map<number, { resolve(): void; reject(err: Error): void }>();
  private seq = 0;
  private closed = false;
  /** The current spawner has said it listens; until then requests wait here. */
  private ready = false;
  private backlog: SpawnerRequest[] = [];
  readonly listening: Promise<void>;

  /**
   * `dir`: the service's private data directory, where the socket is (the same path after a crash,
   * so nothing is left behind); a private temporary directory if that path is too long for a socket.
   */
  constructor(
    dir: string,
    private readonly onError: (err: Error, what: string) => void = () => {},
    /** Told the pid of each spawner process started (the first and any replacement). */
    private readonly onStarted: (pid: number) => void = () => {},
  ) {
    const inData = path.join(dir, "spawner.sock");
    if (Buffer.byteLength(inData) < MAX_SOCKET_PATH) {
      this.dir = undefined;
      this.socketPath = inData;
      // A socket left by a crash of the service.
      fs.rmSync(inData, { force: true });
    } else {
      this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-spawn-"));
      fs.chmodSync(this.dir, 0o700);
      this.socketPath = path.join(this.dir, "s");
    }
    this.server = net.createServer((socket) => this.accept(socket));
    this.listening = new Promise((resolve, reject) => {
      this.server.once("error", reject);
      // Only root (the service and its spawner) may connect to it.
      this.server.listen(this.socketPath, () => {
        fs.chmodSync(this.socketPath, 0o600);
        resolve();
      });
    });
    this.listening.catch((err) => this.onError(err, "spawner socket"));
    // After listening, an accept failure (e.g. out of descriptors) is reported here: logged, never fatal.
    this.server.on("error", (err) => this.onError(err, "spawner socket"));
    this.start();
  }

  private start(): void {
    const child = fork(entry(), [], { execArgv: loaderArgs(), stdio: ["ignore", "inherit", "inherit", "ipc"], serialization: "json" });
    this.child = child;
    if (child.pid !== undefined) this.onStarted(child.pid);
    this.ready = false;
    child.on("message", (event: SpawnerEvent) => {
      if (event.ev !== "ready") return this.onEvent(event);
      this.ready = true;
      for (const req of this.backlog.splice(0)) child.send(req);
    });
    child.on("error", (err) => this.onError(err, "spawner"));
    child.once("exit", (code, signal) => {
      if (this.child === child) this.child = undefined;
      this.backlog = [];
      // Its sandboxes died with it (die-with-parent), and no answer to a pending exec will come.
      for (const id of [...this.launches.keys()]) this.finish(id, null, "SIGKILL", new Error("the spawner process ended"));
      for (const [id, e] of this.execs) {
        this.execs.delete(id);
        e.reject(new Error("the spawner process ended"));
      }
      if (!this.closed) {
        this.onError(new Error(`spawner exited (${code ?? signal}); starting a new one`), "spawner");
        this.start();
      }
    });
  }

  private send(req: SpawnerRequest): boolean {
    const child = this.child;
    if (!child?.connected) return false;
    if (this.ready) child.send(req);
    else this.backlog.push(req);
    return true;
  }

  /** The spawner's pid (for the measurements in docs/design.md). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  private accept(socket: net.Socket): void {
    socket.on("error", () => {});
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), TOKEN_WAIT_MS);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const nl = buf.indexOf(10);
      if (nl < 0) {
        if (buf.length > TOKEN_BYTES * 2 + 1) socket.destroy();
        return;
      }
      clearTimeout(timer);
      socket.off("data", onData);
      socket.pause();
      const id = this.byToken.get(buf.subarray(0, nl).toString());
      const pending = id === undefined ? undefined : this.launches.get(id);
      if (id === undefined || !pending || pending.socket) {
        socket.destroy();
        return;
      }
      this.byToken.delete(pending.token);
      // Whatever the supervisor already sent after the token is the start of its stream.
      if (nl + 1 < buf.length) socket.unshift(buf.subarray(nl + 1));
      pending.socket = socket;
      this.settle(id);
    };
    socket.on("data", onData);
  }

  private onEvent(event: Exclude<SpawnerEvent, { ev: "ready" }>): void {
    if (event.ev === "done") {
      const e = this.execs.get(event.id);
      if (!e) return;
      this.execs.delete(event.id);
      if (event.error === undefined) e.resolve();
      else e.reject(new Error(event.error));
      return;
    }
    const pending = this.launches.get(event.id);
    if (!pending) return;
    if (event.ev === "log") pending.handlers.onLog?.(event.line);
    else if (event.ev === "exit") this.finish(event.id, event.code, event.signal);
    else if (event.error !== undefined) this.finish(event.id, null, null, new Error(`sandbox process not started: ${event.error}`));
    else {
      pending.pid = event.pid;
      this.settle(event.id);
    }
  }

  /** Hands the launch over once both its pid and its socket are here. */
  private settle(id: number): void {
    const p = this.launches.get(id);
    if (!p || p.settled || p.pid === undefined || !p.socket) return;
    p.settled = true;
    p.resolve({ pid: p.pid, socket: p.socket });
  }

  private finish(id: number, code: number | null, signal: string | null, err?: Error): void {
    const p = this.launches.get(id);
    if (!p) return;
    this.launches.delete(id);
    this.byToken.delete(p.token);
    if (!p.settled) {
      p.settled = true;
      p.socket?.destroy();
      p.reject(err ?? new Error(`sandbox process exited during start (${code ?? signal})`));
    }
    p.handlers.onExit(code, signal);
  }

  /**
   * Starts a sandbox process. `started` resolves with its pid and its supervisor's stream;
   * `handlers.onExit` is called when it ends (also when it never started).
   */
  launch(opts: LaunchOptions, handlers: LaunchHandlers): { id: number; started: Promise<Launched> } {
    this.seq += 1;
    const id = this.seq;
    const token = crypto.randomBytes(TOKEN_BYTES).toString("hex");
    const started = new Promise<Launched>((resolve, reject) => {
      this.launches.set(id, { handlers, resolve, reject, token, settled: false });
    });
    started.catch(() => {});
    this.byToken.set(token, id);
    const sent = this.send({
      op: "launch",
      id,
      socket: this.socketPath,
      token,
      uid: opts.uid,
      workspace: opts.workspace,
      tmpMb: opts.tmpMb,
      cgroupProcs: opts.cgroupProcs,
      seccomp: opts.seccomp.toString("base64"),
      ...(opts.root ? { root: opts.root } : {}),
    });
    // Asynchronously, like every other outcome: the caller has its handle first.
    if (!sent) queueMicrotask(() => this.finish(id, null, null, new Error("the spawner process is not running")));
    return { id, started };
  }

  /** SIGKILLs a sandbox process the spawner started (nothing if it has ended). */
  kill(id: number): void {
    if (this.launches.has(id)) this.send({ op: "kill", id });
  }

  /** Runs a program to its end in the spawner (mount, umount); rejects with its error. */
  exec(file: string, args: string[]): Promise<void> {
    this.seq += 1;
    const id = this.seq;
    return new Promise<void>((resolve, reject) => {
      this.execs.set(id, { resolve, reject });
      if (!this.send({ op: "exec", id, file, args })) {
        this.execs.delete(id);
        reject(new Error("the spawner process is not running"));
      }
    });
  }

  /** Stops the spawner (its sandboxes die with it) and the listener. */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once("exit", r));
      child.disconnect();
      await gone;
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    fs.rmSync(this.socketPath, { force: true });
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
