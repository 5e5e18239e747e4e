// One live sandbox: its workspace, its cgroup and the bubblewrap process that holds its namespaces
// and supervisor. Code runs, commands and file operations all go through here; this is where code
// is handed to the sandbox for execution (run()).
import fs from "node:fs";
import type { Limits } from "./settings.js";
import { netDirOf, type TemplateRoot } from "./bwrap.js";
import type { CgroupManager, SandboxCgroup } from "./cgroup.js";
import { languageSpec } from "./languages.js";
import { type RequestOptions, SupervisorLink } from "./link.js";
import { classifyRun, type RunOutcome } from "./outcome.js";
import { onAbort, type OutputWatch } from "./observe.js";
import type { DoneEvent, ExitEvent, Language, Reply, Request, RichResult } from "./protocol.js";
import type { Spawner } from "./spawner.js";
import type { WorkspaceManager } from "./workspace.js";

export type { Language, RichResult };

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
  /** Someone following the run as it happens (streaming); its signal interrupts the run. */
  watch?: OutputWatch;
}

export interface RunResult {
  stdout: string;
  stderr: string;
  error: string | null;
  executionTimeMs: number;
  outcome: RunOutcome;
  /** The kernel (or the whole sandbox) was restarted during the run: earlier state is gone. */
  stateLost: boolean;
  /** Rich results of the run, in the order they were produced (notebook semantics). */
  results: RichResult[];
}

export interface CommandRequest {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs: number;
  watch?: OutputWatch;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  durationMs: number;
  timedOut: boolean;
  error: string | null;
}

export interface BoxMetrics {
  /** Percent of the sandbox's CPU allowance used since the previous sample (see metrics()). */
  cpuPercent: number;
  memoryBytes: number;
  diskRead: number;
  diskWrite: number;
  networkRx: number;
  networkTx: number;
}

/** A CPU sample younger than this is not used as the base of a rate: too short to mean anything. */
const MIN_CPU_WINDOW_MS = 200;

/** A command's working directory does not exist (or is not a directory) inside the sandbox. */
export class WorkingDirMissing extends Error {
  constructor(readonly path: string) {
    super(`'${path}' is not a directory in the sandbox`);
  }
}

export interface BoxSpec {
  name: string;
  uid: number;
  limits: Limits;
  seccomp: Buffer;
  /** A custom template's root filesystem (src/templates/); absent, the host's system view. */
  root?: TemplateRoot;
  /** Starts the sandbox's processes (off the service's event loop). */
  spawner: Spawner;
  /** Where the sandbox process's own diagnostics go (bwrap and supervisor errors, never user output). */
  onLog?: (line: string) => void;
  /**
   * The sandbox's processes died on their own (not stopped, not restarting); `oom`: the kernel's
   * OOM killer killed in its group since they started. Otherwise the next use restarts them.
   */
  onDied?: (oom: boolean, exitStatus: string | undefined) => void;
}

/** A run whose client left while it waited for its kernel: never started. */
function abandoned(): Promise<RunResult> {
  return Promise.resolve({
    stdout: "",
    stderr: "",
    error: "The run was cancelled before it started: its client disconnected",
    executionTimeMs: 0,
    outcome: "error",
    stateLost: false,
    results: [],
  });
}

/** Extra time the service waits past a run's own timeout before it restarts the whole sandbox. */
const BACKSTOP_MS = 5000;

class Collector {
  private readonly chunks: Record<1 | 2, Buffer[]> = { 1: [], 2: [] };
  private readonly sizes: Record<1 | 2, number> = { 1: 0, 2: 0 };
  readonly results: RichResult[] = [];
  private resultBytes = 0;
  truncated = false;

  constructor(private readonly cap: number) {}

  /** A rich result counts against the same cap as a stream; past it, results are dropped. */
  addResult(result: RichResult | undefined, bytes: number): void {
    if (result === undefined || this.resultBytes + bytes > this.cap) {
      this.truncated = true;
      this.resultBytes = this.cap;
      return;
    }
    this.resultBytes += bytes;
    this.results.push(result);
  }

