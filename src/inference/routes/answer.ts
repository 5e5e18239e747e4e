// How a completion's answer reaches the client: whole (the upstream's own bytes), or streamed as
// server-sent events passed on event by event as they arrive; usage recorded either way.
import type { ServerResponse } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import { openSse, writeSse } from "../../api/sse.js";
import { ApiError } from "../../errors.js";
import { type EventBatches, UpstreamHttpError, type Usage } from "../types.js";
import { chunkOf } from "../upstream-answer.js";
import type { UsageLog } from "../usage.js";

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

/** Takes the response over for the gateway's server-sent events (OpenAI's `data:` lines). */
export function startSse(reply: FastifyReply): ServerResponse {
  // Revoking the key drops the connection; the client abort then stops the upstream call.
  reply.holdOpen();
  return openSse(reply, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" });
}

/** An upstream's own 4xx, passed on with its status and code; anything else is rethrown. */
export function upstreamRefusal(err: unknown, reply: FastifyReply): FastifyReply {
  if (err instanceof UpstreamHttpError && !reply.sent) {
    if (err.retryAfter) reply.header("retry-after", err.retryAfter);
    return reply.status(err.status).send({ error: { code: err.code, message: err.message } });
  }
  throw err;
}

/** The error envelope for a failure, as an SSE payload (after a stream began, an error can only be an event). */
export function errorEvent(err: unknown, request: FastifyRequest): string {
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

/**
 * A whole (not streamed) completion: its usage recorded (the count the provider reported while
 * answering first), then the upstream's own bytes when there are any (the typed reply only knows
 * the schema's object shape), else the parsed answer.
 */
export function answerWhole<T extends { usage?: Usage }>(
  usageLog: UsageLog,
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
export async function streamPlain(
  usageLog: UsageLog,
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
          const chunk = chunkOf(data);
          if (chunk.usage) seen = chunk.usage;
          // The usage-only chunk the gateway asked for on its own account.
          if (!includeUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0) continue;
        }
        text += `data: ${data}\n\n`;
      }
      if (text !== "") {
        const wait = writeSse(res, text);
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
