// The inference gateway's routes, under /v1/inference: OpenAI-compatible chat completions (plain,
// streamed, and with the built-in code tool), the model list, and the caller's token usage.
//
// Hot path of a proxied completion: the body is parsed once (the route needs `model`) and its
// original bytes are what goes upstream; the upstream's answer is parsed once (for usage) and its
// bytes are what the client gets. A stream is passed on event by event as it arrives, and a client
// that disconnects aborts the upstream request.
import type { ServerResponse } from "node:http";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { jsonDepthExceeds } from "../api/bounds.js";
import { errors } from "../api/schemas/common.js";
import { ApiError } from "../errors.js";
import {
  addUsage,
  CodeRunner,
  type CodeToolSpec,
  DEFAULT_MAX_STEPS,
  findCodeTool,
  type Step,
  TurnAccumulator,
  upstreamBody,
} from "./codetool.js";
import {
  ChatCompletionSchema,
  ChatRequestSchema,
  ModelList,
  TextCompletionRequestSchema,
  TextCompletionSchema,
  UsageQuery,
  UsageReport,
} from "./schemas.js";
import {
  type Capability,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatRequest,
  type EventBatches,
  type InferenceDeps,
  type ModelInfo,
  type OutgoingRequest,
  type OutgoingTextRequest,
  type Provider,
  type TextCompletionRequest,
  UpstreamHttpError,
  type Usage,
} from "./types.js";
import { SqliteUsageStore, UsageLog } from "./usage.js";

/** The bytes each request body arrived as, for sending upstream unchanged. */
const rawBodies = new WeakMap<object, Buffer>();

const CODE_CALL = "code_interpreter";
const EMBEDDING_ONLY: Capability[] = ["embeddings"];
/** What a 404 says when the gateway has no chat model at all (a fresh install): the three ways to get one. */
export const NO_CHAT_MODEL =
  "this gateway has no chat model yet. Add one in any of three ways: an OpenAI-compatible server in the providers file (AGENTBOX_PROVIDERS_FILE), " +
  "a GGUF model pulled into the data dir (agentbox models pull hf:OWNER/REPO/FILE.gguf), or a GGUF file named by AGENTBOX_MODEL at start; see docs/inference.md";
const TOOL_STEP_CHOICES = [{ index: 0, delta: {}, finish_reason: null }];

/** Whether an SSE payload carries a usage object (not `"usage": null`), without parsing it. */
function hasUsage(data: string): boolean {
  let i = data.indexOf('"usage"');
  if (i < 0) return false;
  i += 7;
  while (i < data.length) {
    const c = data.charCodeAt(i);
    if (c !== 32 && c !== 58 /* : */) return c === 123; /* { */
    i++;
  }
  return false;
}

/** Writes to a response; returns a promise only when the client is slow (wait for drain or close). */
function write(res: ServerResponse, text: string): Promise<void> | undefined {
  if (res.write(text)) return undefined;
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/** Takes the response over for server-sent events, keeping the headers hooks already set (request id, rate limits). */
function startSse(reply: FastifyReply): ServerResponse {
  // Revoking the key drops the connection; the client abort below then stops the upstream call.
  reply.holdOpen();
  reply.hijack();
  const res = reply.raw;
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value);
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" });
  res.flushHeaders();
  return res;
}

/** An AbortController aborted when the client goes away before the answer is complete. */
export function clientAbort(reply: FastifyReply): AbortController {
  const abort = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) abort.abort(new Error("the client closed the connection"));
  });
  return abort;
}

/** An upstream's own 4xx, passed on with its status and code; anything else is rethrown. */
function upstreamRefusal(err: unknown, reply: FastifyReply): FastifyReply {
  if (err instanceof UpstreamHttpError && !reply.sent) {
    if (err.retryAfter) reply.header("retry-after", err.retryAfter);
    return reply.status(err.status).send({ error: { code: err.code, message: err.message } });
  }
  throw err;
}

/** The error envelope for a failure, as an SSE payload (after a stream began, an error can only be an event). */
function errorEvent(err: unknown, request: FastifyRequest): string {
  let code = "internal_error";
  let message = "Internal server error; it has been logged";
  if (err instanceof ApiError || err instanceof UpstreamHttpError) {
    code = err.code;
    message = err.message;
  } else {
    request.log.error({ err }, "inference stream failed");
  }
  return `data: ${JSON.stringify({ error: { code, message } })}\n\n`;
}

