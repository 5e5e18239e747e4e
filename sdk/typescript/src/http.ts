// The SDK's HTTP core: one typed `call` for every route of the OpenAPI document (paths, parameters,
// bodies and answers come from the generated openapi.ts), retries that honour Retry-After, timeouts,
// and AgentBoxError for every failure.
import { AgentBoxError, errorFromResponse } from "./errors.js";
import type { paths } from "./openapi.js";

export type Method = "get" | "post" | "put" | "delete" | "patch";

/** The paths that have an operation for `M`. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P] extends Record<M, infer O> ? ([O] extends [undefined] ? never : P) : never;
}[keyof paths];

export type Operation<M extends Method, P extends PathsWith<M>> = Exclude<paths[P][M], undefined>;

type ParamsOf<O> = O extends { parameters: infer X } ? X : never;
export type PathParams<O> = ParamsOf<O> extends { path: infer A } ? A : undefined;
export type QueryParams<O> = ParamsOf<O> extends { query?: infer Q } ? Q : undefined;
export type JsonBody<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : undefined;
/** The JSON answer of a 200 or 201. */
export type Answer<O> = O extends { responses: infer R }
  ? R extends { 200: { content: { "application/json": infer T } } }
    ? T
    : R extends { 201: { content: { "application/json": infer T } } }
      ? T
      : R extends { 202: { content: { "application/json": infer T } } }
        ? T
        : unknown
  : unknown;

export interface CallOptions<O> {
  path?: PathParams<O>;
  query?: QueryParams<O>;
  /** A JSON body (typed from the schema), or raw bytes/form data with `rawBody`. */
  body?: JsonBody<O>;
  rawBody?: BodyInit;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Overrides the client's timeout for this call, in milliseconds. */
  timeoutMs?: number;
}

export interface ClientOptions {
  /** An API key (or the admin key for `/v1/admin`). Default: the AGENTBOX_API_KEY environment variable. */
  apiKey?: string;
  /** The service's address, e.g. http://127.0.0.1:8080. Default: AGENTBOX_URL, else http://127.0.0.1:8080. */
  baseUrl?: string;
  /** Per-request timeout in milliseconds (default 60 s; runs add their own timeout on top). */
  timeoutMs?: number;
  /** Retries of a refused call (429, or 503 at_capacity) and of idempotent calls that got no answer (default 3). */
  maxRetries?: number;
  /** The longest wait between retries in seconds, whatever Retry-After says (default 30). */
  maxRetryWaitS?: number;
  /** A fetch implementation (default the global one). */
  fetch?: typeof fetch;
}

const env = (name: string): string | undefined =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

export class HttpClient {
  readonly baseUrl: string;
  readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly maxRetryWaitS: number;
  private readonly fetchImpl: typeof fetch;

  constructor(opts: ClientOptions = {}) {
    const apiKey = opts.apiKey ?? env("AGENTBOX_API_KEY");
    if (!apiKey) throw new AgentBoxError({ status: 0, code: "unauthorized", message: "No API key: pass apiKey or set AGENTBOX_API_KEY" });
    this.apiKey = apiKey;
    this.baseUrl = (opts.baseUrl ?? env("AGENTBOX_URL") ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.maxRetries = opts.maxRetries ?? 3;
    this.maxRetryWaitS = opts.maxRetryWaitS ?? 30;
    this.fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Calls one route and answers its parsed JSON (typed from the OpenAPI document). */
  async call<M extends Method, P extends PathsWith<M>>(
    method: M,
    path: P,
    opts: CallOptions<Operation<M, P>> = {},
  ): Promise<Answer<Operation<M, P>>> {
    const res = await this.send(method, path, opts);
    const text = await res.text();
    try {
      return (text === "" ? undefined : JSON.parse(text)) as Answer<Operation<M, P>>;
    } catch (cause) {
      throw new AgentBoxError({ status: res.status, code: "invalid_response", message: "The answer is not JSON", cause });
    }
  }

  /** Calls one route and answers the raw Response (downloads, streams); a failure still throws. */
  async send<M extends Method, P extends PathsWith<M>>(method: M, path: P, opts: CallOptions<Operation<M, P>> = {}): Promise<Response> {
    const url = this.url(path, opts.path as Record<string, unknown> | undefined, opts.query as Record<string, unknown> | undefined);
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}`, ...opts.headers };
    let body: BodyInit | undefined = opts.rawBody;
    if (body === undefined && opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    // A stream can be sent once only; anything else may be sent again.
    const replayable = !(body instanceof ReadableStream);
    const idempotent = method === "get" || method === "put" || method === "delete";
    for (let attempt = 0; ; attempt++) {
      const signals = [AbortSignal.timeout(opts.timeoutMs ?? this.timeoutMs)];
      if (opts.signal) signals.push(opts.signal);
      let res: Response;
      try {
        res = await this.fetchImpl(url, {
          method: method.toUpperCase(),
          headers,
          body,
          signal: AbortSignal.any(signals),
          ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
        } as RequestInit);
      } catch (cause) {
        const err = clientError(cause, opts.signal);
        if (err.code === "connection_error" && idempotent && replayable && attempt < this.maxRetries) {
          await sleep(Math.min(this.maxRetryWaitS, 0.25 * 2 ** attempt) * 1000, opts.signal);
          continue;
        }
        throw err;
      }
      if (res.ok) return res;
      const err = await errorFromResponse(res);
      const refused = res.status === 429 || (res.status === 503 && err.code === "at_capacity");
      if (refused && replayable && attempt < this.maxRetries) {
        await sleep(Math.min(this.maxRetryWaitS, err.retryAfter ?? 2 ** attempt) * 1000, opts.signal);
        continue;
      }
      throw err;
    }
  }

  private url(path: string, params: Record<string, unknown> = {}, query: Record<string, unknown> = {}): string {
    const filled = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = params[name];
      if (value === undefined || value === null)
        throw new AgentBoxError({ status: 0, code: "invalid_request", message: `Missing path parameter ${name}` });
      return encodeURIComponent(String(value));
    });
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) qs.append(k, String(v));
    const q = qs.toString();
    return `${this.baseUrl}${filled}${q ? `?${q}` : ""}`;
  }
}

function clientError(cause: unknown, userSignal: AbortSignal | undefined): AgentBoxError {
  if (userSignal?.aborted) return new AgentBoxError({ status: 0, code: "aborted", message: "The call was aborted", cause });
  if (cause instanceof DOMException && cause.name === "TimeoutError")
    return new AgentBoxError({ status: 0, code: "timeout", message: "No answer within the timeout", cause });
  const message = cause instanceof Error ? cause.message : String(cause);
  return new AgentBoxError({ status: 0, code: "connection_error", message: `Could not reach the service: ${message}`, cause });
}
