// A scripted OpenAI-compatible upstream: a real HTTP server on 127.0.0.1 for the inference gateway's
// tests and benchmark. The model id picks the behaviour:
//   echo          answers "echo: <last user text>" (streamed as one chunk per word when stream: true)
//   slow          streamed with `slowChunkMs` between chunks (proves the gateway flushes each one)
//   fail-500      500 with an OpenAI error body
//   fail-400      400 with an OpenAI error body (type, param) and nothing else
//   fail-429      429 with Retry-After: 7
//   fail-401      401, as when the gateway's key for the upstream is wrong
//   hang          accepts the request and never answers
//   reset-once    closes the connection unanswered the first time, then answers like echo
//   hang-stream   sends the headers and one chunk, then nothing
//   scripted      answers with the next turn queued by `script()` (tool calls or text)
// POST /v1/completions (legacy text completions) answers "echo: <prompt>" for each prompt (streamed
// one event per word), or the fail-400 error.
// Every request's body and headers are recorded in `requests`.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Turn {
  content?: string;
  tool_calls?: Array<{ name: string; arguments: string }>;
}

export interface RecordedRequest {
  body: Record<string, unknown> & { messages: Array<Record<string, unknown>>; model: string; stream?: boolean };
  /** The body's bytes as received. */
  raw: string;
  headers: http.IncomingHttpHeaders;
}

export interface Upstream {
  /** Base URL for a providers file, e.g. http://127.0.0.1:1234/v1 */
  baseUrl: string;
  port: number;
  requests: RecordedRequest[];
  /** Sockets that were closed by the client before the answer ended (an aborted stream). */
  aborted: number;
  script(turns: Turn[]): void;
  close(): Promise<void>;
}

export interface UpstreamOptions {
  slowChunkMs?: number;
  /** Words in the echo answer when there is no user text. */
  port?: number;
  /** Record requests (off for the benchmark). */
  record?: boolean;
}

let seq = 0;

function lastUserText(messages: Array<Record<string, unknown>>): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: string; content?: unknown };
    if (m.role === "user" && typeof m.content === "string") return m.content;
  }
  return "";
}

