// Which provider serves a completion, and the request bytes it is sent: shared by the completion routes.
import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../../errors.js";
import type { ProviderRegistry } from "../providers.js";
import type { ModelInfo, Provider } from "../types.js";

/**
 * Forwards a request whose model is a deployment another node of a cluster runs, or (`servedHere`
 * false) a model only another node serves, to that node, with the request's bytes; false when it
 * is answered here.
 */
export type ModelElsewhere = (
  request: FastifyRequest,
  reply: FastifyReply,
  model: string,
  body: Buffer,
  servedHere: boolean,
) => Promise<boolean>;

/** What choosing a provider needs: the chat providers, and the embedding models (to say why one is the wrong kind). */
export interface ServingDeps {
  providers: ProviderRegistry;
  /** The embedding models served by POST /embeddings (listed with the chat models). */
  embeddings?: { models(): ModelInfo[] };
  /** In a cluster: the nodes that serve what this one does not. */
  elsewhere?: ModelElsewhere;
  /** In a cluster: the models other nodes serve (their deployments, their own models), listed with this node's. */
  elsewhereModels?: (request: FastifyRequest) => Promise<ModelInfo[]>;
}

/** What a 404 says when the gateway has no chat model at all (a fresh install): the three ways to get one. */
export const NO_CHAT_MODEL =
  "this gateway has no chat model yet. Add one in any of three ways: an OpenAI-compatible server in the providers file (AGENTBOX_PROVIDERS_FILE), " +
  "a GGUF model pulled into the data dir (agentbox models pull hf:OWNER/REPO/FILE.gguf), or a GGUF file named by AGENTBOX_MODEL at start; see docs/inference.md";

/** The bytes each request body arrived as, for sending upstream unchanged (kept by the JSON parser of routes.ts). */
const rawBodies = new WeakMap<object, Buffer>();

export function keepRawBody(request: FastifyRequest, bytes: Buffer): void {
  rawBodies.set(request, bytes);
}

export function rawBody(request: FastifyRequest): Buffer | undefined {
  return rawBodies.get(request);
}

export function embeddingModels(deps: ServingDeps): ModelInfo[] {
  return deps.embeddings?.models() ?? [];
}

/**
 * The provider for a chat or text completion. The errors agree with GET /models: a listed model
 * that cannot do this is a 400 saying so, an unknown one a 404 that, when the gateway has no chat
 * model at all, says how to get one.
 */
export function servingProvider(deps: ServingDeps, model: string, tenantId: string, want: "chat" | "completions"): Provider {
  const scope = { tenantId };
  const provider = deps.providers.find(model, scope);
  if (provider) return provider;
  if (embeddingModels(deps).some((m) => m.id === model))
    throw new ApiError(
      "invalid_request",
      `The model '${model}' is an embedding model: it serves POST /v1/inference/embeddings, not ${want === "chat" ? "chat completions" : "text completions"}. GET /v1/inference/models gives each model's capabilities; use one with "${want}"`,
    );
  if (deps.providers.models(scope).length === 0)
    throw new ApiError("model_not_found", `The model '${model}' is not served here: ${NO_CHAT_MODEL}`);
  return deps.providers.resolve(model, scope);
}

/**
 * In a cluster, a completion for a deployment another node runs is forwarded there as it arrived:
 * true, and the reply is that node's. Asked first, as deployments come before the providers file;
 * a model this node does not serve at all goes to another node that does, if any.
 */
export async function servedElsewhere(deps: ServingDeps, request: FastifyRequest, reply: FastifyReply, model: string): Promise<boolean> {
  const { elsewhere } = deps;
  if (!elsewhere) return false;
  const tenantId = request.apiKey.tenantId;
  const here = deps.providers.find(model, { tenantId }) !== undefined || embeddingModels(deps).some((m) => m.id === model);
  return elsewhere(request, reply, model, rawBody(request) ?? Buffer.from(JSON.stringify(request.body)), here);
}
