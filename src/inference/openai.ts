// An OpenAI-compatible upstream (OpenAI itself, vLLM, llama.cpp's server, Ollama, ...). One
// keep-alive connection pool per provider, created at start; request bytes go out as the client sent
// them unless something had to change; responses are parsed once (for usage) and the upstream's
// bytes are what the client gets.
import http from "node:http";
import https from "node:https";
import { ApiError } from "../errors.js";
import {
  type ChatCompletion,
  type CompletionResult,
  type EventBatches,
  type ModelInfo,
  type OutgoingRequest,
  type OutgoingTextRequest,
  type Provider,
  type TextCompletion,
  UpstreamHttpError,
} from "./types.js";
import { checkedCompletion, checkedTextCompletion } from "./upstream-answer.js";

export interface OpenAIProviderConfig {
  name: string;
  /** e.g. https://api.openai.com/v1; requests go to `<base_url>/chat/completions`. */
  baseUrl: URL;
  apiKey: string | undefined;
  models: string[];
  modelPrefix: string | undefined;
  /** Send the model id without `modelPrefix` (route "openai/gpt-4o" as "gpt-4o"). */
  stripPrefix: boolean;
  /** Longest the upstream may stay silent: before its response headers, and between two pieces of its body. */
  timeoutMs: number;
  /** Extra attempts after a refused/reset connection or a 5xx answer (never once a stream has started). */
  retries: number;
  maxConnections: number;
  headers: Record<string, string>;
  /** Connect over this unix socket instead of TCP (a deployment replica in its own network namespace). */
  socketPath?: string;
}

