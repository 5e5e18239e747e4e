// Background processes of a sandbox: started by commands/run with `background: true`, then listed,
// read, followed, written to and signalled by their in-sandbox pid. The supervisor keeps the
// processes, their stdin pipes and their retained output (runtime/agentbox_rt/background.py);
// this module asks it and turns its answers into values and ApiErrors. No execution slot is held:
// a background process is bounded by the sandbox's own limits (it is in its cgroup) and by the
// per-sandbox count.
import type { SandboxConfig } from "./settings.js";
import { ApiError, invalid } from "../errors.js";
import type { BgEvent, BgProcessInfo, BgRequest, BgSignal } from "./background-protocol.js";
import type { Box } from "./box.js";
import type { Reply } from "./protocol.js";

export type { BgSignal };

/** A background process as the API shows it. */
export interface BackgroundProcess {
  pid: number;
  command: string;
  args: string[];
  status: "running" | "exited";
  exit_code: number | null;
  started_at: string;
  ended_at: string | null;
}

export interface BackgroundOutput extends BackgroundProcess {
  stdout: string;
  stderr: string;
  /** Bytes dropped from the start of each stream (only the latest are retained). */
  stdout_truncated: boolean;
  stderr_truncated: boolean;
}

export interface BackgroundStart {
  command: string;
  args: string[];
  line: string;
  cwd?: string;
  env?: Record<string, string>;
}

/** What a follower of a background process's output is told. */
export interface BackgroundFollower {
  output(stream: "stdout" | "stderr", text: string): void;
  signal?: AbortSignal;
}

export class BackgroundProcesses {
  /** The command and args each pid was started with, per sandbox (the supervisor knows the command line only). */
  private readonly argv = new Map<string, Map<number, { command: string; args: string[] }>>();

  constructor(private readonly config: Pick<SandboxConfig, "maxBackgroundProcesses" | "backgroundOutputBytes" | "maxStdinBytes">) {}

  /** Forgets a sandbox's processes (they ended with it). */
  readonly dropSandbox = (sandboxId: string): void => {
    this.argv.delete(sandboxId);
  };

  async start(box: Box, sandboxId: string, input: BackgroundStart): Promise<BackgroundProcess> {
    const reply = await this.ask(box, {
      op: "bg_start",
      command: input.line,
      cwd: input.cwd,
      env: input.env,
      max_procs: this.config.maxBackgroundProcesses,
      output_cap: this.config.backgroundOutputBytes,
    });
    if (reply.status === "too_many")
      throw new ApiError("quota_exceeded", `${reply.message ?? "Too many background processes"}; end one first`);
    if (reply.status === "bad_cwd") throw invalid(`'working_dir' '${reply.message ?? ""}' is not a directory in the sandbox`);
    const info = this.one(reply, 0);
    let table = this.argv.get(sandboxId);
    if (!table) {
      table = new Map();
      this.argv.set(sandboxId, table);
    }
    // Pids are reused in the sandbox's pid namespace: the table follows what the supervisor keeps.
    if (table.size >= this.config.maxBackgroundProcesses * 4) table.delete(table.keys().next().value as number);
    table.set(info.pid, { command: input.command, args: input.args });
    return this.shape(sandboxId, info);
  }

  async list(box: Box, sandboxId: string): Promise<BackgroundProcess[]> {
    const reply = await this.ask(box, { op: "bg_list" });
    return reply.procs.map((p) => this.shape(sandboxId, p));
  }

  async get(box: Box, sandboxId: string, pid: number): Promise<BackgroundOutput> {
    const reply = await this.ask(box, { op: "bg_get", pid });
    const info = this.one(reply, pid);
    const split = Math.min(info.stdout_len ?? 0, reply.body.length);
    return {
      ...this.shape(sandboxId, info),
      stdout: reply.body.subarray(0, split).toString("utf8"),
      stderr: reply.body.subarray(split).toString("utf8"),
      stdout_truncated: (info.stdout_dropped ?? 0) > 0,
      stderr_truncated: (info.stderr_dropped ?? 0) > 0,
    };
  }

