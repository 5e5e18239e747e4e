// The local engine: a GGUF model run in this process by node-llama-cpp (llama.cpp's prebuilt CPU
// binaries ship inside its npm packages; nothing is downloaded, the operator names a model file).
// The model loads in the background at start. Requests take one of `parallel` context sequences
// (waiting up to `timeout_ms` for one), are rendered with the model's own chat template, and
// generate token by token: `max_tokens` counts generated tokens, `stop` strings are matched on the
// text (held back until they can no longer start a stop string), and an abort stops generation at
// the next token.
import { ApiError } from "../errors.js";
import { type ToolSetup, toHistory, toolSetup, toToolCall } from "./local-tools.js";
import type {
  ChatCompletion,
  ChatRequest,
  CompletionResult,
  EventBatches,
  ModelInfo,
  OutgoingRequest,
  OutgoingTextRequest,
  Provider,
  TextCompletion,
  TextCompletionRequest,
  ToolCall,
  Usage,
} from "./types.js";

// The engine's module is imported only when a local provider is configured (it is large).
type Nlc = typeof import("node-llama-cpp");
type Llama = import("node-llama-cpp").Llama;
type LlamaModel = import("node-llama-cpp").LlamaModel;
type LlamaContext = import("node-llama-cpp").LlamaContext;
type LlamaContextSequence = import("node-llama-cpp").LlamaContextSequence;
type ChatHistoryItem = import("node-llama-cpp").ChatHistoryItem;
type ChatWrapper = import("node-llama-cpp").ChatWrapper;
type Token = import("node-llama-cpp").Token;
type TokenBias = import("node-llama-cpp").TokenBias;

export interface LocalProviderConfig {
  name: string;
  modelPath: string;
  /** The model id clients use. */
  modelName: string;
  /** Tokens of context per sequence (prompt + answer). */
  contextSize: number;
  batchSize: number | undefined;
  threads: number | undefined;
  /** Sequences generating at once; more requests wait. */
  parallel: number;
  gpu: boolean;
  /** Longest a request waits for a free sequence. */
  timeoutMs: number;
  created: number;
}

interface Engine {
  nlc: Nlc;
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
  wrapper: ChatWrapper;
  /** The chat template's own end-of-turn texts. */
  templateStops: string[];
}

interface Prepared {
  engine: Engine;
  prompt: Token[];
  maxTokens: number;
  stops: string[];
  temperature: number;
  topP: number | undefined;
  seed: number | undefined;
  tokenBias: TokenBias | undefined;
  /** With tools: generation goes through node-llama-cpp's function calling (LlamaChat) on this history. */
  tools?: { setup: ToolSetup; history: ChatHistoryItem[]; userStops: string[] };
}

/** A text completion request, rendered: one Prepared per prompt, `n` generations of each. */
interface PreparedText {
  prompts: Array<{ prepared: Prepared; text: string }>;
  n: number;
  echo: boolean;
}

/** Default `max_tokens` of a text completion (OpenAI's). */
const TEXT_MAX_TOKENS = 16;

/** What one generation step yields: new text or a tool call, then at the end the finish reason and usage. */
type Step = { text: string } | { call: ToolCall } | { finish: "stop" | "length" | "tool_calls"; usage: Usage };

export class LocalProvider implements Provider {
  readonly type = "local" as const;
  readonly supportsTools = true;
  readonly name: string;
  private readonly engine: Promise<Engine>;
  private loadError: Error | undefined;
  private free: number;
  private readonly waiters: Array<() => void> = [];
  private closed = false;

  constructor(private readonly config: LocalProviderConfig) {
    this.name = config.name;
    this.free = config.parallel;
    this.engine = this.load();
    this.engine.catch((err: Error) => {
      this.loadError = err;
    });
  }

