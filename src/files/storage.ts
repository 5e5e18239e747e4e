// Where stored files' bytes live: the FileStorage interface, and the local-disk backend (the
// default). An object becomes visible under its key only once it is completely and durably
// written; a write that fails or is cut off leaves nothing behind.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ApiError } from "../errors.js";

/** Inclusive byte range, as in an HTTP Range header. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface FileStorage {
  /** Prepares the backend and removes what an interrupted earlier run left half-written. */
  init(): Promise<void>;
  /**
   * Stores everything `source` yields under `key`, atomically: the object exists afterwards only
   * if this resolves. If `source` errors, the write is abandoned and the error rethrown.
   */
  put(key: string, source: Readable): Promise<void>;
  /** The object's bytes (a range of them), streamed. */
  open(key: string, range?: ByteRange): Promise<Readable>;
  /** Deletes the object; a missing one is not an error. */
  remove(key: string): Promise<void>;
  /**
   * Every key stored (for sweeping objects no record points to); a store shared by a cluster's
   * nodes yields only those too old to be another node's write in progress.
   */
  keys(): AsyncIterable<string>;
}

/**
 * Objects as files under `<dir>/objects/<2 chars>/<key>`. A write goes to `<dir>/tmp/` first, is
 * fsynced, then renamed into place (and the directory fsynced), so a crash leaves either the whole
 * object or a temporary file that init() removes.
 */
export class LocalStorage implements FileStorage {
  private readonly objects: string;
  private readonly tmp: string;

  constructor(dir: string) {
    this.objects = path.join(dir, "objects");
    this.tmp = path.join(dir, "tmp");
  }

  async init(): Promise<void> {
    await fs.promises.rm(this.tmp, { recursive: true, force: true });
    await fs.promises.mkdir(this.tmp, { recursive: true, mode: 0o700 });
    await fs.promises.mkdir(this.objects, { recursive: true, mode: 0o700 });
  }

  private file(key: string): string {
    if (!/^[A-Za-z0-9_-]{4,128}$/.test(key)) throw new Error(`bad storage key '${key}'`);
    return path.join(this.objects, key.slice(-2), key);
  }

  async put(key: string, source: Readable): Promise<void> {
    const target = this.file(key);
    const tmp = path.join(this.tmp, randomUUID());
    try {
      await pipeline(source, fs.createWriteStream(tmp, { flags: "wx", mode: 0o600 }));
      const handle = await fs.promises.open(tmp, "r");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      await fs.promises.rename(tmp, target);
      await syncDir(path.dirname(target));
    } catch (err) {
      source.destroy();
      await fs.promises.rm(tmp, { force: true });
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOSPC" || code === "EDQUOT") {
        throw new ApiError(
          "insufficient_storage",
          "The service's file storage is full; nothing of this file was kept. Retry later or delete files",
        );
      }
      throw err;
    }
  }

  async open(key: string, range?: ByteRange): Promise<Readable> {
    const file = this.file(key);
    // Opened before the stream is returned, so that a missing object is an error here, not mid-response.
    const handle = await fs.promises.open(file, "r");
    return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async remove(key: string): Promise<void> {
    await fs.promises.rm(this.file(key), { force: true });
  }

  async *keys(): AsyncIterable<string> {
    for (const shard of await fs.promises.readdir(this.objects)) {
      for (const name of await fs.promises.readdir(path.join(this.objects, shard)).catch(() => [])) yield name;
    }
  }
}

/** Makes a rename in `dir` durable. */
async function syncDir(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
