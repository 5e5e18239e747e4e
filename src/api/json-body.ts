// The JSON body parser of every route: an empty body is no body (clients send the content type on
// GET and DELETE too), a body nested deeper than the limit is refused before JSON.parse walks it,
// and malformed JSON is Fastify's own 400.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";
import { jsonDepthExceeds } from "./bounds.js";

type Done = (err: Error | null, body?: unknown) => void;

/** Parses a JSON body's text as every route does (for parsers that take some bodies elsewhere first). */
export function parseJsonBody(text: string, maxDepth: number, done: Done, parsed?: () => void): void {
  if (text.trim() === "") {
    done(null, undefined);
    return;
  }
  if (jsonDepthExceeds(text, maxDepth)) {
    done(new ApiError("invalid_request", `JSON body is nested deeper than ${maxDepth} levels`), undefined);
    return;
  }
  try {
    const body: unknown = JSON.parse(text);
    parsed?.();
    done(null, body);
  } catch (err) {
    const e = err as Error & { statusCode?: number; code?: string };
    e.statusCode = 400;
    e.code = "FST_ERR_CTP_INVALID_JSON_BODY";
    done(e, undefined);
  }
}

/**
 * Replaces Fastify's JSON parser in `app`'s scope. With `keepRaw`, each parsed body's original
 * bytes are handed to it too (the inference gateway sends them upstream unchanged).
 */
export function installJsonParser(
  app: FastifyInstance,
  maxDepth: number,
  keepRaw?: (request: FastifyRequest, bytes: Buffer) => void,
): void {
  app.removeContentTypeParser("application/json");
  if (!keepRaw) {
    app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) =>
      parseJsonBody(String(body), maxDepth, done),
    );
    return;
  }
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const bytes = body as Buffer;
    parseJsonBody(bytes.toString("utf8"), maxDepth, done, () => keepRaw(request, bytes));
  });
}
