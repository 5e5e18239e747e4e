// Types of the inference gateway: the OpenAI chat shapes it reads, and the Provider interface that
// every upstream kind (an OpenAI-compatible server, a local GGUF model) implements. It imports
// nothing: providers, routes and the other areas (deployments, models) import it.

// --- OpenAI chat shapes (only the fields the gateway reads; everything else passes through) ---

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string; [k: string]: unknown }> | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  [k: string]: unknown;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean; [k: string]: unknown };
  tools?: Array<{ type: string; [k: string]: unknown }>;
  tool_choice?: unknown;
  temperature?: number;
  top_p?: number;
  seed?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  stop?: string | string[] | null;
  max_steps?: number;
  [k: string]: unknown;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: Array<{ index: number; message: ChatMessage; finish_reason: string | null; [k: string]: unknown }>;
  usage?: Usage;
  [k: string]: unknown;
}

export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: {
      role?: string;
      content?: string | null;
      tool_calls?: Array<{ index: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }>;
      [k: string]: unknown;
    };
    finish_reason: string | null;
    [k: string]: unknown;
  }>;
  usage?: Usage | null;
  [k: string]: unknown;
}

// --- Legacy text completions (POST /completions) ---

export interface TextCompletionRequest {
  model: string;
  prompt: string | string[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean; [k: string]: unknown } | null;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  seed?: number;
  n?: number;
  stop?: string | string[] | null;
  [k: string]: unknown;
}

export interface TextCompletion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  choices: Array<{ index: number; text: string; logprobs: null; finish_reason: string | null; [k: string]: unknown }>;
  usage?: Usage;
  [k: string]: unknown;
}

/** A text completion request on its way to a provider (as OutgoingRequest is for chat). */
export interface OutgoingTextRequest {
  body: TextCompletionRequest;
  raw?: Buffer;
  onUsage?: (usage: Usage) => void;
}

// --- Providers ---

/** What a listed model can be asked for: chat completions, legacy text completions, embeddings. */
export type Capability = "chat" | "completions" | "embeddings";

export interface ModelInfo {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
  /** Set by the registry (from the serving provider) or by the gateway for its embedding models; sources may set it themselves. */
  capabilities?: Capability[];
}

/** A model as GET /models lists it: its capabilities always said. */
export type ListedModel = ModelInfo & { capabilities: Capability[] };

/** A request on its way to a provider: the parsed body and, when it can go out unchanged, its original bytes. */
export interface OutgoingRequest {
  body: ChatRequest;
  /** The exact JSON bytes to send; absent when the gateway changed the body. */
  raw?: Buffer;
  /** Told the token usage when the provider counts it itself (a local model), also for an aborted request. */
  onUsage?: (usage: Usage) => void;
}

export interface CompletionResult {
  json: ChatCompletion;
  /** The upstream's bytes, when the client can be given them as they are. */
  raw?: Buffer;
}

/**
 * A started stream: batches of SSE `data:` payloads (JSON text of chat.completion.chunk objects),
 * one batch per piece the upstream delivered. Iterating ends at the upstream's end or its "[DONE]"
 * (which is not included: the route writes its own); an upstream failure mid-stream throws an ApiError.
 */
export type EventBatches = AsyncIterable<string[]>;

export interface Provider {
  readonly name: string;
  readonly type: "openai" | "local";
  /** Models this provider lists in GET /models. */
  models(): ModelInfo[];
  /** Whether a model id routes here (an exact id or the provider's prefix). */
  serves(model: string): boolean;
  /** Whether requests with `tools` can go to this provider. */
  readonly supportsTools: boolean;
  /** Non-streamed completion. Upstream failures throw ApiError (or UpstreamHttpError for a 4xx). */
  complete(req: OutgoingRequest, signal: AbortSignal): Promise<CompletionResult>;
  /**
   * Streamed completion: resolves once the upstream accepted the request (so refusals are still
   * plain HTTP errors); the stream always ends with a usage chunk when the upstream reports usage.
   */
  stream(req: OutgoingRequest, signal: AbortSignal): Promise<EventBatches>;
  /** Legacy text completion; a provider without it answers POST /completions with a 400. */
  completeText?(req: OutgoingTextRequest, signal: AbortSignal): Promise<{ json: TextCompletion; raw?: Buffer }>;
  /** Streamed text completion: batches of `text_completion` JSON payloads, as `stream` does for chat. */
  streamText?(req: OutgoingTextRequest, signal: AbortSignal): Promise<EventBatches>;
  close(): Promise<void>;
}

/** An upstream's own 4xx answer, passed to the client with its status, code and message (in the error envelope). */
export class UpstreamHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfter: string | undefined,
  ) {
    super(message);
  }
}
