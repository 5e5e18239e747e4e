// A hostile HTTP server for tests: raw TCP on 127.0.0.1 that reads each request's head (and its
// body, by Content-Length or to the end of its chunks) and then answers with whatever bytes the
// test picks, however malformed: bad status lines, any byte in a header, bad chunking, a close
// mid-answer, a huge head, a slow drip. `hostileAnswers()` is the catalogue the fuzz tests run.
import net from "node:net";

/** What is done with one request's connection once its request is read. */
export type Answer = (sock: net.Socket) => void;

export interface RequestSeen {
  head: string;
  body: Buffer;
}

export interface HostileServer {
  port: number;
  /** Requests read so far. */
  requests: RequestSeen[];
  /** Picks the answer for each request (by default the last one set with `answer`). */
  pick: (req: RequestSeen, n: number) => Answer;
  close(): Promise<void>;
}

const HEAD_END = Buffer.from("\r\n\r\n");

/** Whether `buf` (after the head) holds the whole body the head announced. */
function bodyDone(head: string, buf: Buffer): number | undefined {
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) return buf.length >= Number(length[1]) ? Number(length[1]) : undefined;
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    // The last chunk ("0", perhaps with extensions), then trailers (aws-chunked has some), then an empty line.
    const last = buf.subarray(0, 1).toString() === "0" ? 0 : buf.indexOf("\r\n0");
    if (last < 0) return undefined;
    const end = buf.indexOf("\r\n\r\n", last);
    return end >= 0 ? end + 4 : undefined;
  }
  return 0;
}

export async function startHostile(pick: (req: RequestSeen, n: number) => Answer): Promise<HostileServer> {
  const sockets = new Set<net.Socket>();
  const server: HostileServer = {
    port: 0,
    requests: [],
    pick,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        srv.close(() => resolve());
      }),
  };
  const srv = net.createServer((sock) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    sock.on("error", () => {});
    let buf = Buffer.alloc(0);
    let head: string | undefined;
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (head === undefined) {
        const at = buf.indexOf(HEAD_END);
        if (at < 0) return;
        head = buf.subarray(0, at).toString("latin1");
        buf = buf.subarray(at + 4);
      }
      const used = bodyDone(head, buf);
      if (used === undefined) return;
      sock.off("data", onData);
      const req = { head, body: buf.subarray(0, used) };
      server.requests.push(req);
      server.pick(req, server.requests.length)(sock);
    };
    sock.on("data", onData);
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  server.port = (srv.address() as net.AddressInfo).port;
  return server;
}

/** Writes `bytes` and closes. */
export const raw =
  (bytes: string | Buffer): Answer =>
  (sock) =>
    sock.end(typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes);

/** Writes `bytes` `every` ms in pieces of `size`, then closes (a slow drip). */
export const drip =
  (bytes: string | Buffer, every: number, size = 1): Answer =>
  (sock) => {
    const all = typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes;
    let off = 0;
    const timer = setInterval(() => {
      if (sock.destroyed || off >= all.length) {
        clearInterval(timer);
        sock.end();
        return;
      }
      sock.write(all.subarray(off, off + size));
      off += size;
    }, every);
    sock.on("close", () => clearInterval(timer));
  };

/** Resets the connection at once. */
export const reset: Answer = (sock) => sock.resetAndDestroy();

/** A well-formed answer: `status`, `headers`, `body` (Content-Length set), then the connection closes. */
export function answer(status: string, headers: string[], body: string | Buffer = ""): Buffer {
  const b = typeof body === "string" ? Buffer.from(body) : body;
  const head = [`HTTP/1.1 ${status}`, ...headers, `content-length: ${b.length}`, "connection: close", "", ""].join("\r\n");
  return Buffer.concat([Buffer.from(head, "latin1"), b]);
}

export interface Hostile {
  name: string;
  answer: Answer;
  /** The answer is well formed but for one byte somewhere a parser may or may not take (a 2xx may then be fine). */
  mayPass?: boolean;
  /** The upstream's own 4xx: a gateway passes it on as such. */
  refusal?: boolean;
}

/**
 * Malformed answers around a good one (`status`, `type`, `body`): every status line, head, chunking
 * and timing fault the fuzz tests send to each path; with `bytes`, one answer per byte value in a
 * header's name and one in its value (512).
 */
