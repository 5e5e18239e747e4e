// envd's process.Process service, mapped onto the sandbox's background processes: every process
// an E2B client starts (commands.run, foreground or not) is one, so it has a pid, takes stdin and
// signals, can be listed and reconnected to, and streams its output until it exits. Its output
// travels as Connect messages (base64 bytes in JSON). A process started with `pty` runs on a
// terminal (pty.ts): its output is the terminal's, its input and window size go to the terminal.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Services } from "../api/services.js";
import { ApiError, invalid } from "../errors.js";
import type { BgSignal } from "../sandbox/background.js";
import { clientStreaming, installConnect, type ServerStream, serverStreaming, unary } from "./connect.js";
import { ConnectError } from "./errors.js";
import { PtyPids, ptyCommand, ptyInput, ptyResize, ptySize } from "./pty.js";
import { targetResolver } from "./target.js";

const SIGNALS: Record<string, BgSignal> = { SIGNAL_SIGKILL: "KILL", SIGNAL_SIGTERM: "TERM", "9": "KILL", "15": "TERM" };

function pidOf(message: Record<string, unknown>): number {
  const selector = message.process as { pid?: unknown; tag?: unknown } | undefined;
  const pid = selector?.pid;
  if (typeof pid === "number" && Number.isInteger(pid) && pid > 0) return pid;
  if (selector?.tag !== undefined) throw new ConnectError("unimplemented", "Selecting a process by tag is not supported; use its pid");
  throw invalid("'process.pid' is required");
}

function stringRecord(value: unknown, name: string): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Object.values(value).some((v) => typeof v !== "string"))
    throw invalid(`'${name}' must map strings to strings`);
  return value as Record<string, string>;
}

const KEEPALIVE = { event: { keepalive: {} } };

const bytes = (text: string) => Buffer.from(text, "utf8").toString("base64");

