// GET /v1/inference/usage: the calling key's token usage per model.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors } from "../../api/schemas/common.js";
import { UsageQuery, UsageReport } from "../schemas.js";
import type { UsageLog } from "../usage.js";

export const usageRoutes: FastifyPluginAsyncTypebox<{ usageLog: UsageLog }> = async (app, { usageLog }) => {
  app.get(
    "/usage",
    {
      schema: {
        tags: ["inference"],
        summary: "Token usage of the calling API key",
        description: "Prompt and completion tokens and request counts per model, for the key that calls this.",
        querystring: UsageQuery,
        response: { 200: UsageReport, ...errors(400, 401) },
      },
    },
    async (request) => {
      const since = request.query.since === undefined ? "" : new Date(request.query.since).toISOString();
      return usageLog.forKey(request.apiKey.id, since);
    },
  );
};