interface TextBody {
  model: string;
  prompt: string | string[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

/** A legacy text completion: "echo: <prompt>" per prompt. */
function textCompletion(body: TextBody, res: http.ServerResponse): void {
  const send = (status: number, payload: unknown) => {
    const text = JSON.stringify(payload);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };
  if (body.model === "fail-400") {
    send(400, { error: { message: "max_tokens is too large", type: "invalid_request_error", code: "invalid_value" } });
    return;
  }
  const prompts = typeof body.prompt === "string" ? [body.prompt] : body.prompt;
  const id = `cmpl-up${++seq}`;
  const created = Math.floor(Date.now() / 1000);
  const texts = prompts.map((p) => `echo: ${p}`);
  const promptTokens = prompts.join(" ").split(" ").length;
  const completionTokens = texts.join(" ").split(" ").length;
  const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
  const head = { id, object: "text_completion", created, model: body.model };
  if (body.stream !== true) {
    send(200, { ...head, choices: texts.map((text, index) => ({ text, index, logprobs: null, finish_reason: "stop" })), usage });
    return;
  }
  const events: string[] = [];
  texts.forEach((text, index) => {
    text.split(" ").forEach((w, i) => {
      events.push(
        `data: ${JSON.stringify({ ...head, choices: [{ text: i === 0 ? w : ` ${w}`, index, logprobs: null, finish_reason: null }] })}\n\n`,
      );
    });
    events.push(`data: ${JSON.stringify({ ...head, choices: [{ text: "", index, logprobs: null, finish_reason: "stop" }] })}\n\n`);
  });
  if (body.stream_options?.include_usage) events.push(`data: ${JSON.stringify({ ...head, choices: [], usage })}\n\n`);
  events.push("data: [DONE]\n\n");
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end(events.join(""));
}

export async function startUpstream(opts: UpstreamOptions = {}): Promise<Upstream> {
  const slowChunkMs = opts.slowChunkMs ?? 150;
  const record = opts.record ?? true;
  let queue: Turn[] = [];
  const state = { aborted: 0, resets: 0 };
  const requests: RecordedRequest[] = [];
  const open = new Set<http.ServerResponse>();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/v1/completions" && req.method === "POST") {
        const raw = Buffer.concat(chunks).toString("utf8");
        if (record) requests.push({ body: JSON.parse(raw) as RecordedRequest["body"], raw, headers: req.headers });
        textCompletion(JSON.parse(raw) as TextBody, res);
        return;
      }
      if (req.url !== "/v1/chat/completions" || req.method !== "POST") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}`, type: "invalid_request_error" } }));
        return;
      }
      const raw = Buffer.concat(chunks).toString("utf8");
      const body = JSON.parse(raw) as RecordedRequest["body"];
      if (record) requests.push({ body, raw, headers: req.headers });
      open.add(res);
      res.on("close", () => {
        open.delete(res);
        if (!res.writableFinished) state.aborted++;
      });
      const id = `chatcmpl-up${++seq}`;
      const created = Math.floor(Date.now() / 1000);
      const model = body.model;
      const promptTokens = JSON.stringify(body.messages).length >> 2;

      const sendJson = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
        const text = JSON.stringify(payload);
        res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
        res.end(text);
      };

      switch (model) {
        case "fail-500":
          return sendJson(500, { error: { message: "The upstream had an internal error", type: "server_error", param: null, code: null } });
        case "fail-400":
          return sendJson(400, {
            error: { message: "temperature is out of range", type: "invalid_request_error", param: "temperature", code: "invalid_value" },
          });
        case "fail-429":
          return sendJson(
            429,
            { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
            { "retry-after": "7" },
          );
        case "fail-401":
          return sendJson(401, {
            error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" },
          });
        case "hang":
          return; // never answer
        case "reset-once":
          // Closes the connection without answering the first time (as a server does with an idle
          // kept-alive connection), answers normally after.
          if (state.resets++ === 0) return void req.socket.destroy();
          break;
        default:
          break;
      }

      let turn: Turn;
      if (model === "scripted") {
        const next = queue.shift();
        if (!next) return sendJson(500, { error: { message: "script exhausted", type: "server_error" } });
        turn = next;
      } else {
        turn = { content: `echo: ${lastUserText(body.messages)}` };
      }
      const toolCalls = turn.tool_calls?.map((c, i) => ({
        id: `call_${seq}_${i}`,
        type: "function" as const,
        function: { name: c.name, arguments: c.arguments },
      }));
      const content = turn.content ?? null;
      const completionTokens = content ? content.split(" ").length : 5;
      const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
      const finish = toolCalls ? "tool_calls" : "stop";

      if (body.stream !== true) {
        const message: Record<string, unknown> = { role: "assistant", content, refusal: null };
        if (toolCalls) message.tool_calls = toolCalls;
        return sendJson(200, {
          id,
          object: "chat.completion",
          created,
          model,
          choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
          usage,
          system_fingerprint: "fp_scripted",
        });
      }

      const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      const chunk = (delta: Record<string, unknown>, finishReason: string | null) =>
        `data: ${JSON.stringify({
          id,
          object: "chat.completion.chunk",
          created,
          model,
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
          ...(includeUsage ? { usage: null } : {}),
        })}\n\n`;
      const events: string[] = [chunk({ role: "assistant", content: "" }, null)];
      if (content) {
        const words = content.split(" ");
        words.forEach((w, i) => {
          events.push(chunk({ content: i === 0 ? w : ` ${w}` }, null));
        });
      }
      toolCalls?.forEach((c, i) => {
        events.push(
          chunk({ tool_calls: [{ index: i, id: c.id, type: "function", function: { name: c.function.name, arguments: "" } }] }, null),
        );
        const half = Math.ceil(c.function.arguments.length / 2);
        events.push(chunk({ tool_calls: [{ index: i, function: { arguments: c.function.arguments.slice(0, half) } }] }, null));
        events.push(chunk({ tool_calls: [{ index: i, function: { arguments: c.function.arguments.slice(half) } }] }, null));
      });
      events.push(chunk({}, finish));
      if (includeUsage) {
        events.push(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n`);
      }
      events.push("data: [DONE]\n\n");
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      if (model === "hang-stream") {
        res.write(events[0]);
        return;
      }
      if (model !== "slow") {
        res.end(events.join(""));
        return;
      }
      let i = 0;
      const tick = () => {
        if (res.destroyed) return;
        const e = events[i++];
        if (e === undefined) return void res.end();
        res.write(e);
        setTimeout(tick, slowChunkMs);
      };
      tick();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    get aborted() {
      return state.aborted;
    },
    script(turns: Turn[]) {
      queue = [...turns];
    },
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
