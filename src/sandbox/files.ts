// File operations on a sandbox, as the supervisor does them inside its own view of the filesystem
// (runtime/agentbox_rt/files.py): paths resolve in the sandbox, `../../etc/passwd` or a symlink
// to /etc reach the sandbox's tiny /etc, /proc is refused. Bytes travel through the channel in
// chunks of FILE_CHUNK with at most a few chunks in flight (DOWNLOAD_WINDOW, UPLOAD_WINDOW), so a transfer of any
// size holds a bounded amount of the service's memory and waits on the slower side.
import { Readable } from "node:stream";
import { ApiError, invalid } from "../errors.js";
import type { Box } from "./box.js";
import { FILE_CHUNK, type FileEntry, type FileEvent, type Reply, type Request } from "./protocol.js";

export type { FileEntry };

/** Uploaded chunks awaiting their acknowledgement at most (each FILE_CHUNK bytes). */
const UPLOAD_WINDOW = 4;
/** Download chunks asked for ahead of the consumer at most. */
const DOWNLOAD_WINDOW = 4;

/** A `file` answer with status ok, or the API error its refusal means. */
function accepted(reply: Reply, path: string): FileEvent {
  if (reply.ev === "gone") {
    throw new ApiError(
      "invalid_state",
      "The sandbox's processes ended during the file operation; it was restarted (files are kept), retry",
    );
  }
  if (reply.ev !== "file") throw new ApiError("internal_error", `Unexpected answer from the sandbox (${reply.ev})`);
  const where = reply.path ?? path;
  switch (reply.status) {
    case "ok":
      return reply;
    case "not_found":
      throw new ApiError("file_not_found", `File '${where}' was not found`);
    case "is_dir":
      throw new ApiError("file_not_found", `'${where}' is a directory, not a file`);
    case "too_large":
      throw new ApiError("payload_too_large", `'${where}' is ${reply.size} bytes, more than this operation returns`);
    case "no_space":
      throw new ApiError("payload_too_large", `Not enough space in the sandbox to write '${where}'`);
    default:
      throw invalid(reply.message ?? `The file operation on '${where}' failed`);
  }
}

function checkPath(path: string): void {
  if (path.includes("\0")) throw invalid("'path' must not contain NUL bytes");
}

async function fileOp(box: Box, req: Extract<Request, { op: "file" }>): Promise<FileEvent> {
  checkPath(req.path);
  return accepted(await box.request(req), req.path);
}

/** Entries of a directory, sorted by name, the first `limit`; symlinks are listed, not followed. */
export async function listDir(box: Box, path: string, limit: number): Promise<FileEntry[]> {
  return (await fileOp(box, { op: "file", action: "list", path, limit })).files ?? [];
}

/** Deletes a file, a symlink (never what it points to) or a directory with its contents; answers the resolved path. */
export async function removePath(box: Box, path: string): Promise<string> {
  // A large tree can take a while to remove: a longer deadline than a plain request.
  checkPath(path);
  return accepted(await box.request({ op: "file", action: "delete", path }, undefined, { timeoutMs: 60_000 }), path).path ?? path;
}

/** Creates a directory and its parents; answers the resolved path. */
export async function makeDir(box: Box, path: string): Promise<string> {
  return (await fileOp(box, { op: "file", action: "mkdir", path })).path ?? path;
}

/** Whether `path` exists in the sandbox and is a directory. */
export async function statPath(box: Box, path: string): Promise<{ path: string; exists: boolean; isDir: boolean }> {
  const r = await fileOp(box, { op: "file", action: "stat", path });
  return { path: r.path ?? path, exists: r.exists === true, isDir: r.is_dir === true };
}

export interface Download {
  /** The file's path as resolved in the sandbox. */
  path: string;
  size: number;
  /** The bytes, read chunk by chunk as the consumer takes them; destroying it closes the file. */
  stream: Readable;
}

/**
 * Opens a regular file for reading (at most `limit` bytes, payload_too_large beyond) and streams
 * it: the next chunk is asked for only when the consumer wants more. Exactly `size` bytes come out
 * (the size when it was opened); a file that shrank meanwhile ends the stream with an error.
 */
