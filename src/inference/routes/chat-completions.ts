// POST /v1/inference/chat/completions: proxied to the model's provider (whole or streamed), or run
// with the built-in code tool (code-tool.ts).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import { errors } from "../../api/schemas/common.js";
import { clientAbort } from "../../api/sse.js";
import { ApiError } from "../../errors.js";
import { type CodeToolSandboxes, findCodeTool } from "../codetool.js";
import { ChatCompletionSchema, ChatRequestSchema } from "../schemas.js";
import type { ChatRequest, OutgoingRequest, Usage } from "../types.js";
import type { UsageLog } from "../usage.js";
import { answerWhole, streamPlain, upstreamRefusal } from "./answer.js";
import { withCodeTool } from "./code-tool.js";
import { rawBody, type ServingDeps, servedElsewhere, servingProvider } from "./serving.js";

export interface ChatCompletionDeps {
  serving: ServingDeps;
  /** The code tool runs code through the same service (and gates) as POST /code/run. */
  sandboxes: CodeToolSandboxes;
  usageLog: UsageLog;
}

export const chatCompletionRoutes: FastifyPluginAsyncTypebox<ChatCompletionDeps> = async (app, { serving, sandboxes, usageLog }) => {
  app.post(
    "/chat/completions",
    {
      schema: {
        tags: ["inference"],
        summary: "Create a chat completion",
        description:
          'OpenAI-compatible. `stream: true` answers with server-sent events. The tool `{"type": "code_interpreter"}` lets the model run code in a sandbox; the response then lists each run in `steps`.',
        body: ChatRequestSchema,
        response: { 200: ChatCompletionSchema, ...errors(400, 401, 404, 413, 429, 502, 503, 504) },
      },
    },
    async (request, reply) => {
      const body = request.body as ChatRequest;
      if (await servedElsewhere(serving, request, reply as FastifyReply, body.model)) return reply;
      const provider = servingProvider(serving, body.model, request.apiKey.tenantId, "chat");
      const codeTool = findCodeTool(body.tools);
      if (codeTool && !provider.supportsTools)
        throw new ApiError("invalid_request", `The model '${body.model}' (provider '${provider.name}') does not support tools`);
      const abort = clientAbort(reply);
      try {
        if (codeTool) return await withCodeTool(sandboxes, usageLog, request, reply, provider, body, codeTool, abort.signal);
        let counted: Usage | undefined;
        const out: OutgoingRequest = {
          body,
          raw: rawBody(request),
          onUsage: (u) => {
            counted = u;
          },
        };
        if (body.max_steps !== undefined) {
          // Our own field (for the code tool): not for the upstream.
          const { max_steps: _, ...rest } = body;
          out.body = rest;
          out.raw = undefined;
        }
        if (body.stream === true) {
          const includeUsage = body.stream_options?.include_usage === true;
          await streamPlain(
            usageLog,
            request,
            reply,
            () => provider.stream(out, abort.signal),
            body.model,
            includeUsage,
            abort.signal,
            () => counted,
          );
          return reply;
        }
        const result = await provider.complete(out, abort.signal);
        return answerWhole(usageLog, request, reply as FastifyReply, body.model, result, counted);
      } catch (err) {
        return upstreamRefusal(err, reply as FastifyReply);
      }
    },
  );
};
