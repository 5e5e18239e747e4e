// A streaming multipart/form-data client (node:http): text fields and one file part whose bytes
// come from a generator, written as the socket takes them, so that uploads of any size hold
// little memory on the client; optionally cut off after some bytes (the socket is destroyed), or
// held after some bytes until the test lets it go on.
import crypto from "node:crypto";
import http from "node:http";

export interface MultipartUpload {
  port: number;
  path: string;
  key: string;
  /** Text fields sent before the file part. */
  before?: Record<string, string>;
  /** Text fields sent after the file part. */
  after?: Record<string, string>;
  /** The file part: its field name (default "file"), filename, and the bytes as chunks. */
  file?: { field?: string; filename: string; size: number; chunks: Iterable<Buffer> };
  /** Destroy the socket once this many bytes of the file have been written. */
  cutAfter?: number;
  /** Stop sending once `after` bytes of the file have been written, until `until` settles (then send the rest). */
  hold?: { after: number; until: Promise<unknown> };
}

const BOUNDARY = "----agentbox-multipart-boundary";

function field(name: string, value: string): string {
  return `--${BOUNDARY}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
}

/** `size` bytes as 1 MiB chunks of a pseudo-random pattern (a counter stamped on a random block). */
export function* patternChunks(size: number, seed: Buffer = crypto.randomBytes(2 ** 20)): Generator<Buffer> {
  let left = size;
  for (let i = 0; left > 0; i++) {
    const chunk = Buffer.from(seed.subarray(0, Math.min(left, seed.length)));
    if (chunk.length >= 4) chunk.writeUInt32BE(i >>> 0, 0);
    left -= chunk.length;
    yield chunk;
  }
}

/** The sha256 (hex) of what patternChunks yields for the same seed. */
export function patternSha256(size: number, seed: Buffer): string {
  const h = crypto.createHash("sha256");
  for (const c of patternChunks(size, seed)) h.update(c);
  return h.digest("hex");
}

export function multipartUpload(up: MultipartUpload): Promise<{ status: number; body: unknown; headers: http.IncomingHttpHeaders }> {
  const head = Object.entries(up.before ?? {})
    .map(([k, v]) => field(k, v))
    .join("");
  const filePart = up.file
    ? `--${BOUNDARY}\r\ncontent-disposition: form-data; name="${up.file.field ?? "file"}"; filename="${up.file.filename}"\r\ncontent-type: application/octet-stream\r\n\r\n`
    : "";
  const tail = `${up.file ? "\r\n" : ""}${Object.entries(up.after ?? {})
    .map(([k, v]) => field(k, v))
    .join("")}--${BOUNDARY}--\r\n`;
  const headBuf = Buffer.from(head + filePart);
  const tailBuf = Buffer.from(tail);
  const length = headBuf.length + (up.file?.size ?? 0) + tailBuf.length;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: up.port,
        method: "POST",
        path: up.path,
        headers: {
          authorization: `Bearer ${up.key}`,
          "content-type": `multipart/form-data; boundary=${BOUNDARY}`,
          "content-length": String(length),
        },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () => {
          const text = Buffer.concat(parts).toString("utf8");
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.write(headBuf);
    const chunks = up.file?.chunks[Symbol.iterator]();
    let sent = 0;
    let held = false;
    const pump = () => {
      for (;;) {
        const next = chunks?.next();
        if (!next || next.done) {
          req.end(tailBuf);
          return;
        }
        sent += next.value.length;
        const more = req.write(next.value);
        if (up.cutAfter !== undefined && sent >= up.cutAfter) {
          // Cut off: the server sees the connection go away mid-body.
          setTimeout(() => {
            req.destroy();
            reject(new Error("cut off"));
          }, 50);
          return;
        }
        if (up.hold && !held && sent >= up.hold.after) {
          held = true;
          // The socket's buffer may have drained while held: wait for "drain" only if it still needs one.
          const resume = () => (req.writableNeedDrain ? req.once("drain", pump) : pump());
          up.hold.until.then(resume, resume);
          return;
        }
        if (!more) return void req.once("drain", pump);
      }
    };
    pump();
  });
}
