// The service's side of the process that holds its sandboxes, and turns its messages
// (./spawner-protocol.ts) into launches, kills and execs. That process is either the sandbox host
// this API process runs under (./host-main.ts: AGENTBOX_SANDBOX_HOST=1 and an IPC channel to the
// parent), which outlives the API process and hands each sandbox it holds to the next one (see
// adopt()), or, for an API process started on its own, a spawner it forks (./spawner-main.ts) and
// restarts if it dies (its sandboxes die with it). Each sandbox's byte stream to its supervisor
// arrives as a socket handle with its `launched` (or `alive`) event.
import type { TemplateRoot } from "./bwrap.js";
import { type ChildProcess, fork } from "node:child_process";
import fs from "node:fs";
import type net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SpawnerEvent, SpawnerRequest } from "./spawner-protocol.js";

export interface LaunchOptions {
  /** The sandbox's name: a re-attaching API process adopts the process by it. */
  name: string;
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

/** A sandbox process a sandbox host held from an earlier API process, taken over by this one. */
export interface Adopted extends Launched {
  id: number;
}

interface Pending {
  handlers: LaunchHandlers;
  resolve(l: Launched): void;
  reject(err: Error): void;
  pid?: number;
  socket?: net.Socket;
  settled: boolean;
}

/** What the other process is reached through: a forked spawner, or the sandbox host (this process's parent). */
interface Channel {
  readonly connected: boolean;
  send(req: SpawnerRequest): void;
}

/** The file an API process under a sandbox host writes its pid to, in the data dir (what a test kills). */
export const API_PID_FILE = "api.pid";

/** The spawner's entry beside this file: .ts when the service runs from source, .js when compiled. */
function entry(): string {
  const here = fileURLToPath(import.meta.url);
  return path.join(path.dirname(here), `spawner-main${path.extname(here)}`);
}

/** Only the options that load code (the TypeScript loader); not profilers or inspectors. */
export function loaderArgs(argv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--import" || a === "--loader" || a === "--experimental-loader") out.push(a, argv[++i] as string);
    else if (/^--(import|loader|experimental-loader)=/.test(a)) out.push(a);
  }
  return out;
}

/** This process runs under a sandbox host (./host-main.ts). */
export function underSandboxHost(): boolean {
  return process.env.AGENTBOX_SANDBOX_HOST === "1" && typeof process.send === "function";
}

export class Spawner {
  private child: ChildProcess | undefined;
  private channel: Channel | undefined;
  private readonly launches = new Map<number, Pending>();
  private readonly execs = new Map<number, { resolve(): void; reject(err: Error): void }>();
  /** Sandbox processes a sandbox host held from an earlier API process, by sandbox name, until adopted or released. */
  private readonly adoptable = new Map<string, Adopted>();
  private seq = 0;
  /** This API process took over from an earlier one under the same sandbox host (its `ready` said so). */
  reattached = false;
  private closed = false;
  /** The current spawner or host has said it takes requests; until then requests wait here. */
  private ready = false;
  private backlog: SpawnerRequest[] = [];
  /** Resolves once requests are taken (under a host: once its sandboxes are known). */
  readonly listening: Promise<void>;
  private onReady: () => void = () => {};
  /** Adoptable sandbox processes killed by release(), until their exit is seen. */
  private readonly releasing = new Map<number, () => void>();

  /**
   * `dir`: the service's private data directory (under a sandbox host, its pid file goes there).
   */
  constructor(
    dir: string,
    private readonly onError: (err: Error, what: string) => void = () => {},
    /** Told the pid of each spawner process started (the first and any replacement); not called under a host. */
    private readonly onStarted: (pid: number) => void = () => {},
  ) {
    this.listening = new Promise((resolve) => {
      this.onReady = resolve;
    });
    if (underSandboxHost()) this.attach(dir);
    else this.start();
  }

  /** Under a sandbox host: its channel is this process's own; it answers hello with its sandboxes. */
  private attach(dir: string): void {
    this.channel = {
      get connected() {
        return process.connected;
      },
      send: (req) => process.send?.(req),
    };
    process.on("message", (event: SpawnerEvent, handle?: unknown) => this.onMessage(event, handle));
    // The host ended (killed: a graceful stop ends this process first): its sandboxes died with it,
    // and nothing here can start one without it.
    process.on("disconnect", () => {
      if (this.closed) return;
      this.onError(new Error("the sandbox host ended, and its sandboxes with it; exiting"), "sandbox host");
      process.exit(1);
    });
    fs.writeFileSync(path.join(dir, API_PID_FILE), `${process.pid}\n`);
    process.send?.({ op: "hello" } satisfies SpawnerRequest);
  }

