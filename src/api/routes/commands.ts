// POST /sandboxes/{id}/commands/run: one fresh `bash -c` process in the sandbox per call.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Services } from "../services.js";
import { CommandRunBody, CommandRunResult } from "../schemas/commands.js";
import { errors, SandboxIdParams } from "../schemas/common.js";

export { commandLine, shellQuote } from "../../sandbox/service.js";

export const commandRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { sandbox } = services;

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
      return sandbox.runCommand(request.apiKey, request.params.sandbox_id, {
        command: body.command,
        args: body.args ?? undefined,
        workingDir: body.working_dir ?? undefined,
        environment: body.environment ?? undefined,
        timeoutMs: body.timeout ?? undefined,
      });
    },
  );
};
