// The dashboard's only way to the service: its public HTTP API, with the signed-in key as a
// Bearer token. Errors keep the envelope's code and message so pages can show them as they are.

const KEY_ITEM = "agentbox.key";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY_ITEM);
  else sessionStorage.setItem(KEY_ITEM, key);
}

async function errorOf(res: Response): Promise<ApiError> {
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string } };
    if (body.error?.message) return new ApiError(res.status, body.error.code ?? "error", body.error.message);
  } catch {
    // not JSON: fall through to the status line
  }
  return new ApiError(res.status, "http_error", `HTTP ${res.status} ${res.statusText}`);
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  key?: string;
  signal?: AbortSignal;
}

/** Sends a request to the API; answers the response once it is a 2xx, else throws its envelope's error. */
export async function send(path: string, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  const key = opts.key ?? storedKey();
  if (key) headers.authorization = `Bearer ${key}`;
  let body: BodyInit | undefined;
  if (opts.body instanceof FormData) body = opts.body;
  else if (opts.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(path, { method: opts.method ?? (body ? "POST" : "GET"), headers, body, signal: opts.signal });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(0, "network_error", "The service could not be reached");
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  return (await send(path, opts)).json() as Promise<T>;
}

export interface StreamEvent {
  event: string;
  data: unknown;
}

/** POSTs a body and reads the answer as server-sent events, calling `onEvent` for each as it arrives. */
export async function stream(path: string, body: unknown, onEvent: (ev: StreamEvent) => void, signal?: AbortSignal): Promise<void> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  const key = storedKey();
  if (key) headers.authorization = `Bearer ${key}`;
  let res: Response;
  try {
    res = await fetch(path, { method: "POST", headers, body: JSON.stringify(body), signal });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(0, "network_error", "The service could not be reached");
  }
  if (!res.ok) throw await errorOf(res);
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut = buffer.indexOf("\n\n");
    while (cut >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      cut = buffer.indexOf("\n\n");
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length === 0) continue;
      try {
        onEvent({ event, data: JSON.parse(data.join("\n")) });
      } catch {
        onEvent({ event, data: data.join("\n") });
      }
    }
  }
}

/** Who a key belongs to: the admin key opens /v1/admin, a tenant's key opens /v1/agents. */
export async function identify(key: string): Promise<"operator" | "tenant"> {
  try {
    await send("/v1/admin/keys", { key });
    return "operator";
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) throw err;
  }
  await send("/v1/agents/sandboxes?limit=1", { key });
  return "tenant";
}

export const AGENTS = "/v1/agents";
export const sbxPath = (id: string) => `${AGENTS}/sandboxes/${encodeURIComponent(id)}`;
