// POST /v1/inference/embeddings: OpenAI-compatible embeddings (the embedded default model when no
// `model` is given, else an upstream that serves the model). A client that goes away cancels the
// work still queued for it. In a cluster, a request naming a deployment another node runs, or a
// model only another node serves, is answered by that node.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import { errors } from "../api/schemas/common.js";
import type { EmbeddingService } from "./embeddings.js";
import { clientAbort } from "../api/sse.js";
import { DEFAULT_EMBEDDING_MODEL } from "./embeddings-local.js";
import type { ModelElsewhere } from "./routes/serving.js";

const Input = Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1, maxItems: 2048 })]);

const EmbeddingBody = Type.Object(
  {
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "Default: the embedded model GET /models lists" })),
    input: Input,
    encoding_format: Type.Optional(Type.Union([Type.Literal("float"), Type.Literal("base64")])),
    dimensions: Type.Optional(Type.Integer({ minimum: 1, maximum: 8192 })),
    user: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: true },
);

const EmbeddingList = Type.Object({
  object: Type.Literal("list"),
  data: Type.Array(
    Type.Object({
      object: Type.Literal("embedding"),
      embedding: Type.Union([Type.Array(Type.Number()), Type.String({ description: "base64 of little-endian float32" })]),
      index: Type.Integer(),
    }),
  ),
  model: Type.String(),
  usage: Type.Object({ prompt_tokens: Type.Integer(), total_tokens: Type.Integer() }),
});

export async function embeddingRoutes(
  app: FastifyInstance,
  opts: { embeddings: EmbeddingService; elsewhere?: ModelElsewhere | undefined },
): Promise<void> {
  const { elsewhere } = opts;
  app.withTypeProvider<TypeBoxTypeProvider>().post(
    "/embeddings",
    {
      schema: {
        tags: ["inference"],
        summary: "Create embeddings",
        description:
          "OpenAI-compatible. Without `model`, the embedded default model (512 dimensions, runs offline), shared fairly between tenants: 429 when the tenant already has too many inputs waiting, 503 when the request cannot be embedded within the deadline.",
        body: EmbeddingBody,
        response: { 200: EmbeddingList, ...errors(400, 401, 404, 429, 502, 503, 504) },
      },
    },
    async (request, reply) => {
      const { model } = request.body;
      // The embedded model is every node's own (and comes first, as in EmbeddingService). The body
      // as parsed (this scope keeps no raw bytes): the same JSON, for the node that answers.
      if (elsewhere && model !== undefined && model !== DEFAULT_EMBEDDING_MODEL) {
        const here = opts.embeddings.knows(model, request.apiKey.tenantId);
        if (await elsewhere(request, reply, model, Buffer.from(JSON.stringify(request.body)), here)) return reply;
      }
      return opts.embeddings.create(
        { tenantId: request.apiKey.tenantId, keyId: request.apiKey.id },
        request.body,
        clientAbort(reply).signal,
      );
    },
  );
}
