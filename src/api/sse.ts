// Server-sent events for runs and commands followed as they happen: when a request asks for a
// stream, the framing (`event:` / `data:` lines, one write per event, Nagle off) and the client's
// disconnect (an aborted signal for the service). The response is opened only when the work
// starts, so errors before it are ordinary JSON errors; errors after it become the `end` event.
// openSse, writeSse and clientAbort are the plumbing the inference gateway's streams share.
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";
import { toApiError } from "./error-handler.js";

/** The request asks for a stream: `stream: true` in the body, `?stream=true`, or `Accept: text/event-stream`. */
export function wantsStream(request: FastifyRequest, bodyStream: boolean | null | undefined): boolean {
  if (bodyStream === true) return true;
  const q = (request.query as { stream?: unknown } | undefined)?.stream;
  if (q === true || q === "true" || q === "1") return true;
  const accept = request.headers.accept;
  return accept?.includes("text/event-stream") === true;
}

/** Takes the response over for server-sent events: the headers hooks already set (request id, rate limits), then `head`. */
export function openSse(reply: FastifyReply, head: OutgoingHttpHeaders): ServerResponse {
  reply.hijack();
  const raw = reply.raw;
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) raw.setHeader(name, value);
  raw.writeHead(200, head);
  raw.flushHeaders();
  return raw;
}

/** Writes to a response; returns a promise only when the client is slow (wait for drain or close). */
export function writeSse(res: ServerResponse, text: string): Promise<void> | undefined {
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

/** An AbortController aborted when the client goes away before the answer is complete. */
export function clientAbort(reply: FastifyReply): AbortController {
  const abort = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) abort.abort(new Error("the client closed the connection"));
  });
  return abort;
}

/**
 * Bytes a slow client may leave unread before it is dropped: a followed background process can
 * write for as long as it lives, and what a client does not read would otherwise pile up here.
 */
const MAX_UNREAD_BYTES = 16 * 2 ** 20;

export class EventStream {
  private opened = false;
  private closed = false;
  private readonly abort = new AbortController();
  /** Aborted when the client goes away before the stream's end, or the API key is revoked. */
  readonly signal = this.abort.signal;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
  ) {
    reply.raw.once("close", () => {
      this.closed = true;
      if (!reply.raw.writableFinished) this.abort.abort();
    });
    reply.holdOpen((why) => this.revoked(why));
  }

  /** The key was revoked (or its tenant suspended): the stream ends now with an error `end`, and the work is told to stop. */
  private revoked(why?: ApiError): void {
    const e = why ?? new ApiError("unauthorized", "The API key was revoked; this stream has ended");
    this.end({ error: { code: e.code, message: e.message } });
    this.closed = true;
    this.abort.abort();
  }

  get isOpen(): boolean {
    return this.opened;
  }

  /** Sends the response head: from here on the answer is a stream. */
  open(): void {
    if (this.opened) return;
    this.opened = true;
    this.reply.raw.socket?.setNoDelay(true);
    openSse(this.reply, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
      "x-request-id": this.request.id,
    });
  }

  send(event: string, data: unknown): void {
    if (!this.opened) this.open();
    if (this.closed) return;
    const raw = this.reply.raw;
    raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    if (raw.writableLength > MAX_UNREAD_BYTES) raw.destroy(); // its 'close' aborts the work
  }

  /** The last event; its data is the whole answer (or the error envelope). */
  end(data: unknown): void {
    this.send("end", data);
    if (!this.closed) this.reply.raw.end();
  }

  /** Ends with an error that happened after the stream opened; before, it is rethrown (a plain JSON error). */
  fail(err: unknown): void {
    if (!this.opened) throw err;
    const api = err instanceof Error ? toApiError(err) : undefined;
    if (!api) this.request.log.error({ err }, "error during a streamed answer");
    const e = api ?? new ApiError("internal_error", "Internal server error; it has been logged");
    this.end({ error: { code: e.code, message: e.message } });
  }
}

/**
 * Answers with a stream of `stdout`, `stderr` and `result` events and a final `end` carrying what
 * `work` returns (the same object a plain request gets).
 */
export async function streamWork<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  work: (observer: {
    started(): void;
    output(stream: "stdout" | "stderr", text: string): void;
    result(r: unknown): void;
    signal: AbortSignal;
  }) => Promise<T>,
): Promise<FastifyReply> {
  const stream = new EventStream(request, reply);
  try {
    const out = await work({
      started: () => stream.open(),
      output: (name, text) => stream.send(name, { text }),
      result: (r) => stream.send("result", r),
      signal: stream.signal,
    });
    stream.end(out);
  } catch (err) {
    stream.fail(err);
  }
  return reply;
}

/** Routes that may answer with an event stream: their documented 200 gets a text/event-stream body too. */
const STREAMING_PATHS = /\/(code\/run|commands\/run|commands\/\{pid\}\/stream)$/;

/**
 * Adds the text/event-stream answer to the OpenAPI document (the response schemas validate and
 * serialize JSON only, so the stream is added to the document, not to the schema Fastify compiles).
 */
export function documentEventStreams<T>(doc: T): T {
  const paths = (doc as { paths?: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, unknown> }> }>> })
    .paths;
  for (const [route, ops] of Object.entries(paths ?? {})) {
    if (!STREAMING_PATHS.test(route)) continue;
    for (const op of Object.values(ops)) {
      const ok = op.responses?.["200"];
      if (!ok) continue;
      if (route.endsWith("/stream")) delete ok.content?.["application/json"];
      ok.content = {
        ...ok.content,
        "text/event-stream": {
          schema: {
            type: "string",
            description:
              "Server-sent events: `stdout` and `stderr` ({text}), `result` (one rich result, code/run), and a final `end` whose data is the plain JSON answer.",
          },
        },
      };
    }
  }
  return doc;
}