  private async load(): Promise<Engine> {
    const nlc: Nlc = await import("node-llama-cpp");
    const llama = await nlc.getLlama({
      gpu: this.config.gpu ? "auto" : false,
      build: "never", // use the prebuilt binary from the npm package, never compile or download
      progressLogs: false,
      logLevel: nlc.LlamaLogLevel.error,
    });
    try {
      const model = await llama.loadModel({ modelPath: this.config.modelPath, gpuLayers: this.config.gpu ? "auto" : 0 });
      const context = await model.createContext({
        contextSize: Math.min(this.config.contextSize, model.trainContextSize || this.config.contextSize),
        sequences: this.config.parallel,
        batchSize: this.config.batchSize,
        threads: this.config.threads,
      });
      const wrapper = nlc.resolveChatWrapper(model);
      const probe = wrapper.generateContextState({
        chatHistory: [
          { type: "user", text: "" },
          { type: "model", response: [] },
        ],
      });
      const templateStops: string[] = [];
      for (const trigger of probe.stopGenerationTriggers) {
        let text = "";
        let plain = true;
        for (const v of trigger.values) {
          if (typeof v === "string") text += v;
          else if (v instanceof nlc.SpecialTokensText) text += v.value;
          else plain = false; // a special token (EOS, EOT): matched as an end-of-generation token instead
        }
        if (plain && text !== "") templateStops.push(text);
      }
      return { nlc, llama, model, context, wrapper, templateStops };
    } catch (err) {
      await llama.dispose();
      throw err;
    }
  }

  /** Resolves when the model is loaded (or throws why it could not be). */
  async ready(): Promise<void> {
    await this.engine;
  }

  models(): ModelInfo[] {
    return [{ id: this.config.modelName, object: "model", created: this.config.created, owned_by: this.name }];
  }

  serves(model: string): boolean {
    return model === this.config.modelName;
  }

  private async getEngine(): Promise<Engine> {
    if (this.closed) throw new ApiError("upstream_unavailable", `Local model '${this.config.modelName}' is shutting down`, 5);
    try {
      return await this.engine;
    } catch {
      throw new ApiError("upstream_unavailable", `Local model '${this.config.modelName}' failed to load: ${this.loadError?.message}`, 30);
    }
  }

  /** Validates and renders the request; a bad request is a 400 before anything is generated. */
  private async prepare(body: ChatRequest): Promise<Prepared> {
    const format = (body.response_format as { type?: unknown } | undefined)?.type;
    if (format !== undefined && format !== "text")
      throw new ApiError("invalid_request", `The local model '${this.config.modelName}' supports only response_format {"type": "text"}`);
    if (body.n !== undefined && body.n !== 1)
      throw new ApiError("invalid_request", "The local model generates one choice per request ('n' must be 1)");
    const setup = toolSetup(body);
    const history = toHistory(body.messages);
    const engine = await this.getEngine();
    if (setup) checkSchemas(engine, setup);
    const { contextText } = engine.wrapper.generateContextState({
      chatHistory: history,
      availableFunctions: setup?.functions,
      documentFunctionParams: setup ? true : undefined,
    });
    const prompt = contextText.tokenize(engine.model.tokenizer);
    const room = engine.context.contextSize - prompt.length;
    if (room < 1) {
      throw new ApiError(
        "invalid_request",
        `The prompt is ${prompt.length} tokens; the local model '${this.config.modelName}' has a context of ${engine.context.contextSize} tokens`,
      );
    }
    const asked = body.max_completion_tokens ?? body.max_tokens;
    const stop = (body.stop == null ? [] : typeof body.stop === "string" ? [body.stop] : body.stop).filter((s) => s !== "");
    return {
      engine,
      prompt,
      maxTokens: Math.min(room, asked ?? room),
      stops: [...stop, ...engine.templateStops],
      temperature: body.temperature ?? 1,
      topP: body.top_p,
      seed: body.seed,
      tokenBias: logitBias(engine, body.logit_bias),
      tools: setup ? { setup, history, userStops: stop } : undefined,
    };
  }