export async function inferenceRoutes(app: FastifyInstance, opts: { deps: InferenceDeps }): Promise<void> {
  const { deps } = opts;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const usageLog = new UsageLog(new SqliteUsageStore(deps.db), (err) => app.log.warn({ err }, "token usage not stored"));
  const maxDepth = deps.maxJsonDepth ?? 64;
  app.addHook("onClose", async () => usageLog.flush());

  // JSON bodies in this scope keep their bytes as well (same rules as the app's own parser).
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const buf = body as Buffer;
    const text = buf.toString("utf8");
    if (text.trim() === "") return done(null, undefined);
    if (jsonDepthExceeds(text, maxDepth)) {
      return done(new ApiError("invalid_request", `JSON body is nested deeper than ${maxDepth} levels`), undefined);
    }
    try {
      const parsed: unknown = JSON.parse(text);
      rawBodies.set(request, buf);
      done(null, parsed);
    } catch (err) {
      const e = err as Error & { statusCode?: number; code?: string };
      e.statusCode = 400;
      e.code = "FST_ERR_CTP_INVALID_JSON_BODY";
      done(e, undefined);
    }
  });

  api.get(
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
        ...embeddingModels().map((m) => ({ ...m, capabilities: m.capabilities ?? EMBEDDING_ONLY })),
      ],
    }),
  );

  api.get(
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

  api.post(
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
      const provider = servingProvider(body.model, request.apiKey.tenantId, "chat");
      const codeTool = findCodeTool(body.tools);
      if (codeTool && !provider.supportsTools)
        throw new ApiError("invalid_request", `The model '${body.model}' (provider '${provider.name}') does not support tools`);
      const abort = clientAbort(reply);
      try {
        if (codeTool) return await withCodeTool(request, reply, provider, body, codeTool, abort.signal);
        let counted: Usage | undefined;
        const out: OutgoingRequest = {
          body,
          raw: rawBodies.get(request),
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
        return answerWhole(request, reply as FastifyReply, body.model, result, counted);
      } catch (err) {
        return upstreamRefusal(err, reply as FastifyReply);
      }
    },
  );

  api.post(
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
      const provider = servingProvider(body.model, request.apiKey.tenantId, "completions");
      const { completeText, streamText } = provider;
      if (!completeText || !streamText)
        throw new ApiError("invalid_request", `The model '${body.model}' (provider '${provider.name}') does not support text completions`);
      const abort = clientAbort(reply);
      let counted: Usage | undefined;
      const out: OutgoingTextRequest = {
        body,
        raw: rawBodies.get(request),
        onUsage: (u) => {
          counted = u;
        },
      };
      try {
        if (body.stream === true) {
          const includeUsage = body.stream_options?.include_usage === true;
          const start = () => streamText.call(provider, out, abort.signal);
          await streamPlain(request, reply, start, body.model, includeUsage, abort.signal, () => counted);
          return reply;
        }
        const result = await completeText.call(provider, out, abort.signal);
        return answerWhole(request, reply as FastifyReply, body.model, result, counted);
      } catch (err) {
        return upstreamRefusal(err, reply as FastifyReply);
      }
    },
  );

  function embeddingModels(): ModelInfo[] {
    return deps.embeddings?.models() ?? [];
  }

  /**
   * The provider for a chat or text completion. The errors agree with GET /models: a listed model
   * that cannot do this is a 400 saying so, an unknown one a 404 that, when the gateway has no chat
   * model at all, says how to get one.
   */
  function servingProvider(model: string, tenantId: string, want: "chat" | "completions"): Provider {
    const scope = { tenantId };
    const provider = deps.providers.find(model, scope);
    if (provider) return provider;
    if (embeddingModels().some((m) => m.id === model))
      throw new ApiError(
        "invalid_request",
        `The model '${model}' is an embedding model: it serves POST /v1/inference/embeddings, not ${want === "chat" ? "chat completions" : "text completions"}. GET /v1/inference/models gives each model's capabilities; use one with "${want}"`,
      );
    if (deps.providers.models(scope).length === 0)
      throw new ApiError("model_not_found", `The model '${model}' is not served here: ${NO_CHAT_MODEL}`);
    return deps.providers.resolve(model, scope);
  }

  /**
   * A whole (not streamed) completion: its usage recorded (the count the provider reported while
   * answering first), then the upstream's own bytes when there are any (the typed reply only knows
   * the schema's object shape), else the parsed answer.
   */
  function answerWhole<T extends { usage?: Usage }>(
    request: FastifyRequest,
    reply: FastifyReply,
    model: string,
    result: { json: T; raw?: Buffer },
    counted: Usage | undefined,
  ): T | FastifyReply {
    const u = counted ?? result.json.usage;
    usageLog.record(request.apiKey.id, model, u?.prompt_tokens ?? 0, u?.completion_tokens ?? 0);
    if (result.raw) return reply.type("application/json").send(result.raw);
    return result.json;
  }

  /** A streamed completion (chat without the code tool, or text): upstream events go to the client as they come. */
  async function streamPlain(
    request: FastifyRequest,
    reply: FastifyReply,
    start: () => Promise<EventBatches>,
    model: string,
    includeUsage: boolean,
    signal: AbortSignal,
    counted: () => Usage | undefined,
  ): Promise<void> {
    const batches = await start(); // a refusal here is still a plain HTTP error
    const res = startSse(reply);
    let seen: Usage | undefined;
    try {
      for await (const batch of batches) {
        let text = "";
        for (const data of batch) {
          if (hasUsage(data)) {
            const chunk = JSON.parse(data) as ChatCompletionChunk;
            if (chunk.usage) seen = chunk.usage;
            // The usage-only chunk the gateway asked for on its own account.
            if (!includeUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0) continue;
          }
          text += `data: ${data}\n\n`;
        }
        if (text !== "") {
          const wait = write(res, text);
          if (wait) await wait;
        }
        if (signal.aborted) break;
      }
      if (!signal.aborted) res.end("data: [DONE]\n\n");
    } catch (err) {
      if (!signal.aborted) res.end(errorEvent(err, request));
    } finally {
      if (!res.writableEnded) res.destroy();
      const u = counted() ?? seen;
      usageLog.record(request.apiKey.id, model, u?.prompt_tokens ?? 0, u?.completion_tokens ?? 0);
    }
  }

  /** A completion with the built-in code tool: model turns and code runs alternate until the model answers. */
  async function withCodeTool(
    request: FastifyRequest,
    reply: FastifyReply,
    provider: Provider,
    body: ChatRequest,
    spec: CodeToolSpec,
    signal: AbortSignal,
  ): Promise<ChatCompletion | FastifyReply> {
    const runner = new CodeRunner(deps.sandboxes, request.apiKey, spec);
    const total: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    const steps: Step[] = [];
    const messages = [...body.messages];
    const maxSteps = body.max_steps ?? DEFAULT_MAX_STEPS;
    const stream = body.stream === true;
    let res: ServerResponse | undefined;
    let head = { id: "", created: 0, model: body.model };
    try {
      for (let rounds = 0; ; rounds++) {
        const last = rounds >= maxSteps;
        let counted: Usage | undefined;
        const out: OutgoingRequest = {
          body: upstreamBody(body, messages, last, stream),
          onUsage: (u) => {
            counted = u;
          },
        };
        let message: {
          content: ChatCompletion["choices"][number]["message"]["content"];
          calls: NonNullable<ChatCompletion["choices"][number]["message"]["tool_calls"]>;
        };
        let final: ChatCompletion | undefined;
        if (!stream) {
          const result = await provider.complete(out, signal);
          addUsage(total, counted ?? result.json.usage);
          const m = result.json.choices[0]?.message;
          message = { content: m?.content ?? null, calls: m?.tool_calls ?? [] };
          final = result.json;
        } else {
          const batches = await provider.stream(out, signal);
          res ??= startSse(reply);
          const turn = new TurnAccumulator();
          let seen: Usage | undefined;
          for await (const batch of batches) {
            let text = "";
            for (const data of batch) {
              const chunk = JSON.parse(data) as ChatCompletionChunk;
              if (chunk.usage) seen = chunk.usage;
              if (Array.isArray(chunk.choices) && chunk.choices.length === 0) continue; // usage: summed at the end
              head = { id: chunk.id, created: chunk.created, model: chunk.model };
              turn.add(chunk);
              text += `data: ${data}\n\n`;
            }
            if (text !== "") {
              const wait = write(res, text);
              if (wait) await wait;
            }
            if (signal.aborted) return reply;
          }
          addUsage(total, counted ?? seen);
          message = { content: turn.content === "" ? null : turn.content, calls: turn.toolCalls() };
        }
        const codeCalls = message.calls.filter((c) => c.function?.name === CODE_CALL);
        const clientCalls = message.calls.filter((c) => c.function?.name !== CODE_CALL);
        if (codeCalls.length === 0 || last) {
          if (final) return { ...final, usage: total, steps };
          break;
        }
        messages.push({ role: "assistant", content: message.content, tool_calls: message.calls });
        for (const call of codeCalls) {
          const step = await runner.run(call);
          steps.push(step);
          messages.push(CodeRunner.message(step));
          if (res) {
            // A chunk with an empty delta, so OpenAI clients that read every event as a chunk take it in stride.
            const event = JSON.stringify({
              ...head,
              object: "chat.completion.chunk",
              choices: TOOL_STEP_CHOICES,
              tool_step: { index: steps.length - 1, ...step },
            });
            const wait = write(res, `data: ${event}\n\n`);
            if (wait) await wait;
          }
          if (signal.aborted) return reply;
        }
        if (clientCalls.length > 0) {
          // The model also called the client's own tools: those are the client's to answer.
          if (final) {
            const choice = final.choices[0] as ChatCompletion["choices"][number];
            return { ...final, choices: [{ ...choice, message: { ...choice.message, tool_calls: clientCalls } }], usage: total, steps };
          }
          break;
        }
      }
      // Streamed: the summed usage (if asked for), then the end.
      const r = res as ServerResponse;
      if (body.stream_options?.include_usage === true) {
        const chunk = { ...head, object: "chat.completion.chunk", choices: [], usage: total };
        r.write(`data: ${JSON.stringify(chunk)}\n\n`);
      }
      r.end("data: [DONE]\n\n");
      return reply;
    } catch (err) {
      if (!res) throw err; // nothing sent yet: a plain HTTP error
      if (!signal.aborted) res.end(errorEvent(err, request));
      return reply;
    } finally {
      if (res && !res.writableEnded) res.destroy();
      await runner.dispose();
      usageLog.record(request.apiKey.id, body.model, total.prompt_tokens, total.completion_tokens);
    }
  }
}
