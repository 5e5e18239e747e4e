// One live sandbox: its workspace, its cgroup and the bubblewrap process that holds its namespaces
// and supervisor. Code runs, commands and file operations all go through here; this is where code
// is handed to the sandbox for execution (run()).
import type { Limits } from "../config.js";
import type { CgroupManager, SandboxCgroup } from "./cgroup.js";
import { type Frame, SupervisorLink } from "./link.js";
import type { WorkspaceManager } from "./workspace.js";

export type Language = "python" | "javascript" | "typescript" | "bash";

export interface RunRequest {
  language: Language;
  /** Code as the kernel should run it (TypeScript already stripped, await already wrapped). */
  code: string;
  isAsync: boolean;
  timeoutS: number;
  /** A context's kernel; by default the sandbox's kernel for the language. */
  kernel?: string;
  cwd?: string;
  env?: Record<string, string>;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  error: string | null;
  executionTimeMs: number;
  outcome: "ok" | "error" | "timeout" | "oom" | "output_limit" | "kernel_lost";
}

export interface CommandRequest {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs: number;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  durationMs: number;
  timedOut: boolean;
  error: string | null;
}

export interface BoxSpec {
  name: string;
  uid: number;
  limits: Limits;
  seccomp: Buffer;
  /** Where the sandbox process's own diagnostics go (bwrap and supervisor errors, never user output). */
  onLog?: (line: string) => void;
}

/** Extra time the service waits past a run's own timeout before it restarts the whole sandbox. */
const BACKSTOP_MS = 5000;

class Collector {
  private readonly chunks: Record<1 | 2, Buffer[]> = { 1: [], 2: [] };
  private readonly sizes: Record<1 | 2, number> = { 1: 0, 2: 0 };
  truncated = false;

  constructor(private readonly cap: number) {}

  add(stream: unknown, body: Buffer): void {
    const s = stream === 2 ? 2 : 1;
    const room = this.cap - this.sizes[s];
    if (room <= 0) {
      this.truncated = true;
      return;
    }
    const part = body.length > room ? body.subarray(0, room) : body;
    this.chunks[s].push(part);
    this.sizes[s] += part.length;
  }

  text(s: 1 | 2): string {
    const out = Buffer.concat(this.chunks[s]).toString("utf8");
    return this.truncated && this.sizes[s] >= this.cap ? `${out}\n[output truncated at ${this.cap} bytes]\n` : out;
  }
}

export class Box {
  private link!: SupervisorLink;
  private readonly queues = new Map<string, Promise<unknown>>();
  private restarting: Promise<void> | undefined;
  ended = false;

  private constructor(
    readonly spec: BoxSpec,
    readonly workspace: string,
    readonly cgroup: SandboxCgroup,
    private readonly workspaces: WorkspaceManager,
  ) {}

  static async start(spec: BoxSpec, cgroups: CgroupManager, workspaces: WorkspaceManager): Promise<Box> {
    const workspace = await workspaces.create(spec.name, spec.uid, spec.limits.diskMb);
    const cgroup = cgroups.create(spec.name, spec.uid, spec.limits);
    const box = new Box(spec, workspace, cgroup, workspaces);
    try {
      await box.spawn();
    } catch (err) {
      await box.destroy();
      throw err;
    }
    return box;
  }

  private async spawn(): Promise<void> {
    this.link = new SupervisorLink({
      uid: this.spec.uid,
      workspace: this.workspace,
      tmpMb: this.spec.limits.tmpMb,
      seccomp: this.spec.seccomp,
      cgroupProcs: this.cgroup.procsFiles,
      onLog: (line) => this.spec.onLog?.(line),
    });
    await this.link.ready;
  }

  /** Starts a fresh sandbox process on the same workspace and cgroup: files are kept, kernels are not. */
  restart(): Promise<void> {
    if (!this.restarting) {
      this.link.kill();
      this.restarting = this.link
        .exited()
        .then(() => this.spawn())
        .finally(() => {
          this.restarting = undefined;
        });
    }
    return this.restarting;
  }

  private async live(): Promise<SupervisorLink> {
    if (this.restarting) await this.restarting;
    if (this.link.closed && !this.ended) await this.restart();
    return this.link;
  }

  /** Runs tasks for the same kernel one after another; different kernels run side by side. */
  private serial<T>(key: string, task: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(key) ?? Promise.resolve();
    const next = prev.then(task, task);
    const tail = next.catch(() => {});
    this.queues.set(key, tail);
    tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return next;
  }

  async setEnv(env: Record<string, string>): Promise<void> {
    await (await this.live()).request({ op: "setenv", env });
  }

  run(req: RunRequest): Promise<RunResult> {
    const kernel = req.kernel ?? req.language;
    return this.serial(kernel, () => this.runNow(kernel, req));
  }

