// The channel to one sandbox: spawns its bubblewrap process (via the cgroup-joining launcher) and
// speaks the supervisor's framed protocol over the process's stdin/stdout. Nothing user code
// prints travels here except inside `out` frames, which the supervisor tags by request id.
import { type ChildProcess, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import type { Readable, Writable } from "node:stream";
import { LAUNCHER, planBwrap } from "./bwrap.js";

export interface Frame {
  header: Record<string, unknown> & { ev?: string; id?: string };
  body: Buffer;
}

/** A frame larger than this from inside a sandbox means the supervisor is broken or hostile. */
const MAX_FRAME = 256 * 2 ** 20;

export interface LinkOptions {
  uid: number;
  workspace: string;
  tmpMb: number;
  seccomp: Buffer;
  cgroupProcs: string[];
  onLog?: (line: string) => void;
}

export class SupervisorLink extends EventEmitter {
  private readonly child: ChildProcess;
  private buf: Buffer = Buffer.alloc(0);
  private readonly waiters = new Map<string, (frame: Frame) => void>();
  private readonly streams = new Map<string, (frame: Frame) => void>();
  private seq = 0;
  closed = false;
  readonly ready: Promise<void>;

  constructor(opts: LinkOptions) {
    super();
    const plan = planBwrap(opts.workspace, opts.tmpMb, opts.seccomp);
    const maxFd = Math.max(...plan.fds.keys());
    const stdio: ("pipe" | "ignore")[] = ["pipe", "pipe", "pipe"];
    for (let fd = 3; fd <= maxFd; fd++) stdio.push(plan.fds.has(fd) ? "pipe" : "ignore");
    this.child = spawn("/bin/sh", ["-c", LAUNCHER, "launch", ...opts.cgroupProcs, "--", ...plan.argv], {
      uid: opts.uid,
      gid: opts.uid,
      env: {},
      cwd: "/",
      stdio,
    });
    for (const [fd, data] of plan.fds) {
      const pipe = this.child.stdio[fd] as Writable;
      pipe.on("error", () => {});
      pipe.end(data);
    }
    const stdout = this.child.stdout as Readable;
    stdout.on("data", (chunk: Buffer) => this.onData(chunk));
    (this.child.stderr as Readable).on("data", (chunk: Buffer) => opts.onLog?.(chunk.toString().trimEnd()));
    (this.child.stdin as Writable).on("error", () => {});
    this.ready = new Promise((resolve, reject) => {
      const onReady = (frame: Frame) => {
        if (frame.header.ev === "ready") {
          this.off("frame", onReady);
          resolve();
        }
      };
      this.on("frame", onReady);
      this.child.once("exit", (code, signal) => reject(new Error(`sandbox process exited during start (${code ?? signal})`)));
      this.child.once("error", reject);
    });
    this.ready.catch(() => {});
    this.child.once("exit", () => {
      this.closed = true;
      const gone: Frame = { header: { ev: "gone" }, body: Buffer.alloc(0) };
      for (const [, w] of this.waiters) w(gone);
      for (const [, s] of this.streams) s(gone);
      this.waiters.clear();
      this.streams.clear();
      this.emit("exit");
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 8) {
      const total = this.buf.readUInt32BE(0);
      const hlen = this.buf.readUInt32BE(4);
      if (total > MAX_FRAME || hlen > total - 4) {
        this.kill();
        return;
      }
      if (this.buf.length < 4 + total) return;
      let header: Frame["header"];
      try {
        header = JSON.parse(this.buf.subarray(8, 8 + hlen).toString());
      } catch {
        this.kill();
        return;
      }
      const body = Buffer.from(this.buf.subarray(8 + hlen, 4 + total));
      this.buf = this.buf.subarray(4 + total);
      this.dispatch({ header, body });
    }
  }

  private dispatch(frame: Frame): void {
    const id = frame.header.id;
    if (typeof id === "string") {
      const stream = this.streams.get(id);
      if (stream) {
        stream(frame);
        return;
      }
      const waiter = this.waiters.get(id);
      if (waiter) {
        this.waiters.delete(id);
        waiter(frame);
        return;
      }
    }
    this.emit("frame", frame);
  }

  private write(header: Record<string, unknown>, body: Buffer = Buffer.alloc(0)): void {
    const h = Buffer.from(JSON.stringify(header));
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32BE(4 + h.length + body.length, 0);
    prefix.writeUInt32BE(h.length, 4);
    (this.child.stdin as Writable).write(body.length ? Buffer.concat([prefix, h, body]) : Buffer.concat([prefix, h]));
  }

  nextId(): string {
    this.seq += 1;
    return `r${this.seq}`;
  }

  /** One request, one answer. */
  request(header: Record<string, unknown>, body?: Buffer): Promise<Frame> {
    const id = this.nextId();
    return new Promise((resolve) => {
      if (this.closed) return resolve({ header: { ev: "gone" }, body: Buffer.alloc(0) });
      this.waiters.set(id, resolve);
      this.write({ ...header, id }, body);
    });
  }

  /**
   * A request whose answer is a stream of frames ending with a terminal event (`done`, `exit`)
   * or `gone` if the sandbox process died first.
   */
  stream(header: Record<string, unknown>, body: Buffer | undefined, onFrame: (frame: Frame) => boolean): void {
    const id = this.nextId();
    if (this.closed) {
      onFrame({ header: { ev: "gone" }, body: Buffer.alloc(0) });
      return;
    }
    this.streams.set(id, (frame) => {
      if (onFrame(frame)) this.streams.delete(id);
    });
    this.write({ ...header, id }, body);
  }

  kill(): void {
    try {
      this.child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }

  exited(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => this.child.once("exit", () => resolve()));
  }
}
