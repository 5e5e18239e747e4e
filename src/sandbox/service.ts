// The sandbox service: everything a caller can ask of its sandboxes — lifecycle, code runs,
// commands, code contexts, environment, resource use — whichever door the request came through
// (the HTTP routes, the inference gateway's code tool). It validates what only the domain knows,
// holds an execution slot (key, tenant, fair share, machine) around every run and command, and
// counts what operators watch.
// It knows nothing of HTTP: its errors are ApiErrors, mapped to statuses in one place.
import { type SandboxConfig, tenantQuotaDefaults } from "./settings.js";
import { ApiError, invalid } from "../errors.js";
import type { ApiKeyRecord } from "../tenancy/store/keys.js";
import type { ListFilter, SandboxRecord } from "./store/sandboxes.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import {
  type BackgroundFollower,
  type BackgroundOutput,
  type BackgroundProcess,
  BackgroundProcesses,
  type BgSignal,
} from "./background.js";
import { type Box, type BoxMetrics, WorkingDirMissing } from "./box.js";
import { type CodeContext, ContextRegistry } from "./contexts.js";
import { ExecutionGates, type RejectReason, type SlotRequest } from "./gates.js";
import { type Language, prepareCode } from "./languages.js";
import type { CreateInput, SandboxManager } from "./manager.js";
import { outputWatch, type RunObserver } from "./observe.js";
import type { RichResult } from "./protocol.js";

/** Who is asking: an API key and its tenant (an ApiKeyRecord is one). */
export type Caller = Pick<ApiKeyRecord, "id" | "tenantId" | "maxConcurrentRuns">;

export interface CodeRunInput {
  code: string;
  language: Language;
  /** Seconds; the configured default applies when absent. */
  timeout?: number;
  contextId?: string;
  environment?: Record<string, string>;
}

/** The seed's code-run result, plus the run's rich results (notebook semantics; [] for bash). */
export interface CodeRunOutput {
  logs: { stdout: string; stderr: string };
  error: string | null;
  execution_time_ms: number;
  results: RichResult[];
}

export interface CommandInput {
  command: string;
  args?: readonly string[];
  workingDir?: string;
  environment?: Record<string, string>;
  /** Milliseconds; 30 s when absent. */
  timeoutMs?: number;
}

export interface CommandOutput {
  stdout: string;
  stderr: string;
  exit_code: number;
  duration_ms: number;
  success: boolean;
  error: string | null;
}

export interface SandboxUsage extends BoxMetrics {
  /** The sandbox's memory limit, MiB. */
  memoryTotalMb: number;
}

/** The counters the service feeds (the Prometheus metrics have this shape). */
export interface ServiceCounters {
  executions: { inc(labels: { language: string; outcome: string }): void };
  tenantExecutions: { inc(labels: { tenant: string; language: string; outcome: string }): void };
  kernelRestarts: { inc(labels: { language: string }): void };
  rateLimited: { inc(labels: { reason: string }): void };
}

const DEFAULT_COMMAND_TIMEOUT_MS = 30_000;
const HOME = "/home/user";

/** The run's timeout in seconds: the client's value, else the default; above the configured maximum is a 400. */
export function effectiveTimeout(
  bodyTimeout: number | undefined,
  config: Pick<SandboxConfig, "defaultRunTimeoutS" | "maxRunTimeoutS">,
): number {
  const timeoutS = bodyTimeout ?? config.defaultRunTimeoutS;
  if (timeoutS > config.maxRunTimeoutS) throw invalid(`'timeout' must be at most ${config.maxRunTimeoutS} seconds`);
  return timeoutS;
}

/** Quotes one argument for bash: left alone when it is plainly safe, else single-quoted. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** `command` is a shell command line as given; each of `args` is appended as one quoted word. */
export function commandLine(command: string, args: readonly string[] = []): string {
  return [command, ...args.map(shellQuote)].join(" ");
}

