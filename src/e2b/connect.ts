// The Connect protocol's JSON encoding, for the envd methods the E2B SDKs call: unary calls are a
// JSON body in and out (errors as `{code, message}` with a matching HTTP status), and
// server-streaming calls take one enveloped JSON message and answer with enveloped messages and
// a final end-of-stream envelope (flag 0x02) that carries the error, if any. Client-streaming
// calls (StreamInput) read enveloped messages from the request body as they arrive (chunked, over
// HTTP/1.1 or 2) and answer like a server stream of one message. Envelope: one flags byte, a
// 32-bit big-endian length, the JSON. (Why by hand and not @connectrpc/connect-node: docs/e2b.md.)
import { addAbortSignal, PassThrough, type Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { invalid } from "../errors.js";
import { asMessage, clientMessages, parseMessage } from "./envelopes.js";
import { apiErrorOf, ConnectError, connectCode, installConnectErrors, retryAfterMetadata } from "./errors.js";

const END_STREAM = 0x02;
const STREAM_TYPE = "application/connect+json";
/** Pieces one client-stream message may come in: 512 bytes a piece on average for a message of 8 MiB. */
const MAX_PIECES = 16_384;

function envelope(flags: number, message: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

/** The one message of a server-streaming request. */
function firstMessage(body: unknown): Record<string, unknown> {
  if (!Buffer.isBuffer(body) || body.length < 5) throw invalid("Expected one enveloped Connect message");
  const len = body.readUInt32BE(1);
  if (body.readUInt8(0) !== 0 || body.length < 5 + len) throw invalid("Malformed Connect envelope (compressed or cut short)");
  return parseMessage(body.subarray(5, 5 + len));
}

/** An open server stream: messages go out as they are sent; end() closes it, with an error or not. */
export class ServerStream {
  private readonly out = new PassThrough();
  private ended = false;
  /** Aborted when the client goes away or the call's deadline (Connect-Timeout-Ms) passes. */
  readonly signal: AbortSignal;
  /** Set once the deadline has passed. */
  deadlinePassed = false;
  private readonly stopPings: () => void;

  constructor(request: FastifyRequest, reply: FastifyReply, keepalive?: unknown) {
    const controller = new AbortController();
    this.signal = controller.signal;
    // A quiet stream (a command that prints nothing for minutes) gets a keepalive message every
    // Keepalive-Ping-Interval seconds (the SDKs ask for 50), so that no idle timeout on the way cuts it.
    const every = Number(request.headers["keepalive-ping-interval"]);
    const pings =
      keepalive !== undefined && Number.isFinite(every) && every > 0
        ? setInterval(() => this.send(keepalive), Math.max(1, every) * 1000)
        : undefined;
    const ms = Number(request.headers["connect-timeout-ms"]);
    const timer =
      Number.isFinite(ms) && ms > 0
        ? setTimeout(() => {
            this.deadlinePassed = true;
            controller.abort();
          }, ms)
        : undefined;
    this.stopPings = () => clearInterval(pings);
    reply.raw.once("close", () => {
      clearTimeout(timer);
      clearInterval(pings);
      controller.abort();
    });
    // Held under its key: revoking the key ends the stream (and so the follow, as a disconnect does).
    reply.holdOpen();
    reply.status(200).header("content-type", STREAM_TYPE).send(this.out);
  }

  send(message: unknown): void {
    if (!this.ended) this.out.write(envelope(0, message));
  }

  end(error?: { code: string; message: string }, metadata?: Record<string, string[]>): void {
    if (this.ended) return;
    this.ended = true;
    this.stopPings();
    this.out.end(envelope(END_STREAM, error ? { error, ...(metadata && { metadata }) } : {}));
  }
}

type Unary = (message: Record<string, unknown>, request: FastifyRequest) => Promise<unknown>;
type Streaming = (message: Record<string, unknown>, request: FastifyRequest, stream: ServerStream) => Promise<void>;
type ClientStreaming = (messages: AsyncIterable<Record<string, unknown>>, request: FastifyRequest) => Promise<unknown>;

/** Registers the Connect content types and error answers in `app` (a plugin scope of its own). */
export function installConnect(app: FastifyInstance): void {
  installConnectErrors(app);
  app.addContentTypeParser(STREAM_TYPE, { parseAs: "buffer" }, (_req, body, done) => done(null, body));
}

export function unary(app: FastifyInstance, path: string, handler: Unary): void {
  app.post(path, async (request) => (await handler(asMessage(request.body), request)) ?? {});
}

/** Ends `stream` with `err` as Connect says it. */
function endWith(stream: ServerStream, err: unknown, request: FastifyRequest): void {
  if (err instanceof ConnectError) stream.end({ code: err.code, message: err.message });
  else {
    const api = apiErrorOf(err as Error, request.log);
    stream.end({ code: connectCode(api), message: api.message }, retryAfterMetadata(api));
  }
}

/** A server-streaming method (`keepalive`: its keepalive message); an error before or during the stream ends it with that error. */
export function serverStreaming(app: FastifyInstance, path: string, handler: Streaming, keepalive?: unknown): void {
  app.post(path, async (request, reply) => {
    const message = firstMessage(request.body);
    const stream = new ServerStream(request, reply, keepalive);
    try {
      await handler(message, request, stream);
      stream.end();
    } catch (err) {
      endWith(stream, err, request);
    }
    return reply;
  });
}

/**
 * A client-streaming method, in a plugin scope of its own (its request body is read as it comes,
 * not buffered): the handler gets the messages as they arrive and its answer is sent when the
 * client's stream ends. The call's deadline or the client going away ends the reading.
 */
export async function clientStreaming(app: FastifyInstance, path: string, handler: ClientStreaming): Promise<void> {
  await app.register(async (scope) => {
    scope.removeContentTypeParser(STREAM_TYPE);
    scope.addContentTypeParser(STREAM_TYPE, (_request, payload, done) => done(null, payload));
    const maxMessage = scope.initialConfig.bodyLimit ?? 2 ** 20;
    const limits = { maxMessage, maxPieces: MAX_PIECES };
    scope.post(path, async (request, reply) => {
      const body = request.body as Readable;
      const stream = new ServerStream(request, reply);
      addAbortSignal(stream.signal, body);
      try {
        stream.send((await handler(clientMessages(body, limits), request)) ?? {});
        stream.end();
      } catch (err) {
        if (stream.deadlinePassed)
          endWith(stream, new ConnectError("deadline_exceeded", "The input stream ran past the call's timeout"), request);
        else endWith(stream, err, request);
      }
      return reply;
    });
  });
}
