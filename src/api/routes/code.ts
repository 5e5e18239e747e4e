// POST /sandboxes/{id}/code/run: validates, prepares the code for its kernel, runs it in the sandbox.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { Config } from "../../config.js";
import { ApiError, invalid } from "../../errors.js";
import { prepareJs } from "../../sandbox/transpile.js";
import type { Services } from "../services.js";
import { CodeRunBody, CodeRunResult } from "../schemas/code.js";
import { errors, SandboxIdParams } from "../schemas/common.js";

/** The run's timeout in seconds: the client's value, else the default of 30; above the configured maximum is a 400. */
export function effectiveTimeout(bodyTimeout: number | undefined, config: Pick<Config, "defaultRunTimeoutS" | "maxRunTimeoutS">): number {
  const timeoutS = bodyTimeout ?? config.defaultRunTimeoutS;
  if (timeoutS > config.maxRunTimeoutS) throw invalid(`'timeout' must be at most ${config.maxRunTimeoutS} seconds`);
  return timeoutS;
}

export const codeRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { sandboxes, config } = services;

  app.post(
    "/sandboxes/:sandbox_id/code/run",
    {
      schema: {
        tags: ["code"],
        summary: "Run code in a sandbox",
        description:
          "Runs code in the sandbox's persistent kernel for the language (state persists between runs). A failing program is still a 200: its error is in `error`.",
        params: SandboxIdParams,
        body: CodeRunBody,
        response: { 200: Type.Ref(CodeRunResult), ...errors(400, 401, 404, 413, 429, 503) },
      },
    },
    async (request) => {
      const { code, language, context_id, environment } = request.body;
      const timeoutS = effectiveTimeout(request.body.timeout, config);
      if (Buffer.byteLength(code) > config.maxCodeBytes)
        throw new ApiError("payload_too_large", `'code' is larger than ${config.maxCodeBytes} bytes`);
      const box = sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      let kernel: string | undefined;
      let cwd: string | undefined;
      if (context_id !== undefined) {
        const context = services.contexts.get(request.params.sandbox_id, context_id);
        if (context.language !== language) {
          throw invalid(`Context '${context_id}' runs ${context.language}, not ${language}`);
        }
        kernel = context.kernel;
        cwd = context.cwd; // a context kernel restarted after a timeout comes back in its own cwd
      }
      const prepared =
        language === "javascript" || language === "typescript" ? prepareJs(code, language === "typescript") : { code, isAsync: false };
      const result = await sandboxes.execute(() =>
        box.run({ language, code: prepared.code, isAsync: prepared.isAsync, timeoutS, kernel, cwd, env: environment }),
      );
      services.metrics?.executions.inc({ language, outcome: result.outcome });
      if (result.outcome === "kernel_lost" || result.error?.includes("state was lost")) services.metrics?.kernelRestarts.inc({ language });
      return { logs: { stdout: result.stdout, stderr: result.stderr }, error: result.error, execution_time_ms: result.executionTimeMs };
    },
  );
};