  /** Waits for a free sequence (at most timeout_ms); the returned function gives it back. */
  private async acquire(context: LlamaContext, signal: AbortSignal): Promise<{ sequence: LlamaContextSequence; release: () => void }> {
    if (this.free === 0) {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        const leave = (err: unknown) => {
          const i = this.waiters.indexOf(wake);
          if (i >= 0) this.waiters.splice(i, 1);
          signal.removeEventListener("abort", onAbort);
          reject(err);
        };
        const onAbort = () => {
          clearTimeout(timer);
          leave(signal.reason);
        };
        const timer = setTimeout(
          () =>
            leave(
              new ApiError(
                "upstream_timeout",
                `Local model '${this.config.modelName}' was busy for ${this.config.timeoutMs} ms; retry later`,
              ),
            ),
          this.config.timeoutMs,
        );
        signal.addEventListener("abort", onAbort, { once: true });
        this.waiters.push(wake);
      });
    } else {
      this.free--;
    }
    // A slot passed from a finished request to a waiter stays taken (free is not incremented in between).
    let sequence: LlamaContextSequence;
    try {
      sequence = context.getSequence();
    } catch (err) {
      this.releaseSlot();
      throw err;
    }
    let released = false;
    return {
      sequence,
      release: () => {
        if (released) return;
        released = true;
        sequence.dispose();
        this.releaseSlot();
      },
    };
  }

  private releaseSlot(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }

  /** Generates for a prepared request on an acquired sequence; always releases it. */
  private async *generate(
    p: Prepared,
    sequence: LlamaContextSequence,
    release: () => void,
    signal: AbortSignal,
    onUsage: ((usage: Usage) => void) | undefined,
  ): AsyncGenerator<Step> {
    const { model } = p.engine;
    const stops = p.stops;
    const longestStop = stops.reduce((n, s) => Math.max(n, s.length), 0);
    let out = ""; // all generated text
    let sent = 0; // how much of it was yielded
    let count = 0;
    let finish: "stop" | "length" = "length";
    const previous: Token[] = [];
    let pending: Token[] = [];
    try {
      if (signal.aborted) return;
      const tokens = sequence.evaluate(p.prompt, { temperature: p.temperature, topP: p.topP, seed: p.seed, tokenBias: p.tokenBias });
      for await (const token of tokens) {
        if (signal.aborted) return;
        if (model.isEogToken(token)) {
          finish = "stop";
          break;
        }
        count++;
        pending.push(token);
        const piece = model.detokenize(pending, false, previous.slice(-8));
        // A multi-byte character split over byte tokens: wait for the rest (a few tokens at most).
        if (piece.endsWith("\uFFFD") && pending.length < 4 && count < p.maxTokens) continue;
        previous.push(...pending);
        pending = [];
        out += piece;
        let cut = -1;
        if (longestStop > 0) {
          const from = Math.max(0, sent - longestStop);
          for (const s of stops) {
            const i = out.indexOf(s, from);
            if (i >= 0 && (cut < 0 || i < cut)) cut = i;
          }
        }
        if (cut >= 0) {
          if (cut > sent) yield { text: out.slice(sent, cut) };
          sent = cut;
          finish = "stop";
          break;
        }
        // Hold back a tail that could still become a stop string.
        let safe = out.length;
        for (const s of stops) {
          for (let k = Math.min(s.length - 1, out.length - sent); k > 0; k--) {
            if (out.endsWith(s.slice(0, k))) {
              safe = Math.min(safe, out.length - k);
              break;
            }
          }
        }
        if (safe > sent) {
          yield { text: out.slice(sent, safe) };
          sent = safe;
        }
        if (count >= p.maxTokens) break;
      }
      if (finish === "length" && sent < out.length) {
        yield { text: out.slice(sent) };
      }
      yield { finish, usage: { prompt_tokens: p.prompt.length, completion_tokens: count, total_tokens: p.prompt.length + count } };
    } finally {
      release();
      // Also when the client left mid-answer: what was generated is still used.
      onUsage?.({ prompt_tokens: p.prompt.length, completion_tokens: count, total_tokens: p.prompt.length + count });
    }
  }

  /**
   * Generates with tools through node-llama-cpp's function calling: the chat template documents the
   * functions and its own call syntax is detected in the output; once a call starts, a grammar
   * constrains the function name and its JSON parameters to the tool's schema. A forced call
   * (tool_choice "required" or a named function) starts the answer in that mode. Always releases
   * the sequence.
   */
  private async *generateTools(
    p: Prepared,
    sequence: LlamaContextSequence,
    release: () => void,
    signal: AbortSignal,
    onUsage: ((usage: Usage) => void) | undefined,
  ): AsyncGenerator<Step> {
    const tools = p.tools as NonNullable<Prepared["tools"]>;
    const { nlc, wrapper } = p.engine;
    const chat = new nlc.LlamaChat({
      contextSequence: sequence,
      chatWrapper: tools.setup.forced ? forcedWrapper(nlc, wrapper) : wrapper,
      autoDisposeSequence: false,
    });
    const usage = (): Usage => {
      const meter = sequence.tokenMeter;
      return {
        prompt_tokens: meter.usedInputTokens,
        completion_tokens: meter.usedOutputTokens,
        total_tokens: meter.usedInputTokens + meter.usedOutputTokens,
      };
    };
    const out = new Pushed<Step>();
    try {
      const run = chat
        .generateResponse(tools.history, {
          functions: tools.setup.functions,
          documentFunctionParams: true,
          maxParallelFunctionCalls: tools.setup.maxParallel,
          maxTokens: p.maxTokens,
          temperature: p.temperature,
          topP: p.topP,
          seed: p.seed,
          tokenBias: p.tokenBias,
          customStopTriggers: tools.userStops,
          signal,
          stopOnAbortSignal: true,
          onTextChunk: (text) => {
            if (text !== "") out.push({ text });
          },
        })
        .then((res) => {
          for (const c of res.functionCalls ?? []) out.push({ call: toToolCall(c.functionName, c.params) });
          const reason = res.metadata.stopReason;
          const finish = reason === "functionCalls" ? "tool_calls" : reason === "maxTokens" ? "length" : "stop";
          out.push({ finish, usage: usage() });
        })
        .then(
          () => out.end(),
          (err: unknown) => out.end(err),
        );
      yield* out;
      await run;
    } finally {
      chat.dispose({ disposeSequence: false });
      release();
      onUsage?.(usage());
    }
  }

  async complete(req: OutgoingRequest, signal: AbortSignal): Promise<CompletionResult> {
    const p = await this.prepare(req.body);
    const { sequence, release } = await this.acquire(p.engine.context, signal);
    let text = "";
    const calls: ToolCall[] = [];
    let finish: "stop" | "length" | "tool_calls" = "stop";
    let usage: Usage | undefined;
    const steps = p.tools
      ? this.generateTools(p, sequence, release, signal, req.onUsage)
      : this.generate(p, sequence, release, signal, req.onUsage);
    for await (const step of steps) {
      if ("text" in step) text += step.text;
      else if ("call" in step) calls.push(step.call);
      else {
        finish = step.finish;
        usage = step.usage;
      }
    }
    if (signal.aborted) throw signal.reason;
    const message: ChatCompletion["choices"][number]["message"] = {
      role: "assistant",
      content: calls.length > 0 && text === "" ? null : text,
    };
    if (calls.length > 0) message.tool_calls = calls;
    const json: ChatCompletion = {
      id: completionId(),
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: this.config.modelName,
      choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
      usage,
    };
    return { json };
  }

  async stream(req: OutgoingRequest, signal: AbortSignal): Promise<EventBatches> {
    const p = await this.prepare(req.body);
    const { sequence, release } = await this.acquire(p.engine.context, signal);
    const id = completionId();
    const created = Math.floor(Date.now() / 1000);
    const model = this.config.modelName;
    const head = `{"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":`;
    const steps = p.tools
      ? this.generateTools(p, sequence, release, signal, req.onUsage)
      : this.generate(p, sequence, release, signal, req.onUsage);
    return (async function* () {
      try {
        let calls = 0;
        yield [`${head}[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`];
        for await (const step of steps) {
          if ("text" in step) {
            yield [`${head}[{"index":0,"delta":{"content":${JSON.stringify(step.text)}},"finish_reason":null}]}`];
          } else if ("call" in step) {
            const delta = { tool_calls: [{ index: calls++, ...step.call }] };
            yield [`${head}[{"index":0,"delta":${JSON.stringify(delta)},"finish_reason":null}]}`];
          } else {
            yield [`${head}[{"index":0,"delta":{},"finish_reason":"${step.finish}"}]}`, `${head}[],"usage":${JSON.stringify(step.usage)}}`];
          }
        }
      } finally {
        release(); // the reader may stop before generation even started
      }
    })();
  }

  /** Validates and tokenizes a text completion request (the prompt as it is, no chat template). */
  private async prepareText(body: TextCompletionRequest): Promise<PreparedText> {
    const n = body.n ?? 1;
    const engine = await this.getEngine();
    const { model } = engine;
    const texts = typeof body.prompt === "string" ? [body.prompt] : body.prompt;
    const stop = body.stop == null ? [] : typeof body.stop === "string" ? [body.stop] : body.stop;
    const prompts = texts.map((text) => {
      const tokens = model.tokenize(text, false);
      const bos = model.tokens.bos;
      const prompt = bos !== null && model.tokens.shouldPrependBosToken ? [bos, ...tokens] : tokens;
      const room = engine.context.contextSize - prompt.length;
      if (room < 1) {
        throw new ApiError(
          "invalid_request",
          `The prompt is ${prompt.length} tokens; the local model '${this.config.modelName}' has a context of ${engine.context.contextSize} tokens`,
        );
      }
      const prepared: Prepared = {
        engine,
        prompt,
        maxTokens: Math.min(room, body.max_tokens ?? TEXT_MAX_TOKENS),
        stops: stop.filter((st) => st !== ""),
        temperature: body.temperature ?? 1,
        topP: body.top_p,
        seed: body.seed,
        tokenBias: logitBias(engine, body.logit_bias),
      };
      return { prepared, text };
    });
    return { prompts, n, echo: body.echo === true };
  }

  /**
   * Runs every generation of a text request one after the other (choice index = prompt * n + j),
   * calling `each` with the steps of each; usage is summed (each prompt counted once) and reported.
   */
  private async runText(
    t: PreparedText,
    signal: AbortSignal,
    onUsage: ((usage: Usage) => void) | undefined,
    each: (index: number, text: string, step: Step) => void | Promise<void>,
  ): Promise<Usage> {
    const total: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    for (const [i, { prepared, text }] of t.prompts.entries()) {
      total.prompt_tokens += prepared.prompt.length;
      for (let j = 0; j < t.n; j++) {
        if (signal.aborted) return total;
        const index = i * t.n + j;
        const { sequence, release } = await this.acquire(prepared.engine.context, signal);
        let done = 0;
        const count = (u: Usage) => {
          done = u.completion_tokens;
          const completion = total.completion_tokens + done;
          onUsage?.({ prompt_tokens: total.prompt_tokens, completion_tokens: completion, total_tokens: total.prompt_tokens + completion });
        };
        if (t.echo) await each(index, text, { text });
        for await (const step of this.generate(prepared, sequence, release, signal, count)) {
          await each(index, text, step);
        }
        total.completion_tokens += done;
        total.total_tokens = total.prompt_tokens + total.completion_tokens;
      }
    }
    onUsage?.(total);
    return total;
  }

  async completeText(req: OutgoingTextRequest, signal: AbortSignal): Promise<{ json: TextCompletion }> {
    const t = await this.prepareText(req.body);
    const choices: TextCompletion["choices"] = [];
    const usage = await this.runText(t, signal, req.onUsage, (index, _prompt, step) => {
      choices[index] ??= { index, text: "", logprobs: null, finish_reason: null };
      const choice = choices[index];
      if ("text" in step) choice.text += step.text;
      else if ("finish" in step) choice.finish_reason = step.finish;
    });
    if (signal.aborted) throw signal.reason;
    const json: TextCompletion = {
      id: `cmpl-${completionId().slice(9)}`,
      object: "text_completion",
      created: Math.floor(Date.now() / 1000),
      model: this.config.modelName,
      choices,
      usage,
    };
    return { json };
  }

  async streamText(req: OutgoingTextRequest, signal: AbortSignal): Promise<EventBatches> {
    const t = await this.prepareText(req.body); // a bad request is still a plain HTTP error
    const head = `{"id":"cmpl-${completionId().slice(9)}","object":"text_completion","created":${Math.floor(Date.now() / 1000)},"model":${JSON.stringify(this.config.modelName)},"choices":`;
    const events = new Pushed<string>();
    const run = this.runText(t, signal, req.onUsage, (index, _prompt, step) => {
      if ("text" in step)
        events.push(`${head}[{"text":${JSON.stringify(step.text)},"index":${index},"logprobs":null,"finish_reason":null}]}`);
      else if ("finish" in step) events.push(`${head}[{"text":"","index":${index},"logprobs":null,"finish_reason":"${step.finish}"}]}`);
    }).then(
      (usage) => {
        events.push(`${head}[],"usage":${JSON.stringify(usage)}}`);
        events.end();
      },
      (err: unknown) => events.end(signal.aborted ? undefined : err),
    );
    return (async function* () {
      try {
        for await (const data of events) yield [data];
      } finally {
        await run;
      }
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    try {
      const engine = await this.engine;
      await engine.llama.dispose();
    } catch {
      // never loaded: nothing to dispose
    }
  }
}

function completionId(): string {
  return `chatcmpl-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
}

/** OpenAI `logit_bias` ({token id: -100..100}) as a token bias; -100 bans the token. */
function logitBias(engine: Engine, bias: unknown): TokenBias | undefined {
  if (bias === undefined || bias === null) return undefined;
  if (typeof bias !== "object" || Array.isArray(bias))
    throw new ApiError("invalid_request", "'logit_bias' must be an object of token ids to numbers");
  const entries = Object.entries(bias as Record<string, unknown>);
  if (entries.length > 300) throw new ApiError("invalid_request", "'logit_bias' may have at most 300 entries");
  const out = new engine.nlc.TokenBias(engine.model.tokenizer);
  const vocab = engine.model.fileInfo.metadata.tokenizer.ggml.tokens.length;
  for (const [key, value] of entries) {
    const token = Number(key);
    if (!/^[0-9]+$/.test(key) || token >= vocab)
      throw new ApiError("invalid_request", `'logit_bias' key '${key}' is not a token id of the local model (0-${vocab - 1})`);
    if (typeof value !== "number" || value < -100 || value > 100)
      throw new ApiError("invalid_request", `'logit_bias' values must be numbers from -100 to 100`);
    out.set(token as Token, value <= -100 ? "never" : { logit: value });
  }
  return out;
}

/** The tools' parameter schemas must be ones the grammar can enforce: checked before generating. */
function checkSchemas(engine: Engine, setup: ToolSetup): void {
  for (const [name, fn] of Object.entries(setup.functions)) {
    if (fn.params === undefined) continue;
    try {
      // The constructor's type wants a literal schema type; a request's schema is only known at run time.
      new engine.nlc.LlamaJsonSchemaGrammar(engine.llama, fn.params as never);
    } catch (err) {
      throw new ApiError("invalid_request", `The local model cannot use the parameters schema of '${name}': ${(err as Error).message}`);
    }
  }
}

/**
 * The chat wrapper with the answer starting inside a function call: the template's call prefix
 * is appended to the prompt and node-llama-cpp starts in function-calling mode, so the grammar
 * makes the first thing generated a call to one of the functions.
 */
function forcedWrapper(nlc: Nlc, wrapper: ChatWrapper): ChatWrapper {
  const forced = Object.create(wrapper) as ChatWrapper;
  const fns = wrapper.settings.functions;
  Object.defineProperty(forced, "generateContextState", {
    value: (options: Parameters<ChatWrapper["generateContextState"]>[0]) => {
      const state = wrapper.generateContextState(options);
      return {
        contextText: nlc.LlamaText([state.contextText, fns.parallelism?.call.sectionPrefix ?? "", fns.call.prefix]),
        stopGenerationTriggers: state.stopGenerationTriggers,
        ignoreStartText: state.ignoreStartText,
        functionCall: { initiallyEngaged: true, disengageInitiallyEngaged: [] },
      };
    },
  });
  return forced;
}

/** An async iterable fed by callbacks (node-llama-cpp reports text and calls through them). */
class Pushed<T> implements AsyncIterable<T> {
  private queue: T[] = [];
  private wake: (() => void) | undefined;
  private done = false;
  private failure: unknown;

  push(item: T): void {
    this.queue.push(item);
    this.wake?.();
  }

  end(err?: unknown): void {
    this.done = true;
    this.failure = err;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const item = this.queue.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.done) break;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
    if (this.failure !== undefined) throw this.failure;
  }
}
