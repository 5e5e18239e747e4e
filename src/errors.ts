// Errors: every failure the API reports is an ApiError with a code from this one table, which fixes
// its HTTP status. The error handler in src/api/error-handler.ts turns it into the envelope.

const STATUS = {
  invalid_request: 400,
  invalid_state: 400,
  unauthorized: 401,
  tenant_suspended: 403,
  sandbox_not_found: 404,
  context_not_found: 404,
  file_not_found: 404,
  template_not_found: 404,
  model_not_found: 404,
  not_found: 404,
  index_not_found: 404,
  vector_not_found: 404,
  /** No background process with that pid in the sandbox (it may have ended with a restart of the sandbox). */
  process_not_found: 404,
  conflict: 409,
  /** The sandbox is paused: resume it first. */
  sandbox_paused: 409,
  snapshot_not_found: 404,
  payload_too_large: 413,
  /** A Range header outside the file (Content-Range tells its size). */
  range_not_satisfiable: 416,
  request_timeout: 408,
  headers_too_large: 431,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  upstream_error: 502,
  at_capacity: 503,
  upstream_unavailable: 503,
  /** PostgreSQL (AGENTBOX_DATABASE_URL) cannot be reached: nothing was done; retry after Retry-After. */
  database_unavailable: 503,
  /** In a cluster: the node that runs the sandbox did not answer a forwarded request, or cannot be found now (Redis away). */
  node_unavailable: 503,
  /** The sandbox did not answer in time (a stopped or overloaded supervisor); it can still be killed. */
  sandbox_unresponsive: 503,
  upstream_timeout: 504,
  /** The service's disk is full (a snapshot could not be written). */
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof STATUS;

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Seconds a client should wait before retrying (429, 503). */
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.status = STATUS[code];
  }
}

export const sandboxNotFound = (id: string) => new ApiError("sandbox_not_found", `Sandbox '${id}' was not found`);
export const sandboxPaused = (id: string) =>
  new ApiError("sandbox_paused", `Sandbox '${id}' is paused; resume it (POST /v1/agents/sandboxes/${id}/resume) first`);
export const invalid = (message: string) => new ApiError("invalid_request", message);
