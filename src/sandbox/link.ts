// The channel to one sandbox: has the spawner (./spawner.ts) start its bubblewrap process (via the
// cgroup-joining launcher) and speaks the supervisor protocol (./protocol.ts) over the socket that
// is the process's stdin/stdout. Nothing user code prints travels here except inside `out` frames,
// which the supervisor tags by request id. Every request has a deadline, writes wait for the
// socket to drain past a bound, and frames from the sandbox are size-checked before they are buffered.
import crypto from "node:crypto";
import { EventEmitter } from "node:events";
import type net from "node:net";
import { ApiError } from "../errors.js";
import { type Event, encodeRequest, FrameDecoder, type Reply, type Request } from "./protocol.js";
import type { TemplateRoot } from "./bwrap.js";
import type { LaunchHandlers, Spawner } from "./spawner.js";
import { resync } from "./resync.js";

/** Bytes queued towards the sandbox beyond which a writer waits for the pipe to drain. */
const MAX_PENDING = 4 * 2 ** 20;
/** How long a request waits for its answer unless it says otherwise. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** What a client is told to wait before retrying a request the sandbox did not answer. */
const RETRY_AFTER_S = 5;

export interface LinkOptions {
  /** The sandbox's name (a re-attaching API process adopts its process by it). */
  name: string;
  uid: number;
  workspace: string;
  tmpMb: number;
  seccomp: Buffer;
  cgroupProcs: string[];
  /** A custom template's root filesystem; absent, the host's system view. */
  root?: TemplateRoot;
  spawner: Spawner;
  onLog?: (line: string) => void;
  /**
   * Take over the running process of this name that the sandbox host kept from an earlier API
   * process (Spawner.canAdopt) instead of starting one: `ready` once its stream is in step again.
   */
  adopt?: boolean;
}

/** How long an adopted sandbox's supervisor has to answer the resync (its process is restarted otherwise). */
const RESYNC_MS = 3000;

export interface RequestOptions {
  /** Deadline for the answer; REQUEST_TIMEOUT_MS by default. */
  timeoutMs?: number;
}

export const unresponsive = () =>
  new ApiError(
    "sandbox_unresponsive",
    "The sandbox did not answer in time (its supervisor is stopped or overloaded); retry later, or kill the sandbox",
    RETRY_AFTER_S,
  );

const GONE: Reply = { ev: "gone" };

interface Queued {
  id: string;
  req: Request;
  body?: Buffer;
}

export class SupervisorLink extends EventEmitter {
  private readonly spawner: Spawner;
  /** The spawner's name for the sandbox process. */
  private readonly launchId: number;
  /** The supervisor's stream, once the spawner has handed it over (requests queue until then). */
  private socket: net.Socket | undefined;
  private processPid: number | undefined;
  private readonly exit: Promise<void>;
  private readonly decoder = new FrameDecoder();
  private readonly waiters = new Map<string, (reply: Reply) => void>();
  private readonly streams = new Map<string, (reply: Reply) => void>();
  private readonly queue: Queued[] = [];
  private seq = 0;
  /**
   * Request ids are `<prefix><n>`: an adopted link's prefix is its own, so no answer to a request of
   * the earlier API process (whose ids were r1, r2, …) can be taken for one of this process's.
   */
  private readonly idPrefix: string;
  /** A request outlived its deadline and nothing has been heard from the sandbox since. */
  private stalled = false;
  private probing = false;
  closed = false;
  /** The supervisor's pid inside the sandbox (from its `ready`). */
  supervisorPid = 0;
  /** How the sandbox process ended (`exit code N` or `signal S`), once it has. */
  exitStatus: string | undefined;
  readonly ready: Promise<void>;

  constructor(opts: LinkOptions) {
    super();
    this.spawner = opts.spawner;
    let exited!: () => void;
    this.exit = new Promise((resolve) => {
      exited = resolve;
    });
    let startFailed!: (err: Error) => void;
    const failed = new Promise<never>((_, reject) => {
      startFailed = reject;
    });
    const handlers: LaunchHandlers = {
      onLog: opts.onLog,
      onExit: (code, signal) => {
        this.exitStatus = signal ? `signal ${signal}` : `exit code ${code}`;
        startFailed(new Error(`sandbox process exited during start (${code ?? signal})`));
        this.onExit();
        exited();
      },
    };
    const adopted = opts.adopt ? this.spawner.adopt(opts.name, handlers) : undefined;
    if (adopted) {
      this.launchId = adopted.id;
      this.processPid = adopted.pid;
      this.idPrefix = `r${crypto.randomBytes(4).toString("hex")}.`;
      const inStep = resync(adopted.socket, RESYNC_MS).then((rest) => {
        if (this.closed) return;
        this.use(adopted.socket, opts.onLog);
        if (rest.length) this.onData(rest, opts.onLog);
      });
      this.ready = Promise.race([inStep, failed]);
      this.ready.catch(() => {});
      return;
    }
    this.idPrefix = "r";
    const { id, started } = this.spawner.launch(opts, handlers);
    this.launchId = id;
    started.then(
      ({ pid, socket }) => {
        this.processPid = pid;
        if (this.closed) {
          socket.destroy();
          return;
        }
        this.use(socket, opts.onLog);
      },
      (err: Error) => startFailed(err),
    );
    const ready = new Promise<void>((resolve) => {
      const onReady = (event: Event) => {
        if (event.ev === "ready") {
          this.supervisorPid = event.pid;
          this.off("event", onReady);
          resolve();
        }
      };
      this.on("event", onReady);
    });
    this.ready = Promise.race([ready, failed]);
    this.ready.catch(() => {});
  }

