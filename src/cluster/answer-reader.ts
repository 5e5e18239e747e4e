// Reads an owner node's HTTP/1.1 answer from the bytes of its connection, for the relay's own
// exchange (owner-exchange.ts): the status and header lines, then the body by its framing
// (Content-Length, chunked, none, or up to the connection's end), handed on as it comes without
// copying. What it reads is another node of the cluster's node:http server, never a client.

/** Where a reader sends what it reads. */
export interface AnswerSink {
  /** The answer's status and headers (name, value, ...: node:http's `rawHeaders` form). */
  onHead(status: number, rawHeaders: string[]): void;
  /**
   * Body bytes, de-chunked: a view into the connection's buffer, valid while the call lasts.
   * `last`: they end the answer (onEnd follows).
   */
  onBody(chunk: Buffer, last: boolean): void;
  /** The answer is complete; `reusable`: the connection may carry another request. */
  onEnd(reusable: boolean): void;
}

/** Larger heads are refused (node:http's own limit is 16 KiB). */
const MAX_HEAD = 64 * 1024;
const CRLF2 = Buffer.from("\r\n\r\n");

enum State {
  Head,
  Length,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailer,
  UntilClose,
  Done,
}

export class AnswerReader {
  private state = State.Done;
  private sink: AnswerSink | undefined;
  /** Bytes of a head, a chunk-size line or a trailer line not complete yet. */
  private pending: Buffer | undefined;
  private remaining = 0;
  private noBody = false;
  private keepAlive = true;

  /** Begins a new answer; `headRequest`: the request was a HEAD (its answer has no body). */
  start(sink: AnswerSink, headRequest: boolean): void {
    this.sink = sink;
    this.state = State.Head;
    this.pending = undefined;
    this.noBody = headRequest;
  }

  /** Whether an answer is being read and not complete. */
  get reading(): boolean {
    return this.state !== State.Done;
  }

  /** The connection ended: completes an answer that runs to it; false when one was cut short. */
  end(): boolean {
    if (this.state === State.Done) return true;
    if (this.state !== State.UntilClose) return false;
    this.finish(false);
    return true;
  }

  /** Reads bytes of the connection; throws on what is not a well-formed answer. */
  feed(data: Buffer): void {
    let at = 0;
    if (this.pending) {
      data = Buffer.concat([this.pending, data]);
      this.pending = undefined;
    }
    while (at < data.length) {
      switch (this.state) {
        case State.Head: {
          const end = data.indexOf(CRLF2, at);
          if (end < 0) {
            this.keep(data, at, MAX_HEAD);
            return;
          }
          this.head(data.toString("latin1", at, end));
          at = end + 4;
          break;
        }
        case State.Length: {
          const n = Math.min(this.remaining, data.length - at);
          this.remaining -= n;
          const chunk = data.subarray(at, at + n);
          at += n;
          (this.sink as AnswerSink).onBody(chunk, this.remaining === 0);
          if (this.remaining === 0) this.complete();
          break;
        }
        case State.ChunkSize:
        case State.Trailer: {
          const eol = data.indexOf(10, at);
          if (eol < 0) {
            this.keep(data, at, 4096);
            return;
          }
          const line = data.toString("latin1", at, eol).trimEnd();
          at = eol + 1;
          if (this.state === State.Trailer) {
            if (line === "") this.complete();
            break;
          }
          const size = Number.parseInt(line, 16);
          if (!/^[0-9a-fA-F]+(?:;|$)/.test(line) || !Number.isSafeInteger(size)) throw new Error("malformed chunk size");
          this.remaining = size;
          this.state = size === 0 ? State.Trailer : State.ChunkData;
          break;
        }
        case State.ChunkData: {
          const n = Math.min(this.remaining, data.length - at);
          this.remaining -= n;
          const chunk = data.subarray(at, at + n);
          at += n;
          if (this.remaining === 0) {
            this.state = State.ChunkDataEnd;
            this.remaining = 2;
          }
          (this.sink as AnswerSink).onBody(chunk, false);
          break;
        }
        case State.ChunkDataEnd: {
          // The CRLF after a chunk's data (possibly split across reads).
          const n = Math.min(this.remaining, data.length - at);
          this.remaining -= n;
          at += n;
          if (this.remaining === 0) this.state = State.ChunkSize;
          break;
        }
        case State.UntilClose:
          (this.sink as AnswerSink).onBody(at === 0 ? data : data.subarray(at), false);
          return;
        case State.Done:
          throw new Error("bytes after the answer");
      }
    }
  }

  private keep(data: Buffer, at: number, max: number): void {
    if (data.length - at > max) throw new Error("answer head or line too long");
    // A copy: the connection's buffer is reused once this read returns.
    this.pending = Buffer.from(data.subarray(at));
  }

  private head(text: string): void {
    const lines = text.split("\r\n");
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] as string);
    if (!status) throw new Error("malformed status line");
    const code = Number(status[1]);
    // An interim answer (100 Continue, 103 Early Hints): the final one follows.
    if (code >= 100 && code < 200) return;
    const raw: string[] = [];
    let length: number | undefined;
    let chunked = false;
    let keepAlive = lines[0]?.startsWith("HTTP/1.1") === true;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i] as string;
      const colon = line.indexOf(":");
      if (colon <= 0) throw new Error("malformed header line");
      const name = line.slice(0, colon);
      const value = line.slice(colon + 1).trim();
      raw.push(name, value);
      switch (name.length) {
        case 10:
          if (name.toLowerCase() === "connection") {
            const v = value.toLowerCase();
            if (v.includes("close")) keepAlive = false;
            else if (v.includes("keep-alive")) keepAlive = true;
          }
          break;
        case 14:
          if (name.toLowerCase() === "content-length") {
            if (!/^\d+$/.test(value) || (length !== undefined && length !== Number(value))) throw new Error("malformed content-length");
            length = Number(value);
          }
          break;
        case 17:
          if (name.toLowerCase() === "transfer-encoding") chunked = value.toLowerCase().endsWith("chunked");
          break;
      }
    }
    this.keepAlive = keepAlive;
    (this.sink as AnswerSink).onHead(code, raw);
    if (this.noBody || code === 204 || code === 304) this.complete();
    else if (chunked) this.state = State.ChunkSize;
    else if (length !== undefined) {
      this.remaining = length;
      this.state = State.Length;
      if (length === 0) this.complete();
    } else this.state = State.UntilClose;
  }

  private complete(): void {
    this.finish(this.keepAlive);
  }

  private finish(reusable: boolean): void {
    this.state = State.Done;
    const sink = this.sink as AnswerSink;
    this.sink = undefined;
    sink.onEnd(reusable);
  }
}
