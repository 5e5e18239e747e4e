// A server-sent events client for the tests and benchmarks: each event with the time it arrived,
// and a way to hang up mid-stream (to test that the service notices).
export interface SseEvent {
  event: string;
  data: unknown;
  /** performance.now() when the event's last line arrived. */
  at: number;
}

export interface SseAnswer {
  status: number;
  contentType: string;
  /** When the response head arrived (performance.now()). */
  headAt: number;
  events: SseEvent[];
  /** The body when the answer was not a stream (e.g. a JSON error). */
  json?: unknown;
}

/**
 * Sends a request and reads the event stream to its end, or until `stopWhen` says so (then the
 * connection is closed: a client hanging up).
 */
export async function sse(
  server: { url: string; key: string },
  method: string,
  route: string,
  body?: unknown,
  opts: { headers?: Record<string, string>; stopWhen?: (e: SseEvent) => boolean } = {},
): Promise<SseAnswer> {
  const abort = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${server.key}`, ...opts.headers };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${server.url}${route}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: abort.signal,
  });
  const headAt = performance.now();
  const contentType = res.headers.get("content-type") ?? "";
  if (!contentType.startsWith("text/event-stream")) {
    const text = await res.text();
    return { status: res.status, contentType, headAt, events: [], json: JSON.parse(text) };
  }
  const events: SseEvent[] = [];
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      for (let sep = buf.indexOf("\n\n"); sep >= 0; sep = buf.indexOf("\n\n")) {
        const block = buf.slice(0, sep);
        buf = buf.slice(sep + 2);
        let event = "message";
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        const e = { event, data: JSON.parse(data.join("\n")), at: performance.now() };
        events.push(e);
        if (opts.stopWhen?.(e)) {
          abort.abort();
          return { status: res.status, contentType, headAt, events };
        }
      }
    }
  } catch (err) {
    if (!abort.signal.aborted) throw err;
  }
  return { status: res.status, contentType, headAt, events };
}
