// Embeddings: the OpenAI-compatible /embeddings answer, from the embedded default model or from an
// OpenAI-compatible upstream that serves the requested model. Usage is recorded per API key like
// chat completions. Also what the vectors text routes embed with.
import { ApiError, invalid } from "../errors.js";
import { BuiltinEmbedder, type EmbeddingCounters } from "./embeddings-builtin.js";
import type { EmbeddingsConfig } from "./embeddings-config.js";
import { DEFAULT_EMBEDDING_DIMENSIONS, DEFAULT_EMBEDDING_MODEL } from "./embeddings-local.js";
import type { ProviderRegistry } from "./providers.js";
import type { ModelInfo } from "./types.js";
import { UsageLog, type UsageStore } from "./usage.js";
import { tokenCount } from "./upstream-answer.js";

export interface EmbeddingRequest {
  model?: string;
  input: string | string[];
  encoding_format?: "float" | "base64";
  dimensions?: number;
  user?: string;
}

export interface EmbeddingResponse {
  object: "list";
  data: Array<{ object: "embedding"; embedding: number[] | string; index: number }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** A provider that can embed (an OpenAI-compatible upstream). */
interface EmbeddingUpstream {
  embeddings(body: { model: string; [k: string]: unknown }, signal: AbortSignal): Promise<unknown>;
}

interface UpstreamAnswer {
  data?: Array<{ embedding?: unknown; index?: unknown } | null>;
  usage?: { prompt_tokens?: unknown } | null;
}

const MAX_INPUTS = 2048;
const MAX_CHARS = 100_000;
/** Longest an upstream may take to answer embeddings. */
const UPSTREAM_TIMEOUT_MS = 120_000;

/** Who asks: the tenant shares the built-in model with other tenants, usage is recorded per key. */
export interface Caller {
  tenantId: string;
  keyId: string;
}

export interface EmbeddingServiceOptions {
  config: EmbeddingsConfig;
  counters?: EmbeddingCounters;
  /** Where a failed preload is reported. */
  onError?: (msg: string, err: Error) => void;
}

/** Token count for usage: whitespace-separated words (the default model has no public tokenizer count). */
function countTokens(texts: string[]): number {
  let n = 0;
  for (const t of texts) n += t.split(/\s+/).filter((w) => w !== "").length;
  return n;
}

function toBase64(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
}

export class EmbeddingService {
  private readonly builtin: BuiltinEmbedder;
  private readonly usage: UsageLog;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(
    usage: UsageStore,
    private readonly providers: ProviderRegistry,
    private readonly opts: EmbeddingServiceOptions,
  ) {
    this.usage = new UsageLog(usage, (err) => opts.onError?.("embeddings: token usage not stored", err as Error));
    this.builtin = new BuiltinEmbedder(opts.config, opts.counters);
  }

  /** Starts loading the built-in model in the background when the settings ask for it. */
  preload(): void {
    if (!this.opts.config.preload) return;
    this.builtin.load().catch((err: Error) => this.opts.onError?.("loading the embedding model failed", err));
  }

  /** Jobs waiting for the built-in model, over all tenants (for the metrics). */
  queuedJobs(): number {
    return this.builtin.queuedJobs();
  }

  /** Whether the built-in model is loaded (for the metrics). */
  modelLoaded(): boolean {
    return this.builtin.loaded();
  }

  /** The default model, for GET /models. */
  models(): ModelInfo[] {
    return [{ id: DEFAULT_EMBEDDING_MODEL, object: "model", created: this.created, owned_by: "agentbox" }];
  }

