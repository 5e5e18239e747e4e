// One replica of a deployment: a child process serving OpenAI-compatible HTTP on a loopback port,
// in its own memory cgroup. It is health-checked (GET <health path>, every few seconds, and at once
// when a request to it fails), and when it dies or stops answering it is started again after a
// backoff (0.5 s, 1 s, 2 s, ... 30 s; reset once it has served for a minute). A replica that never
// becomes ready `failLimit` times in a row is given up ("failed") with its last words as the reason.
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { OpenAIProvider } from "../inference/openai.js";
import { MemoryLimit } from "./memory-limit.js";

/** What a replica process is started with (AGENTBOX_REPLICA, JSON; src/deployments/replica-main.ts reads it). */
export interface ReplicaSettings {
  modelPath: string;
  /** The model id the replica answers with (the deployment's name). */
  modelName: string;
  port: number;
  /** Listen on this unix socket instead of the port (a replica in its own network namespace). */
  socket?: string;
  contextSize: number;
  parallel: number;
  threads: number | undefined;
  gpu: boolean;
}

export type ReplicaState = "starting" | "ready" | "restarting" | "stopping" | "stopped" | "failed";

/** How to start the replica's process, given the loopback port it must listen on. */
export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** GET this path answers 200 when the replica can serve. */
  healthPath: string;
  /** Files opened here and given to the process as fds 3, 4, ... (it may not be able to open them itself). */
  files?: string[];
  /** Run the process as this uid (and gid); undefined: the service's own. */
  uid?: number;
  /** The replica serves on this unix socket, not on the port (it has no network of its own). */
  socket?: string;
}

export interface ReplicaOptions {
  id: string;
  launch: (port: number) => Launch;
  memoryMb: number;
  startTimeoutMs: number;
  healthIntervalMs: number;
  /** Longest a replica may stay silent while answering (the replica provider's idle timeout). */
  requestTimeoutMs: number;
  /** Requests the replica serves at once; more wait in the deployment's queue. */
  parallel: number;
  failLimit: number;
  /** Called when the replica becomes ready, stops being ready, or fails for good. */
  onChange: (replica: Replica) => void;
  log: (msg: string, extra?: Record<string, unknown>) => void;
}

