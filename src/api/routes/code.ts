// POST /sandboxes/{id}/code/run: validates, prepares the code for its kernel, runs it in the sandbox.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { runCode } from "../code-runner.js";
import type { Services } from "../services.js";
import { CodeRunBody, CodeRunResult } from "../schemas/code.js";
import { errors, SandboxIdParams } from "../schemas/common.js";

export { effectiveTimeout } from "../code-runner.js";

export const codeRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
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
      const { code, language, timeout, context_id, environment } = request.body;
      return runCode(services, request.apiKey.tenantId, request.params.sandbox_id, {
        code,
        language,
        timeout,
        contextId: context_id,
        environment,
      });
    },
  );
};