  private async run(
    who: Caller,
    model: string,
    texts: string[],
    dimensions: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ vectors: Float32Array[]; tokens: number }> {
    if (texts.length === 0) throw invalid("input must not be empty");
    if (texts.length > MAX_INPUTS) throw invalid(`input has more than ${MAX_INPUTS} items`);
    for (const t of texts) if (t.length > MAX_CHARS) throw invalid(`an input is longer than ${MAX_CHARS} characters`);
    if (model === DEFAULT_EMBEDDING_MODEL) {
      if (dimensions !== undefined && dimensions !== DEFAULT_EMBEDDING_DIMENSIONS)
        throw invalid(`the model '${model}' has ${DEFAULT_EMBEDDING_DIMENSIONS} dimensions; 'dimensions' cannot change it`);
      for (const t of texts) if (t === "") throw invalid("input must not contain empty strings");
      return { vectors: await this.builtin.embed(who.tenantId, texts, signal), tokens: countTokens(texts) };
    }
    // The caller's scope: a tenant's deployment is found (and said not to serve embeddings), not a 404.
    const provider = this.providers.resolve(model, { tenantId: who.tenantId }) as unknown as Partial<EmbeddingUpstream> & { name: string };
    if (typeof provider.embeddings !== "function")
      throw invalid(`The model '${model}' (provider '${provider.name}') does not serve embeddings`);
    const body: { model: string; [k: string]: unknown } = { model, input: texts, encoding_format: "float" };
    if (dimensions !== undefined) body.dimensions = dimensions;
    const timeout = AbortSignal.timeout(UPSTREAM_TIMEOUT_MS);
    const json = ((await provider.embeddings(body, signal ? AbortSignal.any([signal, timeout]) : timeout)) ?? {}) as UpstreamAnswer;
    const data = Array.isArray(json.data) ? json.data : [];
    const vectors: Float32Array[] = new Array(texts.length);
    data.forEach((d, i) => {
      const at = typeof d?.index === "number" ? d.index : i;
      if (!Array.isArray(d?.embedding) || !Number.isInteger(at) || at < 0 || at >= texts.length)
        throw new ApiError("upstream_error", `Provider '${provider.name}' answered embeddings in an unexpected shape`);
      vectors[at] = Float32Array.from(d.embedding as number[]);
    });
    for (let i = 0; i < texts.length; i++)
      if (!vectors[i])
        throw new ApiError("upstream_error", `Provider '${provider.name}' answered ${data.length} embeddings for ${texts.length} inputs`);
    const reported = typeof json.usage === "object" ? json.usage?.prompt_tokens : undefined;
    return { vectors, tokens: reported === undefined ? countTokens(texts) : tokenCount(reported) };
  }

  /** Whether this node knows `model` (it answers for it; in a cluster, another node is asked for any other). */
  knows(model: string, tenantId: string): boolean {
    return model === DEFAULT_EMBEDDING_MODEL || this.providers.find(model, { tenantId }) !== undefined;
  }

  /** For the vectors text routes. */
  async embed(
    who: Caller,
    model: string | undefined,
    texts: string[],
    signal?: AbortSignal,
  ): Promise<{ vectors: Float32Array[]; model: string; tokens: number }> {
    const name = model ?? DEFAULT_EMBEDDING_MODEL;
    const out = await this.run(who, name, texts, undefined, signal);
    this.usage.record(who.keyId, name, out.tokens, 0);
    return { ...out, model: name };
  }

  /** POST /embeddings; `signal` aborts when the client goes away (its queued work is dropped). */
  async create(who: Caller, req: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResponse> {
    const model = req.model ?? DEFAULT_EMBEDDING_MODEL;
    const texts = typeof req.input === "string" ? [req.input] : req.input;
    const out = await this.run(who, model, texts, req.dimensions, signal);
    this.usage.record(who.keyId, model, out.tokens, 0);
    const b64 = req.encoding_format === "base64";
    return {
      object: "list",
      data: out.vectors.map((v, index) => ({ object: "embedding", embedding: b64 ? toBase64(v) : Array.from(v), index })),
      model,
      usage: { prompt_tokens: out.tokens, total_tokens: out.tokens },
    };
  }

  async close(): Promise<void> {
    await this.usage.flush();
    await this.builtin.close();
  }
}
