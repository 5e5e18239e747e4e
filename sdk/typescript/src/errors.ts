// Errors of the SDK: every failed call throws an AgentBoxError carrying the API's error envelope
// (`{"error": {"code", "message"}}`), the HTTP status and the request id, so callers branch on
// `err.code` rather than on message text.

/** Codes the service answers with (docs/api.md); a newer service may send others. */
export type KnownErrorCode =
  | "invalid_request"
  | "invalid_state"
  | "unauthorized"
  | "sandbox_not_found"
  | "context_not_found"
  | "file_not_found"
  | "not_found"
  | "payload_too_large"
  | "rate_limited"
  | "quota_exceeded"
  | "at_capacity"
  | "sandbox_unresponsive"
  | "upstream_error"
  | "internal_error";

/** Codes of failures on the client's side: no answer arrived. */
export type ClientErrorCode = "timeout" | "connection_error" | "aborted" | "invalid_response";

export type ErrorCode = KnownErrorCode | ClientErrorCode | (string & {});

export class AgentBoxError extends Error {
  override readonly name = "AgentBoxError";
  /** HTTP status, or 0 when no answer arrived (timeout, connection refused, aborted). */
  readonly status: number;
  readonly code: ErrorCode;
  /** The service's `x-request-id`, to find the request in its logs. */
  readonly requestId: string | undefined;
  /** Seconds the service asked to wait (`Retry-After`), when it said. */
  readonly retryAfter: number | undefined;

  constructor(init: { status: number; code: ErrorCode; message: string; requestId?: string; retryAfter?: number; cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
  }
}

/** Reads the error envelope of a failed answer; anything else becomes `http_<status>`. */
export async function errorFromResponse(res: Response): Promise<AgentBoxError> {
  const requestId = res.headers.get("x-request-id") ?? undefined;
  const retryAfter = parseRetryAfter(res.headers.get("retry-after"));
  let code: string = `http_${res.status}`;
  let message = `HTTP ${res.status}`;
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (typeof body.error?.code === "string") code = body.error.code;
    if (typeof body.error?.message === "string") message = body.error.message;
  } catch {
    if (text) message = `HTTP ${res.status}: ${text.slice(0, 200)}`;
  }
  return new AgentBoxError({ status: res.status, code, message, requestId, retryAfter });
}

/** `Retry-After` as seconds: either delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}