export function hostileAnswers(good: { status?: string; type: string; body: string }, opts: { bytes?: boolean } = {}): Hostile[] {
  const ok = good.status ?? "200 OK";
  const type = `content-type: ${good.type}`;
  const body = good.body;
  const out: Hostile[] = [
    { name: "status 000", answer: raw(answer("000 OK", [type], body)) },
    { name: "status 099", answer: raw(answer("099 Low", [type], body)) },
    { name: "status 1000", answer: raw(answer("1000 High", [type], body)) },
    { name: "status 600", answer: raw(answer("600 Odd", [type], body)) },
    { name: "status 999", answer: raw(answer("999 Odd", [type], body)) },
    {
      name: "status 101 without upgrade",
      answer: raw("HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\nhello"),
    },
    { name: "status 103 then close", answer: raw("HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n") },
    { name: "status 302", answer: raw(answer("302 Found", ["location: http://10.0.0.1:1/\u0000", type], body)) },
    { name: "status 304 with a body", answer: raw(answer("304 Not Modified", [type], body)) },
    { name: "status 429 with odd retry-after", answer: raw(answer("429 Slow", ["retry-after: 1\x7f2", type], "{}")), refusal: true },
    {
      name: "status 400 huge error",
      answer: raw(answer("400 Bad", [type], `{"error":{"message":"${"m".repeat(300_000)}","code":"${"c".repeat(5000)}"}}`)),
      refusal: true,
    },
    { name: "status 400 not JSON", answer: raw(answer("400 Bad", ["content-type: text/plain"], "\u0000\u00ff plain")), refusal: true },
    { name: "status 500 as JSON null", answer: raw(answer("500 Err", [type], "null")) },
    // Node's parser takes any byte in a reason phrase: only a path that passes the phrase on is at risk.
    { name: "reason with NUL", answer: raw(answer(`${ok.slice(0, 3)} O\u0000K`, [type], body)), mayPass: true },
    { name: "reason with 0xff", answer: raw(answer(`${ok.slice(0, 3)} O\u00ffK`, [type], body)), mayPass: true },
    { name: "no status line", answer: raw(`garbage\r\n${type}\r\n\r\n${body}`) },
    { name: "HTTP/9.9", answer: raw(`HTTP/9.9 200 OK\r\n${type}\r\n\r\n${body}`) },
    { name: "empty answer", answer: raw("") },
    { name: "reset", answer: reset },
    { name: "half a head then close", answer: raw(`HTTP/1.1 ${ok}\r\ncontent-ty`) },
    { name: "head then close", answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\ncontent-length: 100\r\n\r\n{"ch`) },
    { name: "header without colon", answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\nnocolon\r\ncontent-length: 2\r\n\r\n{}`) },
    { name: "two content-lengths", answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\ncontent-length: 2\r\ncontent-length: 5\r\n\r\n{}`) },
    { name: "negative content-length", answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\ncontent-length: -1\r\n\r\n{}`) },
    { name: "chunked bad size", answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`) },
    {
      name: "chunked huge size",
      answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\ntransfer-encoding: chunked\r\n\r\nffffffffffffffff\r\n{}\r\n0\r\n\r\n`),
    },
    { name: "chunked without end", answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n`) },
    {
      name: "chunked and content-length",
      answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n2\r\n{}\r\n0\r\n\r\n`),
    },
    { name: "huge head", answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\nx-big: ${"a".repeat(200_000)}\r\ncontent-length: 2\r\n\r\n{}`) },
    { name: "many headers", answer: raw(`HTTP/1.1 ${ok}\r\n${type}\r\n${"x-h: 1\r\n".repeat(5000)}content-length: 2\r\n\r\n{}`) },
    { name: "slow drip of the head", answer: drip(answer(ok, [type], body), 200) },
    {
      name: "slow drip of the body, then close",
      answer: (sock) => {
        sock.write(`HTTP/1.1 ${ok}\r\n${type}\r\ncontent-length: ${body.length + 40}\r\n\r\n`);
        drip(" ".repeat(30), 50)(sock);
      },
    },
  ];
  if (opts.bytes)
    for (let b = 0; b < 256; b++) {
      const c = String.fromCharCode(b);
      out.push({ name: `header name byte 0x${b.toString(16)}`, answer: raw(answer(ok, [type, `x-a${c}b: v`], body)), mayPass: true });
      out.push({ name: `header value byte 0x${b.toString(16)}`, answer: raw(answer(ok, [type, `x-a: v${c}w`], body)), mayPass: true });
    }
  return out;
}
