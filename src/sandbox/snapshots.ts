// Snapshot archives on the host: a tar of a sandbox's /home/user, made INSIDE the sandbox by its
// supervisor (runtime/archive_tool.py, as the sandbox user: no path of the untrusted workspace is
// ever resolved on the host) and streamed out over the channel in 1 MiB chunks into a temporary
// file, fsynced, renamed into place and read back to check its SHA-256. Restoring streams the file
// back into a sandbox, which unpacks it with every member checked (no absolute paths, no `..`, no
// devices, nothing below a symlink). A failure at any step removes what was written.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { ApiError } from "../errors.js";
import type { ArchiveEvent } from "./archive-protocol.js";
import type { Box } from "./box.js";
import { FILE_CHUNK, type Reply } from "./protocol.js";

/** A finished archive: what a snapshot record keeps of it. */
export interface ArchiveInfo {
  sizeBytes: number;
  files: number;
  sha256: string;
}

/** Reading or unpacking can wait on a large directory walk or a slow disk: longer than a plain request. */
const ARCHIVE_STEP_MS = 120_000;

/** The `archive` answer when it is a success; otherwise the API error its status means. */
function accepted(reply: Reply, what: string): ArchiveEvent {
  if (reply.ev === "gone") throw new ApiError("invalid_state", `The sandbox's processes ended during the ${what}`);
  if (reply.ev !== "archive") throw new ApiError("internal_error", `Unexpected answer from the sandbox during the ${what} (${reply.ev})`);
  const why = reply.message ?? `the ${what} failed`;
  switch (reply.status) {
    case "ok":
      return reply;
    case "too_large":
      throw new ApiError("payload_too_large", `The ${what} failed: ${why}`);
    case "changed":
      throw new ApiError("conflict", `The ${what} failed: ${why}; retry`);
    case "no_space":
      throw new ApiError("insufficient_storage", `The ${what} failed: no space left in the sandbox (${why})`);
    case "busy":
      throw new ApiError("conflict", `The ${what} failed: ${why}; retry`);
    default:
      throw new ApiError("internal_error", `The ${what} failed: ${why}`);
  }
}

/** What a failed host-side write means for the caller (a full disk is the operator's to fix, said so). */
function hostError(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOSPC" || code === "EDQUOT") {
    return new ApiError("insufficient_storage", "The snapshot could not be written: the service's snapshot disk is full");
  }
  return err;
}

