// Server-sent events reader for streamed runs: turns a response body into {event, data} pairs.
// Hand-written because the SDK has no runtime dependencies; it follows the WHATWG event-stream
// rules the service uses (event/data fields, blank line ends an event, comments ignored).

export interface ServerEvent {
  event: string;
  data: string;
}

export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "message";
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let nl = buffer.search(/\r\n|\r|\n/);
      while (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length > 0) yield { event, data: data.join("\n") };
          event = "message";
          data = [];
        } else if (!line.startsWith(":")) {
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const raw = colon < 0 ? "" : line.slice(colon + 1);
          const val = raw.startsWith(" ") ? raw.slice(1) : raw;
          if (field === "event") event = val;
          else if (field === "data") data.push(val);
        }
        nl = buffer.search(/\r\n|\r|\n/);
      }
    }
    if (data.length > 0) yield { event, data: data.join("\n") };
  } finally {
    // Leaving the loop early (break in a for-await) closes the connection, which interrupts a run.
    await reader.cancel().catch(() => {});
  }
}
