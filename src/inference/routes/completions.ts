// POST /v1/inference/completions: legacy text completions, proxied to the model's provider (whole or streamed).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import { errors } from "../../api/schemas/common.js";
import { clientAbort } from "../../api/sse.js";
import { ApiError } from "../../errors.js";
import { TextCompletionRequestSchema, TextCompletionSchema } from "../schemas.js";
import type { OutgoingTextRequest, TextCompletionRequest, Usage } from "../types.js";
import type { UsageLog } from "../usage.js";
import { answerWhole, streamPlain, upstreamRefusal } from "./answer.js";
import { rawBody, type ServingDeps, servedElsewhere, servingProvider } from "./serving.js";

export const completionRoutes: FastifyPluginAsyncTypebox<{ serving: ServingDeps; usageLog: UsageLog }> = async (
  app,
  { serving, usageLog },
) => {
  app.post(
    "/completions",
    {
      schema: {
        tags: ["inference"],
        summary: "Create a text completion (legacy)",
        description:
          "OpenAI-compatible legacy completions: the prompt is continued as it is (no chat template). `stream: true` answers with server-sent events of `text_completion` objects ending with `data: [DONE]`.",
        body: TextCompletionRequestSchema,
        response: { 200: TextCompletionSchema, ...errors(400, 401, 404, 413, 429, 502, 503, 504) },
      },
    },
    async (request, reply) => {
      const body = request.body as TextCompletionRequest;
      if (await servedElsewhere(serving, request, reply as FastifyReply, body.model)) return reply;
      const provider = servingProvider(serving, body.model, request.apiKey.tenantId, "completions");
      const { completeText, streamText } = provider;
      if (!completeText || !streamText)
        throw new ApiError("invalid_request", `The model '${body.model}' (provider '${provider.name}') does not support text completions`);
      const abort = clientAbort(reply);
      let counted: Usage | undefined;
      const out: OutgoingTextRequest = {
        body,
        raw: rawBody(request),
        onUsage: (u) => {
          counted = u;
        },
      };
      try {
        if (body.stream === true) {
          const includeUsage = body.stream_options?.include_usage === true;
          const start = () => streamText.call(provider, out, abort.signal);
          await streamPlain(usageLog, request, reply, start, body.model, includeUsage, abort.signal, () => counted);
          return reply;
        }
        const result = await completeText.call(provider, out, abort.signal);
        return answerWhole(usageLog, request, reply as FastifyReply, body.model, result, counted);
      } catch (err) {
        return upstreamRefusal(err, reply as FastifyReply);
      }
    },
  );
};