async function sha256File(file: string): Promise<string> {
  const hash = crypto.createHash("sha256");
  for await (const chunk of fs.createReadStream(file, { highWaterMark: FILE_CHUNK })) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/**
 * `source`'s bytes in chunks of FILE_CHUNK (the last one shorter): an object store's answer comes
 * in pieces of a few KiB, each of which would otherwise be a round trip to the sandbox.
 */
async function* inChunks(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let held = 0;
  for await (const piece of source) {
    if (held === 0 && piece.length === FILE_CHUNK) {
      yield piece; // a local file's chunk, as it is
      continue;
    }
    parts.push(piece);
    held += piece.length;
    while (held >= FILE_CHUNK) {
      const all = Buffer.concat(parts, held);
      yield all.subarray(0, FILE_CHUNK);
      parts = [all.subarray(FILE_CHUNK)];
      held -= FILE_CHUNK;
    }
  }
  if (held > 0) yield Buffer.concat(parts, held);
}

async function writeAll(fh: fs.promises.FileHandle, data: Buffer): Promise<void> {
  for (let off = 0; off < data.length; ) off += (await fh.write(data, off, data.length - off)).bytesWritten;
}

export class SnapshotFiles {
  constructor(
    readonly dir: string,
    readonly maxBytes: number,
  ) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    // Temporary files of snapshots a crash interrupted: never a snapshot (no record points to them).
    for (const name of fs.readdirSync(dir)) if (name.endsWith(".tmp")) fs.rmSync(path.join(dir, name), { force: true });
  }

  /** Removes every archive whose id `keep` does not want (at start-up, before anything is written). */
  async sweep(keep: (id: string) => Promise<boolean>): Promise<void> {
    for (const name of fs.readdirSync(this.dir)) {
      if (name.endsWith(".tar") && !(await keep(name.slice(0, -4)))) fs.rmSync(path.join(this.dir, name), { force: true });
    }
  }

  pathOf(id: string): string {
    return path.join(this.dir, `${id}.tar`);
  }

  /**
   * Archives the sandbox's /home/user into the snapshot file `id`: complete, on disk (fsynced) and
   * verified when this returns; nothing at all (no file, no temporary) when it throws. `received`
   * is told the archive's size so far before each chunk is written, and may refuse it by throwing
   * (the tenant's storage quota).
   */
  async write(box: Box, id: string, received: (bytes: number) => void = () => {}): Promise<ArchiveInfo> {
    const tmp = path.join(this.dir, `.${id}.tar.tmp`);
    const final = this.pathOf(id);
    const hash = crypto.createHash("sha256");
    let size = 0;
    let handle: number | undefined;
    let renamed = false;
    const fh = await fs.promises.open(tmp, "wx", 0o600);
    let open = true;
    try {
      handle = accepted(await box.request({ op: "archive_create", limit: this.maxBytes }), "snapshot").handle ?? -1;
      let files = 0;
      const read = (h: number) =>
        box.request({ op: "archive_read", handle: h, max: FILE_CHUNK }, undefined, { timeoutMs: ARCHIVE_STEP_MS });
      let next = read(handle);
      for (;;) {
        const reply = await next;
        if (reply.ev === "chunk") {
          // The next chunk is asked for before this one is written out: the sandbox fills it meanwhile.
          // (A read still pending when the archive is closed is answered by the close.)
          next = read(handle);
          next.catch(() => {});
          size += reply.size;
          if (size > this.maxBytes) {
            throw new ApiError("payload_too_large", `The snapshot failed: it is larger than the limit of ${this.maxBytes} bytes`);
          }
          received(size);
          for (const part of reply.parts) {
            hash.update(part);
            await writeAll(fh, part);
          }
          continue;
        }
        files = accepted(reply, "snapshot").files ?? 0;
        handle = undefined;
        break;
      }
      const sha256 = hash.digest("hex");
      await fh.sync();
      open = false;
      await fh.close();
      await fs.promises.rename(tmp, final);
      renamed = true;
      const dir = await fs.promises.open(this.dir, "r");
      await dir.sync().finally(() => dir.close());
      // Read back: what is on disk is what the sandbox sent.
      if ((await sha256File(final)) !== sha256)
        throw new ApiError("internal_error", "The snapshot failed: it read back differently than written");
      return { sizeBytes: size, files, sha256 };
    } catch (err) {
      if (open) await fh.close().catch(() => {});
      if (handle !== undefined) await box.request({ op: "archive_close", handle }).catch(() => {});
      await fs.promises.rm(tmp, { force: true });
      if (renamed) await fs.promises.rm(final, { force: true });
      throw hostError(err);
    }
  }

  /**
   * Unpacks the archive `file` into the sandbox's /home/user; the bytes sent are checked against
   * `sha256` (a file changed on disk since it was written is refused). Returns the entries unpacked.
   */
  restore(box: Box, file: string, sha256: string): Promise<number> {
    return this.restoreFrom(box, fs.createReadStream(file, { highWaterMark: FILE_CHUNK }), sha256);
  }

  /** As restore(), from an archive's bytes however they come (a file, an object store's answer); `source` is closed after. */
  async restoreFrom(box: Box, source: Readable, sha256: string): Promise<number> {
    const hash = crypto.createHash("sha256");
    let handle: number;
    try {
      handle = accepted(await box.request({ op: "archive_extract", limit: this.maxBytes }), "restore").handle ?? -1;
    } catch (err) {
      source.destroy();
      throw err;
    }
    let done = false;
    try {
      for await (const data of inChunks(source)) {
        hash.update(data);
        const reply = await box.request({ op: "archive_write", handle }, data, { timeoutMs: ARCHIVE_STEP_MS });
        if (reply.ev !== "ok") {
          done = true;
          accepted(reply, "restore");
          throw new ApiError("internal_error", "The restore failed: the sandbox stopped unpacking the snapshot");
        }
      }
      if (hash.digest("hex") !== sha256)
        throw new ApiError("internal_error", "The restore failed: the snapshot file does not match its checksum");
      const end = accepted(await box.request({ op: "archive_finish", handle }, undefined, { timeoutMs: ARCHIVE_STEP_MS }), "restore");
      done = true;
      return end.files ?? 0;
    } catch (err) {
      if (!done) await box.request({ op: "archive_close", handle }).catch(() => {});
      throw err;
    } finally {
      source.destroy();
    }
  }

  /** A second name for an archive (a snapshot of a sandbox whose processes were already ended into one). */
  async link(fromId: string, toId: string): Promise<void> {
    await fs.promises.link(this.pathOf(fromId), this.pathOf(toId));
  }

  async remove(id: string): Promise<void> {
    await fs.promises.rm(this.pathOf(id), { force: true });
  }
}