/** A sandbox path as the supervisor resolves it: absolute, or relative to /home/user, normalised. */
export function sandboxPath(p: string): string {
  const parts: string[] = [];
  for (const part of (p.startsWith("/") ? p : `${HOME}/${p}`).split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}

export interface SandboxServiceDeps {
  config: SandboxConfig;
  sandboxes: SandboxManager;
  tenants: TenantDirectory;
  counters?: ServiceCounters;
  /** Bytes a sandbox moved through the egress proxy (added to its network counters). */
  network?: { bytes(sandboxId: string): { rx: number; tx: number } };
}

export class SandboxService {
  readonly gates: ExecutionGates;
  readonly contexts: ContextRegistry;
  readonly background: BackgroundProcesses;
  private readonly config: SandboxConfig;
  private readonly sandboxes: SandboxManager;
  /** A tenant's concurrent-run quota when its record leaves it unset. */
  private readonly tenantRunsDefault: number;

  constructor(private readonly deps: SandboxServiceDeps) {
    this.config = deps.config;
    this.tenantRunsDefault = tenantQuotaDefaults(deps.config).maxConcurrentRuns;
    this.sandboxes = deps.sandboxes;
    const counters = deps.counters;
    this.gates = new ExecutionGates({
      global: deps.config.maxConcurrentRuns,
      // 503s are counted by route where they are answered; the caller's own limits here.
      onReject: (reason: RejectReason) => {
        if (reason !== "at_capacity") counters?.rateLimited.inc({ reason });
      },
    });
    this.contexts = new ContextRegistry(deps.config.maxContextsPerSandbox);
    // Contexts are processes of their sandbox: forget them when it ends.
    this.sandboxes.onEnded(this.contexts.dropSandbox);
    this.background = new BackgroundProcesses(deps.config);
    this.sandboxes.onEnded(this.background.dropSandbox);
  }

  // --- lifecycle ---

  get templates() {
    return this.sandboxes.templates;
  }

  createSandbox(caller: Caller, input: CreateInput = {}): Promise<SandboxRecord> {
    if (input.timeoutS !== undefined) this.checkSandboxTimeout(input.timeoutS);
    return this.sandboxes.create(caller.tenantId, input);
  }

  getSandbox(caller: Caller, id: string): Promise<SandboxRecord> {
    return this.sandboxes.get(caller.tenantId, id);
  }

  listSandboxes(
    caller: Caller,
    limit: number,
    offset: number,
    filter?: ListFilter,
  ): Promise<{ sandboxes: SandboxRecord[]; total: number }> {
    return this.sandboxes.list(caller.tenantId, limit, offset, filter);
  }

  killSandbox(caller: Caller, id: string): Promise<void> {
    return this.sandboxes.kill(caller.tenantId, id);
  }

  setSandboxTimeout(caller: Caller, id: string, timeoutS: number): Promise<SandboxRecord> {
    this.checkSandboxTimeout(timeoutS);
    return this.sandboxes.setTimeout(caller.tenantId, id, timeoutS);
  }

  /** Sets environment variables for every later run and command in the sandbox. */
  async setEnv(caller: Caller, id: string, env: Record<string, string>): Promise<void> {
    await (await this.sandboxes.box(caller.tenantId, id)).setEnv(env);
  }

  /** Resource use of a running sandbox. */
  async usage(caller: Caller, id: string): Promise<SandboxUsage> {
    const m = await (await this.sandboxes.box(caller.tenantId, id)).metrics();
    const egress = this.deps.network?.bytes(id) ?? { rx: 0, tx: 0 };
    return { ...m, networkRx: m.networkRx + egress.rx, networkTx: m.networkTx + egress.tx, memoryTotalMb: this.config.limits.memoryMb };
  }

  // --- executions (each holds a slot of every gate while it runs) ---

  /** Runs code; an observer (a streaming client) is told of output and results as they come. */
  async runCode(caller: Caller, sandboxId: string, input: CodeRunInput, observer?: RunObserver): Promise<CodeRunOutput> {
    const { code, language } = input;
    const timeoutS = effectiveTimeout(input.timeout, this.config);
    if (Buffer.byteLength(code) > this.config.maxCodeBytes)
      throw new ApiError("payload_too_large", `'code' is larger than ${this.config.maxCodeBytes} bytes`);
    const box = await this.sandboxes.box(caller.tenantId, sandboxId);
    let kernel: string | undefined;
    let cwd: string | undefined;
    if (input.contextId !== undefined) {
      const context = this.contexts.get(sandboxId, input.contextId);
      if (context.language !== language) throw invalid(`Context '${input.contextId}' runs ${context.language}, not ${language}`);
      kernel = context.kernel;
      cwd = context.cwd; // a context kernel restarted after a timeout comes back in its own cwd
    }
    const prepared = prepareCode(language, code);
    const watch = observer && outputWatch(observer);
    const result = await this.gates.run(this.slot(caller), () => {
      observer?.started();
      return box.run({ language, code: prepared.code, isAsync: prepared.isAsync, timeoutS, kernel, cwd, env: input.environment, watch });
    });
    const counters = this.deps.counters;
    if (counters) {
      counters.executions.inc({ language, outcome: result.outcome });
      counters.tenantExecutions.inc({ tenant: caller.tenantId, language, outcome: result.outcome });
      if (result.stateLost) counters.kernelRestarts.inc({ language });
    }
    return {
      logs: { stdout: result.stdout, stderr: result.stderr },
      error: result.error,
      execution_time_ms: result.executionTimeMs,
      results: result.results,
    };
  }

  async runCommand(caller: Caller, sandboxId: string, input: CommandInput, observer?: RunObserver): Promise<CommandOutput> {
    const timeoutMs = input.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    const maxMs = this.config.maxRunTimeoutS * 1000;
    if (timeoutMs > maxMs) throw invalid(`'timeout' must be at most ${maxMs} milliseconds`);
    const command = this.checkedCommandLine(input);
    const box = await this.sandboxes.box(caller.tenantId, sandboxId);
    const env = input.environment;
    const watch = observer && outputWatch(observer);
    try {
      const r = await this.gates.run(this.slot(caller), () => {
        observer?.started();
        return box.command({ command, cwd: input.workingDir, env, timeoutMs, watch });
      });
      return {
        stdout: r.stdout,
        stderr: r.stderr,
        exit_code: r.exitCode,
        duration_ms: Math.max(0, Math.round(r.durationMs)),
        success: r.exitCode === 0 && r.error === null,
        error: r.error,
      };
    } catch (err) {
      if (err instanceof WorkingDirMissing) throw invalid(`'working_dir' ${err.message}`);
      throw err;
    }
  }

  /**
   * Takes an execution slot for work the caller waits on outside runCode/runCommand (a command an
   * E2B client follows): the same gates, the same refusals; the returned function gives it back, once.
   */
  holdSlot(caller: Caller): () => void {
    return this.gates.acquire(this.slot(caller));
  }

  // --- background processes (no execution slot: the sandbox's limits and a per-sandbox count bound them) ---

  async startBackground(caller: Caller, sandboxId: string, input: CommandInput): Promise<BackgroundProcess> {
    const line = this.checkedCommandLine(input);
    const box = await this.sandboxes.box(caller.tenantId, sandboxId);
    const start = { command: input.command, args: [...(input.args ?? [])], line, cwd: input.workingDir, env: input.environment };
    return this.background.start(box, sandboxId, start);
  }

  async listBackground(caller: Caller, sandboxId: string): Promise<BackgroundProcess[]> {
    return this.background.list(await this.sandboxes.box(caller.tenantId, sandboxId), sandboxId);
  }

  async getBackground(caller: Caller, sandboxId: string, pid: number): Promise<BackgroundOutput> {
    return this.background.get(await this.sandboxes.box(caller.tenantId, sandboxId), sandboxId, pid);
  }

  async signalBackground(caller: Caller, sandboxId: string, pid: number, signal: BgSignal): Promise<void> {
    return this.background.signal(await this.sandboxes.box(caller.tenantId, sandboxId), pid, signal);
  }

  async writeStdin(caller: Caller, sandboxId: string, pid: number, data: Buffer, eof: boolean): Promise<void> {
    return this.background.writeStdin(await this.sandboxes.box(caller.tenantId, sandboxId), pid, data, eof);
  }

  /** Follows a background process's output until it exits (its exit code) or the follower stops (null). */
  async followBackground(
    caller: Caller,
    sandboxId: string,
    pid: number,
    follower: BackgroundFollower,
    started: () => void,
  ): Promise<number | null> {
    return this.background.follow(await this.sandboxes.box(caller.tenantId, sandboxId), pid, follower, started);
  }

  /** The shell command line of a command: NUL-free, within the code size limit. */
  private checkedCommandLine(input: CommandInput): string {
    const args = input.args ?? [];
    const env = input.environment;
    const strings = [input.command, ...args, input.workingDir ?? "", ...Object.values(env ?? {})];
    if (strings.some((s) => s.includes("\0"))) throw invalid("Command, arguments, working_dir and environment must not contain NUL bytes");
    const command = commandLine(input.command, args);
    if (Buffer.byteLength(command) > this.config.maxCodeBytes) {
      throw new ApiError("payload_too_large", `The command line is larger than ${this.config.maxCodeBytes} bytes`);
    }
    return command;
  }

  // --- code contexts ---

  /** Starts a context's kernel in `cwd` (default /home/user), which must be a directory in the sandbox. */
  async createContext(caller: Caller, sandboxId: string, input: { language?: Language; cwd?: string }): Promise<CodeContext> {
    const language = input.language ?? "python";
    const cwd = sandboxPath(input.cwd ?? HOME);
    if (cwd.includes("\0")) throw invalid("'cwd' must not contain NUL bytes");
    const box = await this.sandboxes.box(caller.tenantId, sandboxId);
    await this.checkDirectory(box, cwd);
    const context = this.contexts.add(sandboxId, language, cwd);
    try {
      await box.startKernel(context.kernel, language, cwd);
    } catch (err) {
      this.contexts.remove(sandboxId, context.id);
      throw new ApiError("invalid_state", `The context's ${language} kernel could not be started: ${(err as Error).message}`);
    }
    return context;
  }

  async listContexts(caller: Caller, sandboxId: string): Promise<CodeContext[]> {
    const record = await this.sandboxes.get(caller.tenantId, sandboxId);
    return this.contexts.list(record.id);
  }

  async getContext(caller: Caller, sandboxId: string, contextId: string): Promise<CodeContext> {
    const record = await this.sandboxes.get(caller.tenantId, sandboxId);
    return this.contexts.get(record.id, contextId);
  }

  /** Deletes a context: its kernel process ends. */
  async deleteContext(caller: Caller, sandboxId: string, contextId: string): Promise<void> {
    await this.sandboxes.get(caller.tenantId, sandboxId);
    const context = this.contexts.get(sandboxId, contextId);
    await (await this.sandboxes.box(caller.tenantId, sandboxId)).killKernel(context.kernel);
    this.contexts.remove(sandboxId, contextId);
  }

  // --- internals ---

  /** The limits of every gate that apply to the caller's next run. */
  private slot(caller: Caller): SlotRequest {
    return {
      keyId: caller.id,
      tenantId: caller.tenantId,
      keyMax: caller.maxConcurrentRuns ?? this.config.maxConcurrentRunsPerKey,
      tenantMax: this.deps.tenants.get(caller.tenantId).quotas.maxConcurrentRuns ?? this.tenantRunsDefault,
    };
  }

  private checkSandboxTimeout(timeoutS: number): void {
    if (timeoutS > this.config.maxSandboxTimeoutS) throw invalid(`'timeout' must be at most ${this.config.maxSandboxTimeoutS} seconds`);
  }

  private async checkDirectory(box: Box, path: string): Promise<void> {
    const stat = await box.request({ op: "file", action: "stat", path });
    if (stat.ev !== "file" || stat.status !== "ok")
      throw invalid(`'cwd' could not be checked: ${stat.ev === "file" || stat.ev === "error" ? (stat.message ?? stat.ev) : stat.ev}`);
    if (stat.is_dir !== true) throw invalid(`'cwd' ${path} is not a directory in the sandbox`);
  }
}