  /** From now on requests go to `socket` and its events are read. */
  private use(socket: net.Socket, onLog?: (line: string) => void): void {
    this.socket = socket;
    socket.on("error", () => {});
    socket.on("data", (chunk: Buffer) => this.onData(chunk, onLog));
    socket.resume();
    this.flushQueue();
  }

  private onExit(): void {
    this.closed = true;
    for (const [, w] of this.waiters) w(GONE);
    for (const [, s] of this.streams) s(GONE);
    this.waiters.clear();
    this.streams.clear();
    // Whatever is still queued towards the dead process is dropped now, not when the object goes.
    this.queue.length = 0;
    this.socket?.destroy();
    this.emit("exit");
  }

  get pid(): number | undefined {
    return this.processPid;
  }

  private onData(chunk: Buffer, onLog?: (line: string) => void): void {
    let events: Event[];
    try {
      events = this.decoder.push(chunk);
    } catch (err) {
      onLog?.(`sandbox protocol violation: ${(err as Error).message}`);
      this.kill();
      return;
    }
    this.stalled = false;
    for (const event of events) this.dispatch(event);
  }

  private dispatch(event: Event): void {
    if (event.ev !== "ready") {
      const stream = this.streams.get(event.id);
      if (stream) {
        stream(event);
        return;
      }
      const waiter = this.waiters.get(event.id);
      if (waiter) {
        this.waiters.delete(event.id);
        waiter(event);
        return;
      }
    }
    this.emit("event", event);
  }

  /**
   * Writes a frame now, or queues it behind earlier ones while more than MAX_PENDING bytes wait
   * for the pipe: frames go out in the order they were asked for, and a stalled sandbox makes
   * writers wait (their deadlines run) instead of the service buffering without limit.
   */
  private send(id: string, req: Request, body?: Buffer): void {
    const socket = this.socket;
    if (socket && this.queue.length === 0 && socket.writableLength <= MAX_PENDING) {
      this.write(socket, id, req, body);
      return;
    }
    this.queue.push({ id, req, body });
    if (socket && this.queue.length === 1) socket.once("drain", this.flushQueue);
  }

  private readonly flushQueue = (): void => {
    const socket = this.socket;
    if (!socket) return;
    while (this.queue.length && socket.writableLength <= MAX_PENDING && !this.closed) {
      const next = this.queue.shift() as Queued;
      // A request whose deadline passed while queued is not sent at all.
      if (this.waiters.has(next.id) || this.streams.has(next.id)) this.write(socket, next.id, next.req, next.body);
    }
    if (this.queue.length && !this.closed) socket.once("drain", this.flushQueue);
  };

  private unqueue(id: string): void {
    const i = this.queue.findIndex((q) => q.id === id);
    if (i >= 0) this.queue.splice(i, 1);
  }

  private write(socket: net.Socket, id: string, req: Request, body?: Buffer): void {
    const parts = encodeRequest(id, req, body);
    if (parts.length === 1) {
      socket.write(parts[0] as Buffer);
      return;
    }
    socket.cork();
    for (const p of parts) socket.write(p);
    socket.uncork();
  }

  nextId(): string {
    this.seq += 1;
    return `${this.idPrefix}${this.seq}`;
  }

  /**
   * One request, one answer (`gone` if the sandbox process ended first). Rejects with
   * sandbox_unresponsive when no answer comes before the deadline, and at once while an earlier
   * request is known to be unanswered (a ping finds out when the sandbox is back).
   */
  async request(req: Request, body?: Buffer, opts: RequestOptions = {}): Promise<Reply> {
    if (this.closed) return GONE;
    if (this.stalled) {
      this.probe();
      throw unresponsive();
    }
    const id = this.nextId();
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        this.unqueue(id);
        this.stalled = true;
        reject(unresponsive());
      }, opts.timeoutMs ?? REQUEST_TIMEOUT_MS);
      this.waiters.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      this.send(id, req, body);
    });
  }

  /** While stalled: one ping at a time, so that any answer (which clears `stalled`) ends the stall. */
  private probe(): void {
    if (this.probing || this.closed) return;
    this.probing = true;
    const id = this.nextId();
    const timer = setTimeout(() => {
      this.waiters.delete(id);
      this.probing = false;
    }, REQUEST_TIMEOUT_MS);
    this.waiters.set(id, () => {
      clearTimeout(timer);
      this.probing = false;
    });
    this.send(id, { op: "ping" });
  }

  /**
   * A request whose answer is a stream of events ending with a terminal one (`done`, `exit`), or
   * `gone` if the sandbox process died first. `onEvent` returns true for the last event. The
   * caller bounds the wait (a run's backstop); `cancel()` stops listening.
   */
  stream(req: Request, body: Buffer | undefined, onEvent: (reply: Reply) => boolean): { cancel: () => void; id: string } {
    const id = this.nextId();
    const cancel = () => {
      this.streams.delete(id);
      this.unqueue(id);
    };
    if (this.closed) {
      onEvent(GONE);
      return { cancel, id };
    }
    this.streams.set(id, (reply) => {
      if (onEvent(reply)) this.streams.delete(id);
    });
    this.send(id, req, body);
    return { cancel, id };
  }

  kill(): void {
    this.spawner.kill(this.launchId);
  }

  exited(): Promise<void> {
    return this.exit;
  }
}
