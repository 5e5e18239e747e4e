// POST /sandboxes/{id}/code/run: validates the body, runs it through the sandbox service.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { SandboxService } from "../service.js";
import { CodeRunBody, CodeRunResult } from "../schemas/code.js";
import { StreamQuery } from "../schemas/background.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
import { streamWork, wantsStream } from "../../api/sse.js";

export { effectiveTimeout } from "../service.js";

export const codeRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService }> = async (app, { sandbox }) => {
  app.post(
    "/sandboxes/:sandbox_id/code/run",
    {
      schema: {
        tags: ["code"],
        summary: "Run code in a sandbox",
        description:
          "Runs code in the sandbox's persistent kernel for the language (state persists between runs). A failing program is still a 200: its error is in `error`. " +
          "With `stream: true` (or `?stream=true`, or `Accept: text/event-stream`) the answer is text/event-stream: `stdout` and `stderr` events ({text}) as " +
          "produced, `result` events (one rich result each), and a final `end` whose data is the answer below (or an error envelope). Closing the " +
          "connection interrupts the run (a python kernel keeps its state).",
        params: SandboxIdParams,
        querystring: StreamQuery,
        body: CodeRunBody,
        response: { 200: Type.Ref(CodeRunResult), ...errors(400, 401, 404, 413, 429, 503) },
      },
    },
    async (request, reply) => {
      const { code, language, timeout, context_id, environment } = request.body;
      const input = { code, language, timeout, contextId: context_id, environment };
      if (wantsStream(request, request.body.stream))
        return streamWork(request, reply, (observer) => sandbox.runCode(request.apiKey, request.params.sandbox_id, input, observer));
      return sandbox.runCode(request.apiKey, request.params.sandbox_id, input);
    },
  );
};
