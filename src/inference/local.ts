// The local engine: a GGUF model run in this process by node-llama-cpp (llama.cpp's prebuilt CPU
// binaries ship inside its npm packages; nothing is downloaded, the operator names a model file).
// The model loads in the background at start. Requests take one of `parallel` context sequences
// (waiting up to `timeout_ms` for one), are rendered with the model's own chat template, and
// generate token by token: `max_tokens` counts generated tokens, `stop` strings are matched on the
// text (held back until they can no longer start a stop string), and an abort stops generation at
// the next token.
import { ApiError } from "../errors.js";
import type {
  ChatCompletion,
  ChatMessage,
  ChatRequest,
  CompletionResult,
  EventBatches,
  ModelInfo,
  OutgoingRequest,
  OutgoingTextRequest,
  Provider,
  TextCompletion,
  TextCompletionRequest,
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
}

/** A text completion request, rendered: one Prepared per prompt, `n` generations of each. */
interface PreparedText {
  prompts: Array<{ prepared: Prepared; text: string }>;
  n: number;
  echo: boolean;
}

/** Default `max_tokens` of a text completion (OpenAI's). */
const TEXT_MAX_TOKENS = 16;

/** What one generation step yields: new text, then at the end the finish reason and usage. */
type Step = { text: string } | { finish: "stop" | "length"; usage: Usage };

export class LocalProvider implements Provider {
  readonly type = "local" as const;
  readonly supportsTools = false;
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
    if (body.tools !== undefined && body.tools.length > 0)
      throw new ApiError("invalid_request", `The local model '${this.config.modelName}' does not support tools`);
    const format = (body.response_format as { type?: unknown } | undefined)?.type;
    if (format !== undefined && format !== "text")
      throw new ApiError("invalid_request", `The local model '${this.config.modelName}' supports only response_format {"type": "text"}`);
    if (body.n !== undefined && body.n !== 1)
      throw new ApiError("invalid_request", "The local model generates one choice per request ('n' must be 1)");
    const engine = await this.getEngine();
    const history = toHistory(body.messages);
    history.push({ type: "model", response: [] });
    const { contextText } = engine.wrapper.generateContextState({ chatHistory: history });
    const prompt = contextText.tokenize(engine.model.tokenizer);
    const room = engine.context.contextSize - prompt.length;
    if (room < 1) {
      throw new ApiError(
        "invalid_request",
        `The prompt is ${prompt.length} tokens; the local model '${this.config.modelName}' has a context of ${engine.context.contextSize} tokens`,
      );
    }
    const asked = body.max_completion_tokens ?? body.max_tokens;
    const stop = body.stop == null ? [] : typeof body.stop === "string" ? [body.stop] : body.stop;
    return {
      engine,
      prompt,
      maxTokens: Math.min(room, asked ?? room),
      stops: [...stop.filter((s) => s !== ""), ...engine.templateStops],
      temperature: body.temperature ?? 1,
      topP: body.top_p,
      seed: body.seed,
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
      const tokens = sequence.evaluate(p.prompt, { temperature: p.temperature, topP: p.topP, seed: p.seed });
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

  async complete(req: OutgoingRequest, signal: AbortSignal): Promise<CompletionResult> {
    const p = await this.prepare(req.body);
    const { sequence, release } = await this.acquire(p.engine.context, signal);
    let text = "";
    let finish: "stop" | "length" = "stop";
    let usage: Usage | undefined;
    for await (const step of this.generate(p, sequence, release, signal, req.onUsage)) {
      if ("text" in step) text += step.text;
      else {
        finish = step.finish;
        usage = step.usage;
      }
    }
    if (signal.aborted) throw signal.reason;
    const json: ChatCompletion = {
      id: completionId(),
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: this.config.modelName,
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: finish, logprobs: null }],
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
    const steps = this.generate(p, sequence, release, signal, req.onUsage);
    return (async function* () {
      try {
        yield [`${head}[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`];
        for await (const step of steps) {
          if ("text" in step) {
            yield [`${head}[{"index":0,"delta":{"content":${JSON.stringify(step.text)}},"finish_reason":null}]}`];
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
      else choice.finish_reason = step.finish;
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
    const self = this;
    return (async function* () {
      // Generation pushes events; this generator hands them to the route batch by batch.
      let queue: string[] = [];
      let wake: (() => void) | undefined;
      let finished = false;
      let failure: unknown;
      const push = (data: string) => {
        queue.push(data);
        wake?.();
      };
      const run = self
        .runText(t, signal, req.onUsage, (index, _prompt, step) => {
          if ("text" in step) push(`${head}[{"text":${JSON.stringify(step.text)},"index":${index},"logprobs":null,"finish_reason":null}]}`);
          else push(`${head}[{"text":"","index":${index},"logprobs":null,"finish_reason":"${step.finish}"}]}`);
        })
        .then(
          (usage) => push(`${head}[],"usage":${JSON.stringify(usage)}}`),
          (err: unknown) => {
            failure = err;
          },
        )
        .finally(() => {
          finished = true;
          wake?.();
        });
      try {
        for (;;) {
          if (queue.length > 0) {
            const batch = queue;
            queue = [];
            yield batch;
            continue;
          }
          if (finished) break;
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
        if (failure !== undefined && !signal.aborted) throw failure;
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

function textOf(m: ChatMessage): string {
  if (m.content == null) return "";
  if (typeof m.content === "string") return m.content;
  let text = "";
  for (const part of m.content) {
    if (part.type !== "text" || typeof part.text !== "string")
      throw new ApiError("invalid_request", `The local model accepts text content only, not '${part.type}'`);
    text += part.text;
  }
  return text;
}

/** OpenAI messages as the chat template's history. */
function toHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  for (const m of messages) {
    const text = textOf(m);
    switch (m.role) {
      case "system":
      case "developer":
        history.push({ type: "system", text });
        break;
      case "assistant":
        history.push({ type: "model", response: [text] });
        break;
      case "tool":
        history.push({ type: "user", text: `Tool result${m.tool_call_id ? ` (${m.tool_call_id})` : ""}:\n${text}` });
        break;
      default:
        history.push({ type: "user", text });
    }
  }
  return history;
}
