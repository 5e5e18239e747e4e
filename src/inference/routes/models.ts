// GET /v1/inference/models: the chat models of the providers and the embedding models, in OpenAI's list shape.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors } from "../../api/schemas/common.js";
import { ModelList } from "../schemas.js";
import type { Capability } from "../types.js";
import { embeddingModels, type ServingDeps } from "./serving.js";

const EMBEDDING_ONLY: Capability[] = ["embeddings"];

export const modelRoutes: FastifyPluginAsyncTypebox<{ deps: ServingDeps }> = async (app, { deps }) => {
  app.get(
    "/models",
    {
      schema: {
        tags: ["inference"],
        summary: "List models",
        description: "The models the gateway routes (OpenAI list shape). Providers that route by prefix list only their named models.",
        response: { 200: ModelList, ...errors(401) },
      },
    },
    async (request) => ({
      object: "list" as const,
      data: [
        ...deps.providers.models({ tenantId: request.apiKey.tenantId }),
        ...embeddingModels(deps).map((m) => ({ ...m, capabilities: m.capabilities ?? EMBEDDING_ONLY })),
      ],
    }),
  );
};