export async function download(box: Box, path: string, limit: number): Promise<Download> {
  checkPath(path);
  const opened = accepted(await box.request({ op: "open_read", path, limit }), path);
  const handle = opened.handle ?? -1;
  const size = opened.size ?? 0;
  let left = size;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    box.request({ op: "close", handle }).catch(() => {});
  };
  // Up to DOWNLOAD_WINDOW chunks are asked for ahead of the consumer: the next one is on its way
  // while the last one is written out. Answers come back in the order asked (one pipe, one supervisor).
  let asked = 0;
  let inflight = 0;
  let failed = false;
  const stream = new Readable({
    highWaterMark: FILE_CHUNK,
    read() {
      if (closed) return;
      if (size === 0) {
        close();
        this.push(null);
        return;
      }
      while (inflight < DOWNLOAD_WINDOW && asked < size) {
        const max = Math.min(FILE_CHUNK, size - asked);
        asked += max;
        inflight += 1;
        box.request({ op: "read_chunk", handle, max }).then(
          (reply) => {
            inflight -= 1;
            if (failed || this.destroyed) return;
            if (reply.ev !== "chunk" || reply.size !== max) {
              failed = true;
              const why =
                reply.ev === "chunk"
                  ? `'${opened.path ?? path}' became shorter while it was read`
                  : reply.ev === "file"
                    ? (reply.message ?? `read failed (${reply.status})`)
                    : `read failed (${reply.ev})`;
              this.destroy(new Error(why));
              return;
            }
            left -= max;
            let more = true;
            for (const part of reply.parts) more = this.push(part);
            if (left <= 0) {
              close();
              this.push(null);
            } else if (more) {
              this.read(0);
            }
          },
          (err: Error) => {
            inflight -= 1;
            failed = true;
            this.destroy(err);
          },
        );
      }
    },
    destroy(err, callback) {
      close();
      callback(err);
    },
  });
  return { path: opened.path ?? path, size, stream };
}

/** A whole file of at most `limit` bytes (files/read), through the same chunked path as a download. */
export async function readFile(box: Box, path: string, limit: number): Promise<{ path: string; data: Buffer }> {
  const d = await download(box, path, limit);
  const parts: Buffer[] = [];
  for await (const chunk of d.stream) parts.push(chunk as Buffer);
  return { path: d.path, data: Buffer.concat(parts) };
}

/**
 * An upload being received: its bytes go into a temporary file in the sandbox (next to the target
 * when it is known, else in /home/user), which commit() moves to its place and abort() removes.
 */
export class Upload {
  size = 0;
  private done = false;
  /** The chunk being filled: bytes are copied in at once, as a source may reuse its buffers (a multipart parser does). */
  private buf: Buffer = Buffer.allocUnsafe(FILE_CHUNK);
  private fill = 0;
  /** Chunk buffers the sandbox has acknowledged, for reuse: an upload allocates UPLOAD_WINDOW + 1 of them, not one per MiB. */
  private readonly spare: Buffer[] = [];
  private readonly inflight: Promise<void>[] = [];

  private constructor(
    private readonly box: Box,
    private readonly handle: number,
    /** The target as far as it is known, for messages. */
    private label: string,
  ) {}

  /** Starts an upload; `near` (the target, if known) lets the temporary file be created next to it. */
  static async open(box: Box, near?: string): Promise<Upload> {
    if (near !== undefined) checkPath(near);
    const reply = accepted(await box.request({ op: "open_write", path: near }), near ?? "");
    return new Upload(box, reply.handle ?? -1, near ?? "");
  }

  /** Appends bytes; waits while UPLOAD_WINDOW chunks are unacknowledged (back-pressure to the sender). */
  async write(data: Buffer): Promise<void> {
    let off = 0;
    while (off < data.length) {
      const n = data.copy(this.buf, this.fill, off);
      this.fill += n;
      off += n;
      this.size += n;
      if (this.fill === FILE_CHUNK) await this.flush();
    }
  }

  /** Writes everything from `source` (e.g. a multipart file part) chunk by chunk. */
  async pump(source: AsyncIterable<Buffer>): Promise<void> {
    for await (const chunk of source) await this.write(chunk);
  }

  private async flush(): Promise<void> {
    const owned = this.buf;
    const chunk = owned.subarray(0, this.fill);
    this.buf = this.spare.pop() ?? Buffer.allocUnsafe(FILE_CHUNK);
    this.fill = 0;
    const ack = this.box.request({ op: "write_chunk", handle: this.handle }, chunk).then((reply) => {
      if (reply.ev !== "ok") accepted(reply, this.label);
      // Acknowledged: the sandbox has read every byte of it, so the buffer is free again.
      this.spare.push(owned);
    });
    ack.catch(() => {});
    this.inflight.push(ack);
    if (this.inflight.length >= UPLOAD_WINDOW) await this.inflight.shift();
  }

  /** Writes what is left, then moves the file to `path` (or into it under `defaultName` when it is a directory). */
  async commit(path: string, defaultName?: string): Promise<{ path: string; size: number }> {
    checkPath(path);
    this.label = path;
    try {
      if (this.fill > 0) await this.flush();
      while (this.inflight.length) await this.inflight.shift();
      const reply = accepted(await this.box.request({ op: "commit", handle: this.handle, path, default_name: defaultName }), path);
      this.done = true;
      return { path: reply.path ?? path, size: this.size };
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** Drops the upload and its temporary file. Never throws. */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.fill = 0;
    await Promise.allSettled(this.inflight);
    await this.box.request({ op: "close", handle: this.handle }).catch(() => {});
  }
}

/** Creates or replaces a file with `data` (files/write): written in chunks, moved into place at the end. */
export async function writeFile(box: Box, path: string, data: Buffer): Promise<{ path: string; size: number }> {
  const up = await Upload.open(box, path);
  try {
    await up.write(data);
  } catch (err) {
    await up.abort();
    throw err;
  }
  return up.commit(path);
}
