// Errors of the E2B-compatible API in the shapes the E2B SDKs read: the control API's
// `{code: <HTTP status>, message}`, Connect's `{code: "<connect code>", message}`, and the code
// interpreter's plain-text bodies. The SDKs turn 401 into AuthenticationError, 404 (Connect
// not_found) into NotFoundError (FileNotFoundError, SandboxNotFoundError), 429 into RateLimitError,
// 502 and Connect deadline_exceeded into TimeoutError.
import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import { toApiError } from "../api/error-handler.js";
import { ApiError } from "../errors.js";

/** The ApiError an error means (an unexpected one is logged and becomes a 500). */
export function apiErrorOf(err: Error, log: FastifyInstance["log"]): ApiError {
  const api = toApiError(err as FastifyError);
  if (api) return api;
  log.error({ err }, "unhandled error");
  return new ApiError("internal_error", "Internal server error; it has been logged");
}

function retryAfter(reply: FastifyReply, api: ApiError): void {
  if (api.retryAfterS !== undefined) reply.header("retry-after", String(Math.max(1, Math.ceil(api.retryAfterS))));
}

/** The control API's error bodies: `{code, message}` with the HTTP status as code. */
export function installControlErrors(app: FastifyInstance): void {
  app.setErrorHandler((err: Error, request, reply) => {
    const api = apiErrorOf(err, request.log);
    retryAfter(reply, api);
    return reply.status(api.status).send({ code: api.status, message: api.message });
  });
}

/** The code interpreter's error bodies: the message as plain text. */
export function installTextErrors(app: FastifyInstance): void {
  app.setErrorHandler((err: Error, request, reply) => {
    const api = apiErrorOf(err, request.log);
    retryAfter(reply, api);
    return reply.status(api.status).type("text/plain; charset=utf-8").send(api.message);
  });
}

/** Connect's error codes by HTTP status of an ApiError. */
const CONNECT_CODES: Record<number, string> = {
  400: "invalid_argument",
  401: "unauthenticated",
  403: "permission_denied",
  404: "not_found",
  408: "deadline_exceeded",
  409: "failed_precondition",
  413: "resource_exhausted",
  429: "resource_exhausted",
  501: "unimplemented",
  503: "unavailable",
  504: "deadline_exceeded",
  507: "resource_exhausted",
};

export function connectCode(api: ApiError): string {
  // A full machine is resource_exhausted (the SDKs' RateLimitError, retry later), not unavailable,
  // which the SDKs read as a sandbox that is no longer running.
  if (api.code === "at_capacity") return "resource_exhausted";
  return CONNECT_CODES[api.status] ?? "internal";
}

/** The Retry-After of a refusal as Connect metadata (a stream's headers are sent before its error). */
export function retryAfterMetadata(api: ApiError): Record<string, string[]> | undefined {
  if (api.retryAfterS === undefined) return undefined;
  return { "retry-after": [String(Math.max(1, Math.ceil(api.retryAfterS)))] };
}

/** An error Connect knows by name (one that has no ApiError code, such as already_exists). */
export class ConnectError extends Error {
  constructor(
    readonly code: "already_exists" | "unimplemented" | "deadline_exceeded",
    message: string,
  ) {
    super(message);
  }
}

const CONNECT_STATUS: Record<ConnectError["code"], number> = { already_exists: 409, unimplemented: 501, deadline_exceeded: 504 };

/** Connect's unary error answers: the HTTP status of the code, `{code, message}` as JSON. */
export function installConnectErrors(app: FastifyInstance): void {
  app.setErrorHandler((err: Error, request, reply) => {
    if (err instanceof ConnectError)
      return reply.status(CONNECT_STATUS[err.code]).type("application/json").send({ code: err.code, message: err.message });
    const api = apiErrorOf(err, request.log);
    retryAfter(reply, api);
    return reply
      .status(api.status)
      .type("application/json")
      .send({ code: connectCode(api), message: api.message });
  });
}