const USAGE_OPTION = Buffer.from(',"stream_options":{"include_usage":true}');
/** Largest whole answer read from an upstream (it is held in memory, then sent on). */
const MAX_ANSWER_BYTES = 64 * 2 ** 20;
/** Largest error answer read (only its message is kept). */
const MAX_ERROR_BYTES = 64 * 2 ** 10;
/** Largest single server-sent event (a stream's pieces are held until their event is whole). */
const MAX_EVENT_CHARS = 16 * 2 ** 20;
/** A Retry-After worth passing on: delay-seconds or an HTTP date, nothing else. */
const RETRY_AFTER = /^(?:\d{1,9}|[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT)$/;
/** An upstream's error code worth passing on. */
const ERROR_CODE = /^[A-Za-z0-9_.:-]{1,64}$/;
const CONNECT_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE"]);

class IdleTimeout extends Error {}

/** A request error, marked when it happened on a kept-alive connection that was being reused. */
type StaleSocketError = Error & { code?: string; reusedSocket?: boolean };

interface Upstream {
  res: http.IncomingMessage;
  /** Restarts the idle timer (called for each piece of the body). */
  touch(): void;
}

export class OpenAIProvider implements Provider {
  readonly type = "openai" as const;
  readonly supportsTools = true;
  readonly name: string;
  private readonly agent: http.Agent;
  private readonly request: typeof http.request;
  private readonly url: URL;
  private readonly textUrl: URL;
  private readonly baseHeaders: Record<string, string>;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly modelSet: Set<string>;

  constructor(private readonly config: OpenAIProviderConfig) {
    this.name = config.name;
    const secure = config.baseUrl.protocol === "https:";
    const agentOptions: http.AgentOptions = {
      keepAlive: true,
      keepAliveMsecs: 1000,
      maxSockets: config.maxConnections,
      scheduling: "lifo",
      // The agent's own options win over each request's, so every connection goes to the socket.
      ...(config.socketPath ? { socketPath: config.socketPath } : {}),
    };
    this.agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    this.request = secure ? https.request : http.request;
    const base = config.baseUrl.href.replace(/\/+$/, "");
    this.url = new URL(`${base}/chat/completions`);
    this.textUrl = new URL(`${base}/completions`);
    this.baseHeaders = { ...config.headers, "content-type": "application/json" };
    if (config.apiKey) this.baseHeaders.authorization = `Bearer ${config.apiKey}`;
    this.modelSet = new Set(config.models);
  }

  models(): ModelInfo[] {
    return this.config.models.map((id) => ({ id, object: "model", created: this.created, owned_by: this.name }));
  }

  serves(model: string): boolean {
    return this.modelSet.has(model) || (this.config.modelPrefix !== undefined && model.startsWith(this.config.modelPrefix));
  }

  /** The bytes to send: the client's own when nothing changes. */
  private payload(req: OutgoingRequest | OutgoingTextRequest, stream: boolean): Buffer {
    let body = req.body;
    let raw = req.raw;
    const prefix = this.config.modelPrefix;
    if (this.config.stripPrefix && prefix !== undefined && body.model.startsWith(prefix)) {
      body = { ...body, model: body.model.slice(prefix.length) };
      raw = undefined;
    }
    if (stream && body.stream_options?.include_usage !== true) {
      // Ask for the final usage chunk (the route drops it again if the client did not ask for it).
      if (raw !== undefined && body.stream_options === undefined) {
        const end = raw.lastIndexOf(0x7d); // the closing '}' of the top-level object
        return Buffer.concat([raw.subarray(0, end), USAGE_OPTION, raw.subarray(end)]);
      }
      body = { ...body, stream_options: { ...body.stream_options, include_usage: true } };
      raw = undefined;
    }
    return raw ?? Buffer.from(JSON.stringify(body));
  }

  /** Sends the request, retrying refused connections and 5xx answers; resolves with a 2xx response. */
  private async send(payload: Buffer, stream: boolean, signal: AbortSignal, url = this.url): Promise<Upstream> {
    let staleRetried = false;
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.config.retries;
      try {
        const up = await this.once(payload, stream, signal, url);
        const status = up.res.statusCode ?? 0;
        if (status >= 200 && status < 300) return up;
        const text = (await this.readAll(up, signal, MAX_ERROR_BYTES)).toString("utf8");
        if (status >= 500 && status < 600 && !last) {
          await backoff(attempt, signal);
          continue;
        }
        throw this.httpError(status, text, up.res.headers["retry-after"]);
      } catch (err) {
        if (signal.aborted) throw err;
        if (err instanceof IdleTimeout) {
          throw new ApiError("upstream_timeout", `Provider '${this.name}' did not answer within ${this.config.timeoutMs} ms`);
        }
        const code = (err as NodeJS.ErrnoException).code;
        if ((err as StaleSocketError).reusedSocket && !staleRetried && (code === "ECONNRESET" || code === "EPIPE")) {
          // The upstream closed an idle kept-alive connection just as we reused it: the request never
          // reached it, so it is sent again at once (not counted as one of the provider's retries).
          staleRetried = true;
          attempt--;
          continue;
        }
        if (code !== undefined && CONNECT_ERRORS.has(code)) {
          if (!last) {
            await backoff(attempt, signal);
            continue;
          }
          throw new ApiError("upstream_unavailable", `Provider '${this.name}' is unreachable (${code}); retry shortly`, 5);
        }
        if (err instanceof ApiError || err instanceof UpstreamHttpError) throw err;
        // Anything else is the answer itself (a status line or header Node's parser refused, a head
        // too large, a connection that ended inside the head): a bad answer, this request's 502.
        throw new ApiError("upstream_error", `Provider '${this.name}' sent a malformed answer (${code ?? (err as Error).message})`);
      }
    }
  }

  /**
   * One attempt: resolves at the response headers. An idle timer covers the wait and, after, each
   * gap in the body: readers call `touch` per piece, and a silence destroys the body with IdleTimeout.
   */
  private once(payload: Buffer, stream: boolean, signal: AbortSignal, url = this.url): Promise<Upstream> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = {
        ...this.baseHeaders,
        accept: stream ? "text/event-stream" : "application/json",
        "content-length": payload.length,
      };
      const req = this.request(url, { method: "POST", agent: this.agent, headers });
      let res: http.IncomingMessage | undefined;
      const timer = setTimeout(() => (res ?? req).destroy(new IdleTimeout()), this.config.timeoutMs);
      const onAbort = () => (res ?? req).destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
      req.on("error", (err: StaleSocketError) => {
        done();
        if (res) res.destroy(err);
        else {
          err.reusedSocket = req.reusedSocket;
          reject(err);
        }
      });
      // A 101 answer hands the connection over: without this listener Node drops it and the request
      // never settles (it would hold one of the provider's connections until the client gave up).
      req.on("upgrade", (_r, socket) => {
        socket.destroy();
        done();
        reject(new ApiError("upstream_error", `Provider '${this.name}' answered 101 Switching Protocols`));
      });
      req.on("response", (r) => {
        res = r;
        timer.refresh();
        r.on("close", done);
        resolve({ res: r, touch: () => timer.refresh() });
      });
      req.end(payload);
    });
  }

  /** The whole body, at most `max` bytes (an error answer: only its first `max` bytes are kept). */
  private async readAll({ res, touch }: Upstream, signal: AbortSignal, max = MAX_ANSWER_BYTES): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let length = 0;
    try {
      for await (const chunk of res) {
        touch();
        if (length + (chunk as Buffer).length > max) {
          res.destroy();
          if (max === MAX_ERROR_BYTES) return Buffer.concat([...chunks, (chunk as Buffer).subarray(0, max - length)]);
          throw new ApiError("upstream_error", `Provider '${this.name}' answered with more than ${max} bytes`);
        }
        length += (chunk as Buffer).length;
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      throw this.bodyError(err, signal);
    }
    if (!res.complete) throw new ApiError("upstream_error", `Provider '${this.name}' closed the connection mid-answer`);
    return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  }

  private bodyError(err: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) return err;
    if (err instanceof IdleTimeout)
      return new ApiError("upstream_timeout", `Provider '${this.name}' stopped sending for ${this.config.timeoutMs} ms mid-answer`);
    if (err instanceof ApiError) return err;
    return new ApiError("upstream_error", `Provider '${this.name}' failed mid-answer (${(err as Error).message})`);
  }

  private httpError(status: number, text: string, retryAfter: string | string[] | undefined): Error {
    let message = text;
    let code: string | undefined;
    try {
      const parsed = JSON.parse(text) as { error?: { message?: unknown; code?: unknown; type?: unknown } | string } | null;
      const e = parsed?.error;
      if (typeof e === "string") message = e;
      else if (e && typeof e === "object") {
        if (typeof e.message === "string") message = e.message;
        if (typeof e.code === "string") code = e.code;
        else if (typeof e.type === "string") code = e.type;
      }
    } catch {
      // not JSON: the text itself is the message
    }
    message = message.slice(0, 1000);
    if (code !== undefined && !ERROR_CODE.test(code)) code = undefined;
    // Only an upstream's 4xx is the client's to see as such; any other status that is not a success
    // (1xx, 3xx, 5xx, a status past 599 or below 100) is the upstream failing.
    if (status < 400 || status >= 500) return new ApiError("upstream_error", `Provider '${this.name}' answered ${status}: ${message}`);
    // The upstream refusing the gateway's own key is not the client's 401: it would read as "your key is wrong".
    if (status === 401 || status === 403)
      return new ApiError("upstream_error", `Provider '${this.name}' refused the gateway's credentials (${status}): ${message}`);
    return new UpstreamHttpError(
      status,
      code ?? (status === 429 ? "rate_limited" : "invalid_request"),
      message,
      typeof retryAfter === "string" && RETRY_AFTER.test(retryAfter) ? retryAfter : undefined,
    );
  }

  /** An embeddings request (`<base_url>/embeddings`), with the same retries and timeouts as completions. */
  async embeddings(body: { model: string; [k: string]: unknown }, signal: AbortSignal): Promise<unknown> {
    const prefix = this.config.modelPrefix;
    const model =
      this.config.stripPrefix && prefix !== undefined && body.model.startsWith(prefix) ? body.model.slice(prefix.length) : body.model;
    const url = new URL(`${this.config.baseUrl.href.replace(/\/+$/, "")}/embeddings`);
    const up = await this.send(Buffer.from(JSON.stringify({ ...body, model })), false, signal, url);
    return this.json(await this.readAll(up, signal));
  }

  /** A whole answer's JSON; a body that is not JSON is the upstream failing. */
  private json(raw: Buffer): unknown {
    try {
      return JSON.parse(raw.toString("utf8")) as unknown;
    } catch {
      throw new ApiError("upstream_error", `Provider '${this.name}' answered with a body that is not JSON`);
    }
  }

  async complete(req: OutgoingRequest, signal: AbortSignal): Promise<CompletionResult> {
    const up = await this.send(this.payload(req, false), false, signal);
    const raw = await this.readAll(up, signal);
    return { json: checkedCompletion(this.json(raw)), raw };
  }

  /** A legacy text completion (`<base_url>/completions`), passed through like a chat completion. */
  async completeText(req: OutgoingTextRequest, signal: AbortSignal): Promise<{ json: TextCompletion; raw: Buffer }> {
    const up = await this.send(this.payload(req, false), false, signal, this.textUrl);
    const raw = await this.readAll(up, signal);
    return { json: checkedTextCompletion<TextCompletion>(this.json(raw)), raw };
  }

  async streamText(req: OutgoingTextRequest, signal: AbortSignal): Promise<EventBatches> {
    const up = await this.send(this.payload(req, true), true, signal, this.textUrl);
    if (!String(up.res.headers["content-type"] ?? "").startsWith("text/event-stream")) {
      // A server that ignored `stream`: its whole answer is the one event.
      const raw = await this.readAll(up, signal);
      return (async function* () {
        yield [raw.toString("utf8")];
      })();
    }
    up.res.setEncoding("utf8");
    return this.events(up, signal);
  }

  async stream(req: OutgoingRequest, signal: AbortSignal): Promise<EventBatches> {
    const up = await this.send(this.payload(req, true), true, signal);
    const type = String(up.res.headers["content-type"] ?? "");
    if (!type.startsWith("text/event-stream")) {
      // Some servers ignore `stream`; a JSON answer is still an answer. Turn it into one chunk.
      return singleChunk(checkedCompletion(this.json(await this.readAll(up, signal))));
    }
    up.res.setEncoding("utf8");
    return this.events(up, signal);
  }

  private async *events({ res, touch }: Upstream, signal: AbortSignal): AsyncGenerator<string[]> {
    let buf = "";
    /** Where to look for the next event's end: text before it was searched already. */
    let from = 0;
    let finished = false;
    try {
      // Not destroyed when we stop reading at [DONE]: the rest drains so the connection is reused.
      for await (const piece of res.iterator({ destroyOnReturn: false })) {
        touch();
        buf += (piece as string).includes("\r") ? (piece as string).replace(/\r\n?/g, "\n") : (piece as string);
        let end = buf.indexOf("\n\n", from);
        if (end < 0) {
          if (buf.length > MAX_EVENT_CHARS)
            throw new ApiError("upstream_error", `Provider '${this.name}' sent an event larger than ${MAX_EVENT_CHARS} characters`);
          from = Math.max(0, buf.length - 1);
          continue;
        }
        const batch: string[] = [];
        let start = 0;
        while (end >= 0) {
          const data = eventData(buf, start, end);
          if (data === "[DONE]") {
            finished = true;
            res.resume(); // whatever follows [DONE] is not ours to wait for
            if (batch.length > 0) yield batch;
            return;
          }
          if (data !== undefined) batch.push(data);
          start = end + 2;
          end = buf.indexOf("\n\n", start);
        }
        buf = buf.slice(start);
        from = Math.max(0, buf.length - 1);
        if (batch.length > 0) yield batch;
      }
      finished = true;
    } catch (err) {
      throw this.bodyError(err, signal);
    } finally {
      // The reader stopped early (its client left): the upstream request must not go on.
      if (!finished) res.destroy();
    }
    if (!res.complete && !signal.aborted) throw new ApiError("upstream_error", `Provider '${this.name}' closed the stream mid-answer`);
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }
}

/** The `data` of one SSE event in buf[start, end), or undefined when it has none (a comment, a keep-alive). */
function eventData(buf: string, start: number, end: number): string | undefined {
  if (buf.startsWith("data: ", start) && buf.indexOf("\n", start) === end) return buf.slice(start + 6, end);
  let data: string | undefined;
  for (const line of buf.slice(start, end).split("\n")) {
    if (!line.startsWith("data:")) continue;
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}

async function* singleChunk(json: ChatCompletion): AsyncGenerator<string[]> {
  const choices = json.choices.map((c) => ({ index: c.index, delta: c.message, finish_reason: c.finish_reason }));
  const chunk = { id: json.id, object: "chat.completion.chunk", created: json.created, model: json.model, choices };
  const out = [JSON.stringify(chunk)];
  if (json.usage) out.push(JSON.stringify({ ...chunk, choices: [], usage: json.usage }));
  yield out;
}

function backoff(attempt: number, signal: AbortSignal): Promise<void> {
  const ms = Math.min(2000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2);
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