export async function processRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  installConnect(app);
  const { sandbox } = services;
  const sandboxIdOf = targetResolver(services.sandboxes);
  const ptys = new PtyPids(services.config.maxBackgroundProcesses * 4);
  services.sandboxes.onEnded((id) => ptys.drop(id));

  /** Streams a process's output, then its end; at the call's deadline the process is killed. */
  const follow = async (request: FastifyRequest, pid: number, stream: ServerStream) => {
    const id = sandboxIdOf(request);
    const onTerminal = ptys.get(id, pid) !== undefined;
    stream.send({ event: { start: { pid } } });
    const follower = {
      output: (s: "stdout" | "stderr", text: string) => stream.send({ event: { data: { [onTerminal ? "pty" : s]: bytes(text) } } }),
      signal: stream.signal,
    };
    const code = await sandbox.followBackground(request.apiKey, id, pid, follower, () => {});
    if (code !== null) {
      stream.send({ event: { end: { exitCode: code, exited: true, status: `exit status ${code}` } } });
      return;
    }
    if (stream.deadlinePassed) {
      await sandbox.signalBackground(request.apiKey, id, pid, "KILL").catch(() => {});
      throw new ConnectError("deadline_exceeded", `Process ${pid} ran past the call's timeout and was killed`);
    }
  };

  serverStreaming(
    app,
    "/process.Process/Start",
    async (message, request, stream) => {
      const config = (message.process ?? {}) as { cmd?: unknown; args?: unknown; envs?: unknown; cwd?: unknown };
      if (typeof config.cmd !== "string" || config.cmd === "") throw invalid("'process.cmd' is required");
      const args = config.args ?? [];
      if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) throw invalid("'process.args' must be strings");
      if (config.cwd !== undefined && typeof config.cwd !== "string") throw invalid("'process.cwd' must be a string");
      const environment = stringRecord(config.envs, "process.envs");
      const terminal = message.pty === undefined || message.pty === null ? undefined : ptySize(message.pty);
      const run = terminal ? ptyCommand(config.cmd, args as string[], terminal) : { command: config.cmd, args: args as string[] };
      // The command holds an execution slot while its client follows it, as a native commands/run
      // does: refused (before it starts) by the same gates; given back when it exits, is killed,
      // or the stream ends (the client went away or disconnected; the process then runs on
      // outside the slots, as a native background process does).
      const release = sandbox.holdSlot(request.apiKey);
      try {
        const id = sandboxIdOf(request);
        const proc = await sandbox.startBackground(request.apiKey, id, {
          ...run,
          workingDir: config.cwd || undefined,
          environment,
        });
        if (terminal) ptys.add(id, proc.pid, { cmd: config.cmd, args: args as string[] });
        else ptys.delete(id, proc.pid);
        // Without `stdin: true` the process reads an empty stdin, as under envd (a `cat` ends at once);
        // a terminal's input stays open. (One that has exited already has no stdin to close.)
        if (message.stdin !== true && !terminal)
          await sandbox.writeStdin(request.apiKey, id, proc.pid, Buffer.alloc(0), true).catch(() => {});
        await follow(request, proc.pid, stream);
      } finally {
        release();
      }
    },
    KEEPALIVE,
  );

  serverStreaming(
    app,
    "/process.Process/Connect",
    async (message, request, stream) => {
      await follow(request, pidOf(message), stream);
    },
    KEEPALIVE,
  );

  unary(app, "/process.Process/List", async (_message, request) => {
    const id = sandboxIdOf(request);
    const procs = await sandbox.listBackground(request.apiKey, id);
    return {
      processes: procs
        .filter((p) => p.status === "running")
        .map((p) => ({ pid: p.pid, config: { ...(ptys.get(id, p.pid) ?? { cmd: p.command, args: p.args }), envs: {} } })),
    };
  });

  /** Writes a ProcessInput (`stdin` or `pty`, base64) to process `pid`. */
  const sendInput = async (request: FastifyRequest, id: string, pid: number, value: unknown) => {
    const input = value as { stdin?: unknown; pty?: unknown } | undefined;
    const given = input?.pty ?? input?.stdin;
    if (typeof given !== "string") throw invalid("'input.stdin' or 'input.pty' is required");
    const data = Buffer.from(given, "base64");
    // A terminal's helper reads its stdin as frames: every write to it is one (either field, as envd takes both).
    if (ptys.get(id, pid)) await sandbox.writeStdin(request.apiKey, id, pid, ptyInput(data), false);
    else if (input?.pty !== undefined) throw invalid(`Process ${pid} has no terminal; send 'input.stdin'`);
    else await sandbox.writeStdin(request.apiKey, id, pid, data, false);
  };

  unary(app, "/process.Process/SendInput", async (message, request) => {
    await sendInput(request, sandboxIdOf(request), pidOf(message), message.input);
    return {};
  });

  // Input as a client stream: `start` (the process) first, then `data` messages written in order
  // as they arrive, `keepalive`s ignored. No E2B SDK sends it (docs/e2b.md); a Connect client that
  // streams request bodies (HTTP/1.1 chunked or HTTP/2) can.
  await clientStreaming(app, "/process.Process/StreamInput", async (messages, request) => {
    const id = sandboxIdOf(request);
    let pid: number | undefined;
    for await (const message of messages) {
      if (pid === undefined) {
        const start = message.start as Record<string, unknown> | undefined;
        if (!start) throw invalid("The first message of StreamInput must be 'start' with the process");
        pid = pidOf(start);
        const procs = await sandbox.listBackground(request.apiKey, id);
        if (!procs.some((p) => p.pid === pid && p.status === "running"))
          throw new ApiError("process_not_found", `No running process ${pid}`);
      } else if (message.data !== undefined) {
        await sendInput(request, id, pid, (message.data as { input?: unknown } | null)?.input);
      } else if (message.keepalive === undefined) throw invalid("StreamInput messages are 'start', 'data' or 'keepalive'");
    }
    if (pid === undefined) throw invalid("StreamInput ended before its 'start' message");
    return {};
  });

  // A terminal's new window size (the SDK's pty.resize); its program gets SIGWINCH.
  unary(app, "/process.Process/Update", async (message, request) => {
    const id = sandboxIdOf(request);
    const pid = pidOf(message);
    if (message.pty === undefined || message.pty === null) return {};
    const { rows, cols } = ptySize(message.pty);
    if (!ptys.get(id, pid)) throw invalid(`Process ${pid} has no terminal to resize`);
    await sandbox.writeStdin(request.apiKey, id, pid, ptyResize(rows, cols), false);
    return {};
  });

  unary(app, "/process.Process/CloseStdin", async (message, request) => {
    await sandbox.writeStdin(request.apiKey, sandboxIdOf(request), pidOf(message), Buffer.alloc(0), true);
    return {};
  });

  unary(app, "/process.Process/SendSignal", async (message, request) => {
    const signal = SIGNALS[String(message.signal)];
    if (!signal) throw invalid("'signal' must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
    await sandbox.signalBackground(request.apiKey, sandboxIdOf(request), pidOf(message), signal);
    return {};
  });
}