  add(s: 1 | 2, body: Buffer): void {
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
  /** The last two CPU samples (monotonic ms, cgroup CPU ns), for cpu_usage in metrics(). */
  private cpuSamples: { at: number; ns: number }[] = [{ at: performance.now(), ns: 0 }];
  ended = false;
  /** Frozen by pause(): nothing may be sent to it until resume(). */
  paused = false;
  /**
   * OOM kills in the sandbox's group already accounted for (a run or command that was killed for
   * memory): only a newer one means the sandbox's own processes died of it.
   */
  private oomSeen = 0;
  /** Commands executing now (runs are tracked by their kernel queues). */
  private commands = 0;

  private constructor(
    readonly spec: BoxSpec,
    readonly workspace: string,
    readonly cgroup: SandboxCgroup,
    private readonly workspaces: WorkspaceManager,
  ) {}

  static async start(spec: BoxSpec, cgroups: CgroupManager, workspaces: WorkspaceManager): Promise<Box> {
    const workspace = await workspaces.create(spec.name, spec.uid, spec.limits.diskMb);
    let cgroup: SandboxCgroup;
    try {
      cgroup = await cgroups.create(spec.name, spec.uid, spec.limits);
    } catch (err) {
      await workspaces.destroy(spec.name).catch(() => {});
      throw err;
    }
    const box = new Box(spec, workspace, cgroup, workspaces);
    try {
      await box.spawn();
    } catch (err) {
      await box.destroy();
      throw err;
    }
    return box;
  }

  /**
   * Takes over the sandbox process of this name that the sandbox host kept running from an earlier
   * API process (./host-main.ts): its workspace (still mounted), its cgroup (in its tenant's group,
   * thawed if it was paused) and its supervisor, whose stream is put back in step first. Kernels,
   * running commands and background processes go on. Undefined when there is no such process, or
   * it could not be taken over (then it is killed: the caller starts the sandbox again from its files).
   */
  static async adopt(spec: BoxSpec, tenantId: string, cgroups: CgroupManager, workspaces: WorkspaceManager): Promise<Box | undefined> {
    if (!spec.spawner.canAdopt(spec.name)) return undefined;
    const cgroup = cgroups.open(spec.name, tenantId);
    const workspace = workspaces.pathOf(spec.name);
    // Without them it is not this record's sandbox to take over: the spawner's release ends it.
    if (!cgroup || !(await workspaces.isMounted(workspace))) return undefined;
    const box = new Box(spec, workspace, cgroup, workspaces);
    try {
      // A frozen supervisor cannot answer the resync (the record says running once it is adopted).
      await cgroup.freeze(false).catch(() => {});
      await box.spawn(true);
      return box;
    } catch (err) {
      box.ended = true;
      box.link.kill();
      await cgroup.kill().catch(() => {});
      await Promise.race([box.link.exited(), new Promise((r) => setTimeout(r, 5000))]);
      spec.onLog?.(`could not take over the running sandbox process: ${(err as Error).message}`);
      return undefined;
    }
  }

  private async spawn(adopt = false): Promise<void> {
    this.link = new SupervisorLink({
      name: this.spec.name,
      adopt,
      uid: this.spec.uid,
      workspace: this.workspace,
      tmpMb: this.spec.limits.tmpMb,
      seccomp: this.spec.seccomp,
      ...(this.spec.root ? { root: this.spec.root } : {}),
      cgroupProcs: this.cgroup.procsFiles,
      spawner: this.spec.spawner,
      onLog: (line) => this.spec.onLog?.(line),
    });
    const link = this.link;
    this.oomSeen = this.cgroup.oomKills();
    link.once("exit", () => {
      if (!this.ended && !this.restarting && this.link === link) this.spec.onDied?.(this.cgroup.oomKills() > this.oomSeen, link.exitStatus);
    });
    await link.ready;
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
    await this.request({ op: "setenv", env });
  }

  run(req: RunRequest): Promise<RunResult> {
    const kernel = req.kernel ?? req.language;
    return this.serial(kernel, () => (req.watch?.signal?.aborted ? abandoned() : this.runNow(kernel, req)));
  }

  private async runNow(kernel: string, req: RunRequest): Promise<RunResult> {
    const link = await this.live();
    const cap = this.spec.limits.outputBytes;
    const out = new Collector(cap);
    const oomBefore = this.cgroup.oomKills();
    const timeoutMs = req.timeoutS * 1000;
    const watch = req.watch;
    let unwatch: (() => void) | undefined;
    const end = await new Promise<DoneEvent | { ev: "gone" } | { ev: "backstop" }>((resolve) => {
      const backstop = setTimeout(() => {
        handle.cancel();
        resolve({ ev: "backstop" });
        void this.restart().catch(() => {});
      }, timeoutMs + BACKSTOP_MS);
      const handle = link.stream(
        {
          op: "run",
          kernel,
          lang: req.language,
          kind: languageSpec(req.language).kernel,
          timeout_ms: timeoutMs,
          output_cap: cap,
          async: req.isAsync,
          env: req.env,
          cwd: req.cwd,
        },
        Buffer.from(req.code),
        (event) => {
          if (event.ev === "out") {
            out.add(event.stream, event.body);
            watch?.output(event.stream, event.body);
            return false;
          }
          if (event.ev === "result") {
            out.addResult(event.result, event.bytes);
            if (watch && event.result) watch.result(event.result);
            return false;
          }
          if (event.ev !== "done" && event.ev !== "gone") return false;
          clearTimeout(backstop);
          resolve(event);
          return true;
        },
      );
      if (watch) unwatch = onAbort(watch.signal, () => this.cancel(link, handle.id));
    });
    unwatch?.();
    const oomAfter = this.cgroup.oomKills();
    if (oomAfter > oomBefore) this.oomSeen = Math.max(this.oomSeen, oomAfter);
    const verdict = classifyRun({
      end,
      language: req.language,
      timeoutS: req.timeoutS,
      memoryMb: this.spec.limits.memoryMb,
      outputCap: cap,
      oom: oomAfter > oomBefore,
      truncated: out.truncated,
    });
    if (end.ev === "done" && end.truncated === true) out.truncated = true;
    const execMs = end.ev === "done" ? (end.exec_ms ?? end.elapsed_ms ?? 0) : 0;
    return {
      stdout: out.text(1),
      stderr: out.text(2),
      error: verdict.error,
      executionTimeMs: Math.max(0, Math.round(execMs)),
      outcome: verdict.outcome,
      stateLost: verdict.stateLost,
      results: out.results,
    };
  }

  /**
   * Runs a shell command as a fresh process in the sandbox (same namespaces, files and cgroup as
   * the kernels). Background processes it starts keep running after it returns. Throws
   * WorkingDirMissing when `cwd` is not a directory in the sandbox.
   */
  async command(req: CommandRequest): Promise<CommandResult> {
    this.commands += 1;
    try {
      return await this.commandNow(req);
    } finally {
      this.commands -= 1;
    }
  }

  /** A run or command is executing or queued: a pause now would stall it past its backstop. */
  get busy(): boolean {
    return this.commands > 0 || this.queues.size > 0;
  }

  /** Freezes every process of the sandbox (memory and kernel state kept, no CPU used). */
  async pause(): Promise<void> {
    await this.cgroup.freeze(true);
    this.paused = true;
  }

  /** Thaws what pause() froze: everything continues where it stopped. */
  async resume(): Promise<void> {
    await this.cgroup.freeze(false);
    this.paused = false;
  }

  private async commandNow(req: CommandRequest): Promise<CommandResult> {
    const link = await this.live();
    const cap = this.spec.limits.outputBytes;
    const out = new Collector(cap);
    const watch = req.watch;
    let unwatch: (() => void) | undefined;
    const h = await new Promise<ExitEvent | { ev: "gone" } | { ev: "backstop" }>((resolve) => {
      const backstop = setTimeout(() => {
        handle.cancel();
        resolve({ ev: "backstop" });
        void this.restart().catch(() => {});
      }, req.timeoutMs + BACKSTOP_MS);
      const handle = link.stream(
        { op: "exec", command: req.command, cwd: req.cwd, env: req.env, timeout_ms: req.timeoutMs, output_cap: cap },
        undefined,
        (event) => {
          if (event.ev === "out") {
            out.add(event.stream, event.body);
            watch?.output(event.stream, event.body);
            return false;
          }
          if (event.ev !== "exit" && event.ev !== "gone") return false;
          clearTimeout(backstop);
          resolve(event);
          return true;
        },
      );
      if (watch) unwatch = onAbort(watch.signal, () => this.cancel(link, handle.id));
    });
    unwatch?.();
    if (h.ev === "backstop" || h.ev === "gone") {
      const why =
        h.ev === "backstop"
          ? `Command timed out after ${req.timeoutMs} ms and the sandbox did not respond; it was restarted (files are kept)`
          : "The sandbox's processes ended during the command; it was restarted (files are kept)";
      return { stdout: out.text(1), stderr: out.text(2), exitCode: 137, durationMs: 0, timedOut: h.ev === "backstop", error: why };
    }
    if (h.bad_cwd !== undefined) throw new WorkingDirMissing(h.bad_cwd);
    if (h.truncated === true) out.truncated = true;
    const durationMs = h.elapsed_ms ?? 0;
    const status = h.exit_status ?? -9;
    // A command killed by a signal may have been the OOM killer's choice: that kill is accounted for.
    if (status < 0) this.oomSeen = Math.max(this.oomSeen, this.cgroup.oomKills());
    // A signal death is reported the way a shell does: 128 + signal number.
    const exitCode = status < 0 ? 128 - status : status;
    const timedOut = h.timed_out === true;
    let error: string | null = null;
    if (timedOut) error = `Command timed out after ${req.timeoutMs} ms and was killed`;
    else if (h.spawn_error !== undefined) error = h.spawn_error;
    else if (out.truncated) error = `Output exceeded the limit of ${cap} bytes per stream and was truncated; the command was killed`;
    else if (status < 0) error = `Command was killed by signal ${-status}`;
    else if (status !== 0) error = `exit status ${status}`;
    return { stdout: out.text(1), stderr: out.text(2), exitCode, durationMs, timedOut, error };
  }

  /** Starts a context's kernel now (rather than at its first run), so that a broken context fails at creation. */
  async startKernel(kernel: string, language: Language, cwd: string): Promise<void> {
    const reply = await this.request({ op: "start_kernel", kernel, lang: language, kind: languageSpec(language).kernel, cwd });
    if (reply.ev !== "ok") throw new Error(`kernel did not start (${reply.ev === "error" ? reply.message : reply.ev})`);
  }

  /**
   * Resource use: memory and CPU from the sandbox's cgroup, network and disk I/O from inside it
   * (runtime/agentbox_rt/stats.py). CPU is a rate: the CPU time used between the previous call
   * (at least MIN_CPU_WINDOW_MS ago; the first call covers the time since the sandbox started)
   * and now, as a percent of the sandbox's CPU allowance.
   */
  async metrics(): Promise<BoxMetrics> {
    const [reply, usage] = await Promise.all([this.request({ op: "stats" }), this.cgroup.usage()]);
    const now = performance.now();
    // Samples are kept at least MIN_CPU_WINDOW_MS apart, so the base is the newest one that old
    // (or, when calls come fast, the one before it).
    const newest = this.cpuSamples[this.cpuSamples.length - 1] as { at: number; ns: number };
    const old = now - newest.at >= MIN_CPU_WINDOW_MS;
    const base = old ? newest : (this.cpuSamples[0] as { at: number; ns: number });
    const wallNs = Math.max(1, (now - base.at) * 1e6);
    const cpuPercent = Math.min(100, Math.max(0, ((usage.cpuNs - base.ns) / wallNs / this.spec.limits.cpus) * 100));
    if (old) this.cpuSamples = [newest, { at: now, ns: usage.cpuNs }];
    const io = reply.ev === "stats" ? reply : { disk_read: 0, disk_write: 0, network_rx: 0, network_tx: 0 };
    return {
      cpuPercent,
      memoryBytes: usage.memoryBytes,
      diskRead: io.disk_read,
      diskWrite: io.disk_write,
      networkRx: io.network_rx,
      networkTx: io.network_tx,
    };
  }

  /**
   * One request to the supervisor, answered within a deadline (sandbox_unresponsive otherwise) or
   * with `gone` when the sandbox's processes ended. File operations (./files.ts) go through here.
   */
  async request(req: Request, body?: Buffer, opts?: RequestOptions): Promise<Reply> {
    return (await this.live()).request(req, body, opts);
  }

  /**
   * A request answered by a stream of events (a watched background process's output), until
   * `onEvent` returns true or `gone`: see SupervisorLink.stream.
   */
  async stream(req: Request, onEvent: (reply: Reply) => boolean): Promise<{ cancel: () => void; id: string }> {
    return (await this.live()).stream(req, undefined, onEvent);
  }

  /** Interrupts the run or command of request `target` (a python run keeps its kernel's state). */
  private cancel(link: SupervisorLink, target: string): void {
    if (!link.closed) link.request({ op: "cancel", target }).catch(() => {});
  }

  /** Lets the sandbox pre-import the data stack in a kernel of its own while it waits (see docs/design.md). */
  async preImport(): Promise<void> {
    await this.request({ op: "prewarm" });
  }

  async killKernel(kernel: string): Promise<void> {
    await this.request({ op: "kill_kernel", kernel });
  }

  /** Ends every process, removes the cgroup and the workspace. Leaves nothing behind. */
  async destroy(): Promise<void> {
    await this.stop();
    await this.teardown();
  }

  /**
   * Marks the sandbox ended and SIGKILLs its processes (the bubblewrap process and everything in
   * its cgroup). Quick: it waits neither for them to be gone nor for any cleanup; teardown() does.
   */
  async stop(): Promise<void> {
    this.ended = true;
    this.link?.kill();
    await this.cgroup.kill();
  }

  /** After stop(): waits for the processes to be gone, removes the cgroup, then the workspace (in that order, see the start-up sweep). */
  async teardown(): Promise<void> {
    if (this.link) await this.link.exited();
    await this.cgroup.destroy();
    await this.workspaces.destroy(this.spec.name);
    // The directory of its network sockets (made with every start, pool sandboxes' too).
    await fs.promises.rm(netDirOf(this.workspace), { recursive: true, force: true });
  }
}