const STDERR_TAIL = 2000;
const HEALTH_TIMEOUT_MS = 2000;
const HEALTH_FAILURES = 3;
const STABLE_MS = 60_000;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Replica {
  state: ReplicaState = "starting";
  /** Requests being served now. */
  inFlight = 0;
  /** Times the process was started again after it died or stopped answering. */
  restarts = 0;
  /** When it last finished a request (or became ready): the autoscaler retires replicas idle long enough. */
  lastActive = Date.now();
  port = 0;
  /** Why the replica failed for good (its stderr's last lines), when state is "failed". */
  reason: string | null = null;
  private proc: ChildProcess | undefined;
  private client: OpenAIProvider | undefined;
  private limit: MemoryLimit | undefined;
  private stderr = "";
  private failures = 0;
  private readyAt = 0;
  private healthTimer: NodeJS.Timeout | undefined;
  private healthFails = 0;
  private checking = false;
  private exited: Promise<void> = Promise.resolve();
  private healthPath = "/health";
  private socket: string | undefined;
  /** A request to it just failed at the connection: not routable until a health check clears it. */
  private suspected = false;

  constructor(private readonly opts: ReplicaOptions) {
    void this.start();
  }

  get id(): string {
    return this.opts.id;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /** The HTTP client for the current process; only while ready. */
  get provider(): OpenAIProvider {
    if (!this.client) throw new Error("replica is not running");
    return this.client;
  }

  get routable(): boolean {
    return this.state === "ready" && !this.suspected && this.inFlight < this.opts.parallel;
  }

  private async start(): Promise<void> {
    this.state = this.restarts > 0 || this.failures > 0 ? "restarting" : "starting";
    this.stderr = "";
    const port = await freePort();
    if (this.isStopping()) return;
    this.port = port;
    const launch = this.opts.launch(port);
    this.healthPath = launch.healthPath;
    this.socket = launch.socket;
    const fds: Array<number | "ignore"> = (launch.files ?? []).map((file) => {
      try {
        return fs.openSync(file, "r");
      } catch (err) {
        // The process then fails to read it and exits: the usual failure path, with this as its reason.
        this.stderr += `cannot open ${file}: ${(err as Error).message}\n`;
        return "ignore";
      }
    });
    let proc: ChildProcess;
    try {
      proc = spawn(launch.command, launch.args, {
        env: launch.env,
        stdio: ["pipe", "ignore", "pipe", ...fds],
        uid: launch.uid,
        gid: launch.uid,
      });
    } finally {
      for (const fd of fds) if (fd !== "ignore") fs.closeSync(fd);
    }
    this.proc = proc;
    let markGone: () => void = () => {};
    this.exited = new Promise((resolve) => {
      markGone = resolve;
    });
    let gone = false;
    // A command that cannot be started reports "error" and may never report "exit".
    const onGone = (code: number | null, signal: NodeJS.Signals | null) => {
      if (gone) return;
      gone = true;
      markGone();
      this.onExit(proc, code, signal);
    };
    proc.stdin?.on("error", () => {}); // EPIPE when it dies: the exit handler deals with it
    proc.stderr?.setEncoding("utf8");
    proc.stderr?.on("data", (d: string) => {
      this.stderr = (this.stderr + d).slice(-STDERR_TAIL);
    });
    proc.stderr?.on("error", () => {});
    // 'error' may come more than once (a failed spawn, a failed kill later): every one is handled.
    proc.on("error", (err) => {
      this.stderr += `\ncannot start ${launch.command}: ${err.message}`;
      if (proc.pid === undefined) onGone(null, null);
    });
    proc.once("exit", onGone);
    if (proc.pid !== undefined) {
      this.limit ??= MemoryLimit.create(`${this.opts.id}`, this.opts.memoryMb);
      try {
        this.limit?.add(proc.pid);
      } catch {
        // the process is already gone: its exit handler runs next
      }
      if (!this.limit && this.restarts === 0)
        this.opts.log("replica runs without a memory limit: no writable memory cgroup on this host", { replica: this.opts.id });
    }
    const deadline = Date.now() + this.opts.startTimeoutMs;
    while (this.proc === proc && !gone) {
      if (await this.healthy(port, launch.healthPath)) {
        if (this.proc !== proc || this.isStopping()) return;
        this.client = new OpenAIProvider({
          name: `replica ${this.opts.id}`,
          baseUrl: new URL(launch.socket ? "http://replica/v1" : `http://127.0.0.1:${port}/v1`),
          socketPath: launch.socket,
          apiKey: undefined,
          models: [],
          modelPrefix: "",
          stripPrefix: false,
          timeoutMs: this.opts.requestTimeoutMs,
          retries: 0,
          maxConnections: this.opts.parallel * 2,
          headers: {},
        });
        this.state = "ready";
        this.suspected = false;
        this.readyAt = Date.now();
        this.lastActive = Date.now();
        this.healthFails = 0;
        this.healthTimer = setInterval(() => void this.check(launch.healthPath), this.opts.healthIntervalMs);
        this.healthTimer.unref();
        this.opts.onChange(this);
        return;
      }
      if (Date.now() > deadline) {
        this.stderr += `\nnot ready within ${this.opts.startTimeoutMs} ms`;
        proc.kill("SIGKILL");
        return;
      }
      await sleep(100);
    }
  }

  private isStopping(): boolean {
    return this.state === "stopping" || this.state === "stopped";
  }

  private healthy(port: number, healthPath: string): Promise<boolean> {
    return new Promise((resolve) => {
      const target = this.socket ? { socketPath: this.socket } : { host: "127.0.0.1", port };
      const req = http.get({ ...target, path: healthPath, timeout: HEALTH_TIMEOUT_MS, agent: false }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode === 200));
        res.on("error", () => resolve(false));
      });
      req.on("timeout", () => req.destroy(new Error("health check timed out")));
      req.on("error", () => resolve(false));
    });
  }

  /** A periodic (or suspected) health check; a replica failing it three times in a row is killed and restarted. */
  private async check(healthPath: string): Promise<void> {
    if (this.checking || this.state !== "ready") return;
    this.checking = true;
    try {
      const ok = await this.healthy(this.port, healthPath);
      if (ok) this.healthFails = 0;
      else if (++this.healthFails >= HEALTH_FAILURES && this.state === "ready") {
        this.opts.log("replica failed its health checks: restarting it", { replica: this.opts.id });
        this.proc?.kill("SIGKILL");
      }
    } finally {
      this.checking = false;
    }
  }

  /**
   * A request to the replica failed at the connection: it takes no requests until a health check
   * (now, not at the next tick) says it is there; if it is not, it is killed and restarted.
   */
  suspect(): void {
    if (this.state !== "ready" || this.suspected) return;
    this.suspected = true;
    const proc = this.proc;
    void this.healthy(this.port, this.healthPath).then((ok) => {
      if (this.proc !== proc || this.state !== "ready") return;
      if (!ok) {
        proc?.kill("SIGKILL");
        return;
      }
      this.suspected = false;
      this.opts.onChange(this);
    });
  }

  private onExit(proc: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.proc !== proc) return;
    clearInterval(this.healthTimer);
    void this.client?.close();
    this.client = undefined;
    const wasReady = this.state === "ready";
    if (this.isStopping()) {
      this.state = "stopped";
      this.limit?.remove();
      this.opts.onChange(this);
      return;
    }
    if (wasReady && Date.now() - this.readyAt > STABLE_MS) this.failures = 0;
    if (!wasReady) this.failures++;
    this.opts.log("replica exited", { replica: this.opts.id, code, signal, stderr: this.stderr.slice(-500) });
    if (this.failures >= this.opts.failLimit) {
      this.state = "failed";
      this.reason = lastWords(this.stderr) || `exited with ${signal ?? `code ${code}`} before it was ready`;
      this.limit?.remove();
      this.opts.onChange(this);
      return;
    }
    this.state = "restarting";
    this.restarts++;
    this.opts.onChange(this);
    const delay = Math.min(30_000, 500 * 2 ** Math.max(0, this.failures - 1));
    setTimeout(() => {
      if (!this.isStopping()) void this.start();
    }, delay).unref();
  }

  /** The replica takes no new requests; it gets SIGTERM (it finishes what it serves) and SIGKILL after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    if (this.state === "stopped") return;
    const proc = this.proc;
    this.state = "stopping";
    clearInterval(this.healthTimer);
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) {
      // Not started yet, or waiting out a restart backoff: nothing to stop.
      this.state = "stopped";
      this.limit?.remove();
      this.opts.onChange(this);
      return;
    }
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/** The last few non-empty lines of a process's stderr, for a failure reason. */
function lastWords(stderr: string): string {
  return stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .slice(-3)
    .join(" | ")
    .slice(-500);
}
