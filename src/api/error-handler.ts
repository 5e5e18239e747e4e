// The one place where failures become HTTP responses: ApiError codes, Fastify's own validation and
// body errors, and anything unexpected (a 500 that is logged, never user code's fault).
import type { FastifyError, FastifyInstance } from "fastify";
import { ApiError } from "../errors.js";

function envelope(code: string, message: string) {
  return { error: { code, message } };
}

export function toApiError(err: FastifyError | ApiError | Error): ApiError | undefined {
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError;
  if (fe.validation) {
    const first = fe.validation[0];
    const where = fe.validationContext ?? "body";
    const field = first?.instancePath
      ? first.instancePath.replace(/^\//, "").replaceAll("/", ".")
      : (first?.params as { missingProperty?: string })?.missingProperty;
    const allowed = (first?.params as { allowedValues?: unknown[] } | undefined)?.allowedValues;
    const message = first?.keyword === "enum" && allowed ? `must be one of ${allowed.join(", ")}` : first?.message;
    const detail = first?.keyword === "required" ? `'${field}' is required` : `${field ? `'${field}' ` : ""}${message ?? "is invalid"}`;
    return new ApiError("invalid_request", `Invalid ${where}: ${detail}`);
  }
  switch (fe.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError("payload_too_large", "Request body is too large");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError("invalid_request", "Unsupported Content-Type; send application/json");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ApiError("invalid_request", "Content-Length does not match the body");
    default:
      break;
  }
  if (fe instanceof SyntaxError || fe.code === "FST_ERR_CTP_INVALID_JSON_BODY")
    return new ApiError("invalid_request", `Malformed JSON body: ${fe.message}`);
  // The multipart parser's own errors carry no status: they are the client's malformed upload.
  if (
    fe.statusCode === undefined &&
    /^Multipart: |unexpected end of multipart data|^Boundary required|^Malformed part header/i.test(fe.message)
  )
    return new ApiError("invalid_request", `Malformed multipart body: ${fe.message}`);
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) {
    if (fe.statusCode === 413) return new ApiError("payload_too_large", fe.message);
    if (fe.statusCode === 429) return new ApiError("rate_limited", fe.message);
    if (fe.statusCode === 404) return new ApiError("not_found", fe.message);
    return new ApiError("invalid_request", fe.message);
  }
  return undefined;
}

/** Errors the router raises before any route or hook runs (Fastify's `frameworkErrors`). */
export function routerError(err: FastifyError): ApiError {
  switch (err.code) {
    case "FST_ERR_BAD_URL":
      return new ApiError("invalid_request", "The URL path is not valid percent-encoded UTF-8");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return new ApiError("invalid_request", "A path parameter of the URL is too long");
    default:
      return toApiError(err) ?? new ApiError("internal_error", "Internal server error");
  }
}

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    // Errors raised before the onRequest hooks ran (e.g. a malformed URL) still carry the request id.
    reply.header("x-request-id", request.id);
    // A route that had set up a file's answer (a stream that failed before its first byte) leaves
    // its content headers: the error is JSON, and an octet-stream type made Fastify refuse it (500).
    if (!reply.sent) {
      reply.type("application/json; charset=utf-8");
      for (const name of ["content-length", "content-disposition"]) reply.removeHeader(name);
    }
    const api = toApiError(err);
    if (!api) {
      request.log.error({ err }, "unhandled error");
      return reply.status(500).send(envelope("internal_error", "Internal server error; it has been logged"));
    }
    if (api.retryAfterS !== undefined) reply.header("retry-after", String(Math.max(1, Math.ceil(api.retryAfterS))));
    return reply.status(api.status).send(envelope(api.code, api.message));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(envelope("not_found", `No route for ${request.method} ${request.url.split("?", 1)[0]}`));
  });
}
