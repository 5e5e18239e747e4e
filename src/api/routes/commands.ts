// POST /sandboxes/{id}/commands/run: one fresh `bash -c` process in the sandbox per call.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { ApiError, invalid } from "../../errors.js";
import { WorkingDirMissing } from "../../sandbox/box.js";
import type { Services } from "../services.js";
import { CommandRunBody, CommandRunResult } from "../schemas/commands.js";
import { errors, SandboxIdParams } from "../schemas/common.js";

const DEFAULT_TIMEOUT_MS = 30_000;

/** Quotes one argument for bash: left alone when it is plainly safe, else single-quoted. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** `command` is a shell command line as given; each of `args` is appended as one quoted word. */
export function commandLine(command: string, args: readonly string[] = []): string {
  return [command, ...args.map(shellQuote)].join(" ");
}

export const commandRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { sandboxes, config } = services;

  app.post(
    "/sandboxes/:sandbox_id/commands/run",
    {
      schema: {
        tags: ["commands"],
        summary: "Run a shell command in a sandbox",
        description:
          "Runs `command` (plus `args`, each shell-quoted) with `bash -c` as a fresh process in the sandbox, in `working_dir` " +
          "(default /home/user). A non-zero exit is still a 200: see `exit_code`, `success` and `error`. Processes it starts " +
          "in the background keep running until the sandbox ends.",
        params: SandboxIdParams,
        body: CommandRunBody,
        response: { 200: CommandRunResult, ...errors(400, 401, 404, 413, 429, 503) },
      },
    },
    async (request) => {
      const body = request.body;
      const timeoutMs = body.timeout ?? DEFAULT_TIMEOUT_MS;
      const maxMs = config.maxRunTimeoutS * 1000;
      if (timeoutMs > maxMs) throw invalid(`'timeout' must be at most ${maxMs} milliseconds`);
      const args = body.args ?? [];
      const env = body.environment ?? undefined;
      const strings = [body.command, ...args, body.working_dir ?? "", ...Object.values(env ?? {})];
      if (strings.some((s) => s.includes("\0")))
        throw invalid("Command, arguments, working_dir and environment must not contain NUL bytes");
      const command = commandLine(body.command, args);
      if (Buffer.byteLength(command) > config.maxCodeBytes) {
        throw new ApiError("payload_too_large", `The command line is larger than ${config.maxCodeBytes} bytes`);
      }
      const box = sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      try {
        const r = await sandboxes.execute(() => box.command({ command, cwd: body.working_dir ?? undefined, env, timeoutMs }));
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
    },
  );
};
