// GET /v1/inference/models: the chat models of the providers and the embedding models, in OpenAI's
// list shape; in a cluster with the other nodes' models too (each model once).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors } from "../../api/schemas/common.js";
import { ModelList } from "../schemas.js";
import type { Capability } from "../types.js";
import { embeddingModels, type ServingDeps } from "./serving.js";

const EMBEDDING_ONLY: Capability[] = ["embeddings"];
const CHAT_AND_TEXT: Capability[] = ["chat", "completions"];

export const modelRoutes: FastifyPluginAsyncTypebox<{ deps: ServingDeps }> = async (app, { deps }) => {
  app.get(
    "/models",
    {
      schema: {
        tags: ["inference"],
        summary: "List models",
        description:
          "The models the gateway routes (OpenAI list shape). Providers that route by prefix list only their named models. In a cluster, every node's models and the tenant's deployments on every node, each once (a request naming one is answered by a node that serves it).",
        response: { 200: ModelList, ...errors(401) },
      },
    },
    async (request) => {
      const { tenantId } = request.apiKey;
      const data = [
        ...deps.providers.models({ tenantId }),
        ...embeddingModels(deps).map((m) => ({ ...m, capabilities: m.capabilities ?? EMBEDDING_ONLY })),
      ];
      if (deps.elsewhereModels) {
        const seen = new Set(data.map((m) => m.id));
        // The shared rows out of reach (the database away): this node's own models, as it can serve them.
        const others = await deps.elsewhereModels(request).catch(() => []);
        for (const m of others)
          if (!seen.has(m.id)) {
            seen.add(m.id);
            data.push({ ...m, capabilities: m.capabilities ?? CHAT_AND_TEXT });
          }
      }
      return { object: "list" as const, data };
    },
  );
};