  private start(): void {
    const child = fork(entry(), [], { execArgv: loaderArgs(), stdio: ["ignore", "inherit", "inherit", "ipc"], serialization: "json" });
    this.child = child;
    this.channel = child;
    if (child.pid !== undefined) this.onStarted(child.pid);
    this.ready = false;
    child.on("message", (event: SpawnerEvent, handle?: unknown) => this.onMessage(event, handle));
    child.on("error", (err) => this.onError(err, "spawner"));
    child.once("exit", (code, signal) => {
      if (this.child === child) {
        this.child = undefined;
        this.channel = undefined;
      }
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

  private onMessage(event: SpawnerEvent, handle: unknown): void {
    // Only a socket ever comes with an event; anything else is not ours to keep.
    const socket = isSocket(handle) ? handle : undefined;
    switch (event.ev) {
      case "ready":
        if (typeof event.next === "number" && event.next > this.seq) this.seq = event.next;
        if (typeof event.next === "number" && event.next > 1) this.reattached = true;
        this.ready = true;
        for (const req of this.backlog.splice(0)) this.channel?.send(req);
        this.onReady();
        return;
      case "alive":
        if (!socket) return;
        socket.on("error", () => {});
        socket.pause();
        this.adoptable.set(event.name, { id: event.id, pid: event.pid, socket });
        return;
      case "launched": {
        const pending = this.launches.get(event.id);
        if (!pending) {
          socket?.destroy();
          return;
        }
        if (event.error !== undefined || event.pid === undefined || !socket) {
          this.finish(event.id, null, null, new Error(`sandbox process not started: ${event.error ?? "no stream"}`));
          return;
        }
        socket.on("error", () => {});
        socket.pause();
        pending.pid = event.pid;
        pending.socket = socket;
        this.settle(event.id);
        return;
      }
      case "go":
        return;
      default:
        this.onEvent(event);
    }
  }

  private send(req: SpawnerRequest): boolean {
    const channel = this.channel;
    if (!channel?.connected) return false;
    if (this.ready) channel.send(req);
    else this.backlog.push(req);
    return true;
  }

  /** The spawner's pid (for the measurements in docs/design.md); the host's under a sandbox host. */
  get pid(): number | undefined {
    return this.child ? this.child.pid : underSandboxHost() ? process.ppid : undefined;
  }

  private onEvent(event: Extract<SpawnerEvent, { ev: "done" | "log" | "exit" }>): void {
    if (event.ev === "done") {
      const e = this.execs.get(event.id);
      if (!e) return;
      this.execs.delete(event.id);
      if (event.error === undefined) e.resolve();
      else e.reject(new Error(event.error));
      return;
    }
    if (event.ev === "exit") {
      this.releasing.get(event.id)?.();
      for (const [name, a] of this.adoptable)
        if (a.id === event.id) {
          this.adoptable.delete(name);
          a.socket.destroy();
        }
    }
    const pending = this.launches.get(event.id);
    if (!pending) return;
    if (event.ev === "log") pending.handlers.onLog?.(event.line);
    else this.finish(event.id, event.code, event.signal);
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
    const started = new Promise<Launched>((resolve, reject) => {
      this.launches.set(id, { handlers, resolve, reject, settled: false });
    });
    started.catch(() => {});
    const sent = this.send({
      op: "launch",
      id,
      name: opts.name,
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

  /** A sandbox process of this name the sandbox host held from an earlier API process is alive. */
  canAdopt(name: string): boolean {
    return this.adoptable.has(name);
  }

  /**
   * Takes over the sandbox process of this name that the sandbox host held from an earlier API
   * process: from now on its exit and log lines go to `handlers`. Undefined when there is none.
   */
  adopt(name: string, handlers: LaunchHandlers): Adopted | undefined {
    const a = this.adoptable.get(name);
    if (!a) return undefined;
    this.adoptable.delete(name);
    this.launches.set(a.id, { handlers, resolve: () => {}, reject: () => {}, pid: a.pid, socket: a.socket, settled: true });
    return a;
  }

  /**
   * Kills the sandbox processes of an earlier API process that nothing adopted (its warm pool, a
   * sandbox that ended meanwhile) and waits for them to end (at most `waitMs`).
   */
  async releaseUnadopted(waitMs = 5000): Promise<void> {
    const gone: Promise<void>[] = [];
    for (const [name, a] of this.adoptable) {
      this.adoptable.delete(name);
      a.socket.destroy();
      gone.push(
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          this.releasing.set(a.id, () => {
            clearTimeout(timer);
            this.releasing.delete(a.id);
            resolve();
          });
        }),
      );
      this.send({ op: "kill", id: a.id });
    }
    await Promise.all(gone);
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

  /**
   * Stops the spawner (its sandboxes die with it). Under a sandbox host: tells it the whole service
   * is stopping, so that it ends (with whatever sandbox is left) once this process has exited.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (!this.child) {
      if (this.channel?.connected) this.channel.send({ op: "stop" });
      return;
    }
    const child = this.child;
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once("exit", r));
      child.disconnect();
      await gone;
    }
  }
}

function isSocket(handle: unknown): handle is net.Socket {
  return typeof handle === "object" && handle !== null && typeof (handle as net.Socket).write === "function";
}