  /** Sends `signal` to the process's group (a no-op on one that has exited). */
  async signal(box: Box, pid: number, signal: BgSignal): Promise<void> {
    this.one(await this.ask(box, { op: "bg_signal", pid, signal }), pid);
  }

  /** Writes to the process's stdin; `eof` closes it afterwards. */
  async writeStdin(box: Box, pid: number, data: Buffer, eof: boolean): Promise<void> {
    if (data.length > this.config.maxStdinBytes)
      throw new ApiError("payload_too_large", `'data' is larger than ${this.config.maxStdinBytes} bytes`);
    const reply = await this.ask(box, { op: "bg_stdin", pid, eof }, data);
    if (reply.status === "not_found") throw notFound(pid);
    if (reply.status !== "ok") throw new ApiError("invalid_state", `Could not write to process ${pid}: ${reply.message ?? reply.status}`);
  }

  /**
   * Follows a process's output: what is retained first, then live output, until it exits (the
   * exit code is returned) or the follower's signal aborts (null). An unknown pid throws before
   * anything is reported, so callers can still answer with a plain 404.
   */
  async follow(box: Box, pid: number, follower: BackgroundFollower, started: () => void): Promise<number | null> {
    // Asked first so that an unknown pid is a plain error, not an empty stream.
    this.one(await this.ask(box, { op: "bg_list" }), pid);
    started();
    const decoders = { 1: new TextDecoder(), 2: new TextDecoder() };
    let handle: { cancel: () => void; id: string } | undefined;
    const code = await new Promise<number | null>((resolve) => {
      const stop = () => {
        handle?.cancel();
        if (handle) box.request({ op: "bg_unwatch", watch: handle.id }).catch(() => {});
        resolve(null);
      };
      void box
        .stream({ op: "bg_watch", pid }, (event: Reply) => {
          if (event.ev === "out") {
            const text = decoders[event.stream].decode(event.body, { stream: true });
            if (text) follower.output(event.stream === 1 ? "stdout" : "stderr", text);
            return false;
          }
          if (event.ev === "exit") {
            const s = event.exit_status ?? -9;
            resolve(s < 0 ? 128 - s : s);
            return true;
          }
          if (event.ev === "bg" || event.ev === "gone" || event.ev === "error") {
            resolve(null);
            return true;
          }
          return false;
        })
        .then(
          (h) => {
            handle = h;
            if (follower.signal?.aborted) stop();
            else follower.signal?.addEventListener("abort", stop, { once: true });
          },
          () => resolve(null),
        );
    });
    return code;
  }

  private async ask(box: Box, req: BgRequest, body?: Buffer): Promise<BgEvent> {
    const reply = await box.request(req, body);
    if (reply.ev === "bg") return reply;
    if (reply.ev === "gone")
      throw new ApiError("invalid_state", "The sandbox's processes ended during the request; background processes ended with them");
    throw new ApiError("internal_error", `Unexpected answer to ${req.op}: ${reply.ev === "error" ? reply.message : reply.ev}`);
  }

  private one(reply: BgEvent, pid: number): BgProcessInfo {
    if (reply.status === "not_found") throw notFound(pid);
    const info = pid === 0 ? reply.procs[0] : reply.procs.find((p) => p.pid === pid);
    if (reply.status !== "ok" || !info) {
      if (reply.status === "ok") throw notFound(pid);
      throw new ApiError("invalid_state", `The background process could not be started: ${reply.message ?? reply.status}`);
    }
    return info;
  }

  private shape(sandboxId: string, info: BgProcessInfo): BackgroundProcess {
    const known = this.argv.get(sandboxId)?.get(info.pid);
    return {
      pid: info.pid,
      command: known?.command ?? info.command,
      args: known?.args ?? [],
      status: info.status,
      exit_code: info.exit_code,
      started_at: info.started_at,
      ended_at: info.ended_at,
    };
  }
}

const notFound = (pid: number) => new ApiError("process_not_found", `No background process with pid ${pid} in the sandbox`);
