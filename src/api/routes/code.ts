// POST /sandboxes/{id}/code/run: validates the body, runs it through the sandbox service.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { Services } from "../services.js";
import { CodeRunBody, CodeRunResult } from "../schemas/code.js";
import { errors, SandboxIdParams } from "../schemas/common.js";

export { effectiveTimeout } from "../../sandbox/service.js";

export const codeRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { sandbox } = services;
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
      return sandbox.runCode(request.apiKey, request.params.sandbox_id, {
        code,
        language,
        timeout,
        contextId: context_id,
        environment,
      });
    },
  );
};