  private async runNow(kernel: string, req: RunRequest): Promise<RunResult> {
    const link = await this.live();
    const cap = this.spec.limits.outputBytes;
    const out = new Collector(cap);
    const oomBefore = this.cgroup.usage().oomKills;
    const timeoutMs = req.timeoutS * 1000;
    const done = await new Promise<Frame>((resolve) => {
      const backstop = setTimeout(() => {
        resolve({ header: { ev: "backstop" }, body: Buffer.alloc(0) });
        void this.restart().catch(() => {});
      }, timeoutMs + BACKSTOP_MS);
      link.stream(
        {
          op: "run",
          kernel,
          lang: req.language,
          timeout_ms: timeoutMs,
          output_cap: cap,
          async: req.isAsync,
          env: req.env,
          cwd: req.cwd,
        },
        Buffer.from(req.code),
        (frame) => {
          if (frame.header.ev === "out") {
            out.add(frame.header.stream, frame.body);
            return false;
          }
          clearTimeout(backstop);
          resolve(frame);
          return true;
        },
      );
    });
    const h = done.header;
    if (h.truncated === true) out.truncated = true;
    const oom = this.cgroup.usage().oomKills > oomBefore;
    const stateLost = h.state_lost === true || h.ev !== "done";
    const lost = stateLost ? "; the kernel was restarted and its state was lost" : "";
    let error: string | null = typeof h.error === "string" ? h.error : null;
    let outcome: RunResult["outcome"] = error ? "error" : "ok";
    const limit = `${req.timeoutS} second${req.timeoutS === 1 ? "" : "s"}`;
    if (h.ev === "backstop") {
      error = `Execution timed out after ${limit}; the sandbox was restarted and all kernel state was lost`;
      outcome = "timeout";
    } else if (h.ev !== "done") {
      error = "The sandbox's processes ended unexpectedly; it was restarted and all kernel state was lost (files are kept)";
      outcome = "kernel_lost";
    } else if (oom) {
      error = `Out of memory: the sandbox's limit of ${this.spec.limits.memoryMb} MiB was reached${lost}`;
      outcome = "oom";
    } else if (h.timed_out === true) {
      error = `Execution timed out after ${limit}${stateLost ? lost : "; the run was interrupted and the kernel's state was kept"}`;
      outcome = "timeout";
    } else if (out.truncated) {
      error = `Output exceeded the limit of ${cap} bytes per stream and was truncated; the run was stopped${lost}`;
      outcome = "output_limit";
    } else if (typeof h.rc === "number" && h.rc !== 0) {
      error = `exit status ${h.rc}`;
      outcome = "error";
    } else if (typeof h.exit_status === "number") {
      error =
        req.language === "bash"
          ? `exit status ${h.exit_status} (the bash kernel exited and was restarted; its state was lost)`
          : `The kernel exited unexpectedly (status ${h.exit_status}); it was restarted and its state was lost`;
      outcome = "kernel_lost";
    }
    const execMs = typeof h.exec_ms === "number" ? h.exec_ms : typeof h.elapsed_ms === "number" ? h.elapsed_ms : 0;
    return { stdout: out.text(1), stderr: out.text(2), error, executionTimeMs: Math.max(0, Math.round(execMs)), outcome };
  }

  async command(req: CommandRequest): Promise<CommandResult> {
    const link = await this.live();
    const out = new Collector(this.spec.limits.outputBytes);
    const h = await new Promise<Frame["header"]>((resolve) => {
      const backstop = setTimeout(() => resolve({ ev: "backstop" }), req.timeoutMs + BACKSTOP_MS);
      link.stream(
        {
          op: "exec",
          command: req.command,
          cwd: req.cwd,
          env: req.env,
          timeout_ms: req.timeoutMs,
          output_cap: this.spec.limits.outputBytes,
        },
        undefined,
        (frame) => {
          if (frame.header.ev === "out") {
            out.add(frame.header.stream, frame.body);
            return false;
          }
          clearTimeout(backstop);
          resolve(frame.header);
          return true;
        },
      );
    });
    const status = typeof h.exit_status === "number" ? h.exit_status : -1;
    const timedOut = h.timed_out === true || h.ev !== "exit";
    const exitCode = status < 0 ? 128 - status : status;
    let error: string | null = null;
    if (timedOut) error = `Command timed out after ${req.timeoutMs} ms`;
    else if (typeof h.spawn_error === "string") error = h.spawn_error;
    else if (h.truncated === true) error = "Output limit exceeded; the command was stopped";
    else if (status < 0) error = `Command was killed by signal ${-status}`;
    const durationMs = typeof h.elapsed_ms === "number" ? h.elapsed_ms : 0;
    return { stdout: out.text(1), stderr: out.text(2), exitCode, durationMs, timedOut, error };
  }

  /** A file operation done by the supervisor inside the sandbox's own view of the filesystem. */
  async file(header: Record<string, unknown>, body?: Buffer): Promise<Frame> {
    return (await this.live()).request({ op: "file", ...header }, body);
  }

  async request(header: Record<string, unknown>): Promise<Frame> {
    return (await this.live()).request(header);
  }

  async killKernel(kernel: string): Promise<void> {
    await (await this.live()).request({ op: "kill_kernel", kernel });
  }

  /** Ends every process, removes the cgroup and the workspace. Leaves nothing behind. */
  async destroy(): Promise<void> {
    this.ended = true;
    if (this.link) {
      this.link.kill();
      await this.link.exited();
    }
    await this.cgroup.destroy();
    await this.workspaces.destroy(this.spec.name);
  }
}
