// The kept-alive connections a node sends forwarded requests over (forward.ts), each with the
// parser of the owner's answers: http-parser-js, fed the connection's bytes, hands the answer under
// way its head, its body as it comes and its end. node:http's client (ClientRequest, IncomingMessage
// and their streams) cost the forwarding node about a sixth more CPU per forwarded run; the request's own
// text is written by forward.ts. One exchange at a time on a connection; idle ones are kept per node,
// last used first, until a second before the owner would close them.
import net from "node:net";
import { HTTPParser } from "http-parser-js";
import { idleTimeoutMs } from "./node-connections.js";

// An answer's head bytes kept as they came, as node:http's own parser keeps them: the library's
// default ('ascii') clears their high bit, so a sandbox's header holding 0x80-0xFF (a UTF-8 "—")
// came out holding control characters, which writeHead refuses. (This process is the library's only user.)
HTTPParser.encoding = "latin1";

/** The TCP keep-alive probes' delay on a connection (a node that vanished is found). */
const TCP_KEEPALIVE_MS = 10_000;

/** What an owner's answer says of itself, as its head is read. */
export interface AnswerHead {
  status: number;
  /** name, value, name, value... as the owner sent them. */
  headers: string[];
}

/** The exchange under way on a connection: what its parser and its socket report. */
export interface Exchange {
  /** The answer's head; true when the answer has no body (HEAD, 204, 304), which the parser cannot tell. */
  head(answer: AnswerHead): boolean;
  body(chunk: Buffer): void;
  /** The answer has ended. */
  done(): void;
  /**
   * The connection failed or closed before the answer ended; `bad`: because the answer could not be
   * read or relayed (the parser's error, or one thrown by head()), not because the owner went away.
   */
  fail(bad?: Error): void;
}

/** Whether an answer's Connection header asks for the connection to close. */
function closes(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2)
    if ((headers[i] as string).toLowerCase() === "connection" && /close/i.test(headers[i + 1] as string)) return true;
  return false;
}

/** One kept-alive connection to a node; `current`: the exchange on it now. */
export class OwnerLine {
  current: Exchange | undefined;
  /** The answer under way is a 1xx one (no body, another answer follows). */
  private interim = false;
  /** Why the answer under way could not be read or relayed (the connection is closed for it). */
  private bad: Error | undefined;
  /** How long the connection may idle after the answer under way (see idleTimeoutMs); undefined: not to be kept. */
  idleMs: number | undefined;

  constructor(
    readonly socket: net.Socket,
    readonly key: string,
  ) {
    const parser = new HTTPParser(HTTPParser.RESPONSE);
    parser[HTTPParser.kOnHeadersComplete] = ({ versionMinor, headers, statusCode: status, shouldKeepAlive }) => {
      if (status >= 100 && status < 200) {
        this.interim = true;
        return 1;
      }
      const bodiless = this.current?.head({ status, headers }) ?? false;
      // http-parser-js keeps a connection only for an answer with a length; one with no body
      // (HEAD, 204, 304) is kept too when HTTP/1.1 does not say close.
      const kept = shouldKeepAlive || (bodiless && versionMinor >= 1 && !closes(headers));
      this.idleMs = kept ? idleTimeoutMs(headers) : undefined;
      return bodiless ? 1 : 0;
    };
    parser[HTTPParser.kOnBody] = (chunk: Buffer, offset: number, length: number) => {
      this.current?.body(offset === 0 && length === chunk.length ? chunk : chunk.subarray(offset, offset + length));
    };
    parser[HTTPParser.kOnMessageComplete] = () => {
      if (this.interim) {
        this.interim = false;
        return;
      }
      this.current?.done();
    };
    // An answer that cannot be parsed, or whose head() throws (the library rethrows what its
    // callbacks throw), fails its exchange: never an exception in this listener, which would end the process.
    socket.on("data", (chunk: Buffer) => {
      let parsed: number | Error;
      try {
        parsed = parser.execute(chunk);
      } catch (err) {
        parsed = err instanceof Error ? err : new Error(String(err));
      }
      if (parsed instanceof Error) {
        this.bad = parsed;
        socket.destroy();
      }
    });
    // The owner closed its side: an answer read until the close (no length) ends here.
    socket.on("end", () => {
      if (this.current) {
        // An answer cut short is the owner's failure (finish() says so, as the close does); only what head() or the body throws is the answer's.
        try {
          parser.finish();
        } catch (err) {
          this.bad = err instanceof Error ? err : new Error(String(err));
        }
      }
      socket.destroy();
    });
    // Reported by `close`, which follows.
    socket.on("error", () => {});
    socket.on("close", () => {
      const exchange = this.current;
      this.current = undefined;
      exchange?.fail(this.bad);
    });
    // The idle time ran out (set when it was last kept): closed if still idle.
    socket.on("timeout", () => {
      if (this.current === undefined) socket.destroy();
    });
  }
}

export class OwnerLines {
  /** Idle connections per `host:port`, the last one freed at the end. */
  private readonly idle = new Map<string, OwnerLine[]>();
  private readonly open = new Set<net.Socket>();

  /** A connection to `host:port` for `exchange`: an idle one, else a new one. */
  take(host: string, port: number, exchange: Exchange): OwnerLine {
    const key = `${host}:${port}`;
    const list = this.idle.get(key);
    let line: OwnerLine | undefined;
    while (list && list.length > 0) {
      const l = list.pop() as OwnerLine;
      // One the owner has begun to close (its FIN read, not yet gone from the list) is passed over.
      if (!l.socket.destroyed && l.socket.writable) {
        line = l;
        break;
      }
    }
    if (line) line.socket.ref();
    else line = this.connect(key, host, port);
    line.current = exchange;
    return line;
  }

  private connect(key: string, host: string, port: number): OwnerLine {
    // Nagle off: a request's head and body go out as written, never held for the previous one's ACK.
    const socket = net.connect({ host, port, noDelay: true, keepAlive: true, keepAliveInitialDelay: TCP_KEEPALIVE_MS });
    const line = new OwnerLine(socket, key);
    this.open.add(socket);
    socket.on("close", () => {
      this.open.delete(socket);
      const list = this.idle.get(key);
      const at = list?.indexOf(line) ?? -1;
      if (list && at >= 0) list.splice(at, 1);
    });
    return line;
  }

  /** The exchange on `line` has ended: kept for the next one when its answer allows, else closed. `whole`: the request was sent whole. */
  give(line: OwnerLine, whole: boolean): void {
    line.current = undefined;
    const { socket, idleMs } = line;
    if (!whole || idleMs === undefined || socket.destroyed || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.unref();
    if (socket.timeout !== idleMs) socket.setTimeout(idleMs);
    let list = this.idle.get(line.key);
    if (!list) {
      list = [];
      this.idle.set(line.key, list);
    }
    list.push(line);
  }

  destroy(): void {
    for (const socket of this.open) socket.destroy();
    this.idle.clear();
  }
}
