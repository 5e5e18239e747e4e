// POST /sandboxes/{id}/commands/run: one fresh `bash -c` process in the sandbox per call.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { SandboxService } from "../service.js";
import { BackgroundStarted, StreamQuery } from "../schemas/background.js";
import { CommandRunBody, CommandRunResult } from "../schemas/commands.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
import { streamWork, wantsStream } from "../../api/sse.js";

export { commandLine, shellQuote } from "../service.js";

export const commandRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService }> = async (app, { sandbox }) => {
  app.post(
    "/sandboxes/:sandbox_id/commands/run",
    {
      schema: {
        tags: ["commands"],
        summary: "Run a shell command in a sandbox",
        description:
          "Runs `command` (plus `args`, each shell-quoted) with `bash -c` as a fresh process in the sandbox, in `working_dir` " +
          "(default /home/user). A non-zero exit is still a 200: see `exit_code`, `success` and `error`. Processes it starts " +
          "in the background keep running until the sandbox ends. With `background: true` the command itself is a background process: the " +
          "answer is {pid, command, args, started_at} at once. With `stream: true` (or `?stream=true`, or `Accept: text/event-stream`) the answer is " +
          "text/event-stream: `stdout` and `stderr` events ({text}) as produced, then `end` with the answer below; closing the connection kills the command.",
        params: SandboxIdParams,
        querystring: StreamQuery,
        body: CommandRunBody,
        response: { 200: Type.Union([CommandRunResult, BackgroundStarted]), ...errors(400, 401, 404, 413, 429, 503) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const id = request.params.sandbox_id;
      const input = {
        command: body.command,
        args: body.args ?? undefined,
        workingDir: body.working_dir ?? undefined,
        environment: body.environment ?? undefined,
        timeoutMs: body.timeout ?? undefined,
      };
      if (body.background === true) {
        const p = await sandbox.startBackground(request.apiKey, id, input);
        return { pid: p.pid, command: p.command, args: p.args, started_at: p.started_at };
      }
      if (wantsStream(request, body.stream))
        return streamWork(request, reply, (observer) => sandbox.runCommand(request.apiKey, id, input, observer));
      return sandbox.runCommand(request.apiKey, id, input);
    },
  );
};
