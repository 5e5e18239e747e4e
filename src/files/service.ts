// Stored files (/v1/files): receiving uploads as streams (checksummed, size-checked and reserved
// against the tenant's storage quota as the bytes arrive), the records, reads with ranges, deletion, the expiry reaper, and copying
// files into and out of sandboxes. Knows nothing of HTTP; the storage backend is behind FileStorage.
import crypto from "node:crypto";
import { type Readable, Transform, type TransformCallback } from "node:stream";
import type { Logger } from "pino";
import { ApiError, invalid } from "../errors.js";
import type { Box } from "../sandbox/box.js";
import { download, Upload } from "../sandbox/files.js";
import type { FileListQuery, FileRecord, FileStore } from "./store.js";
import type { FilesConfig } from "./settings.js";
import type { Reservation, StorageQuota } from "./quota.js";
import type { ByteRange, FileStorage } from "./storage.js";

export const PURPOSES = ["assistants", "batch", "batch_output", "fine-tune", "vision", "user_data", "evals"] as const;
export type Purpose = (typeof PURPOSES)[number];

const HOME = "/home/user";

export interface FileMeta {
  filename: string;
  purpose: string | undefined;
  /** Seconds from creation; undefined: never expires. */
  expiresAfterS?: number;
}

/** Bytes received into storage that no record points to yet (see receive/commit). */
export interface Staged {
  key: string;
  bytes: number;
  sha256: string;
  /** The bytes, held against the tenant's storage quota until commit() or discard(). */
  reservation: Reservation;
}

export interface FileServiceDeps {
  config: FilesConfig;
  store: FileStore;
  storage: FileStorage;
  /** The tenant's stored bytes (files and snapshots together) against its storage quota. */
  quota: StorageQuota;
  /** A live sandbox of the tenant (sandbox_not_found / invalid_state otherwise). */
  box(tenantId: string, sandboxId: string): Promise<Box>;
  log: Logger;
}

/** Counts and hashes what passes through; `check` may refuse the total so far (size limit, quota). */
class Meter extends Transform {
  bytes = 0;
  private readonly hash = crypto.createHash("sha256");

  constructor(private readonly check: (bytes: number) => void) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    try {
      this.check(this.bytes);
    } catch (err) {
      callback(err as Error);
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }

  digest(): string {
    return this.hash.digest("hex");
  }
}

/** A file name as stored: its last path component, without control characters, at most 255 characters. */
export function cleanFilename(name: string | undefined, fallback: string): string {
  const last = (name ?? "").split(/[/\\]/).pop() ?? "";
  const base = [...last].filter((c) => c.charCodeAt(0) > 0x1f && c !== "\x7f").join("");
  const cleaned = base === "." || base === ".." ? "" : base.slice(0, 255);
  return cleaned || fallback;
}

export class FileService {
  private readonly config: FilesConfig;
  private reaper: NodeJS.Timeout | undefined;
  private reaping = false;

  constructor(private readonly deps: FileServiceDeps) {
    this.config = deps.config;
  }

  /** Largest file one upload or export may store (AGENTBOX_MAX_FILE_BYTES). */
  get maxFileBytes(): number {
    return this.config.maxFileBytes;
  }

  /** Prepares storage, drops objects no record points to (a crash between storing and recording), starts the reaper. */
  async init(): Promise<void> {
    await this.deps.storage.init();
    let orphans = 0;
    for await (const key of this.deps.storage.keys()) {
      if (await this.deps.store.hasKey(key)) continue;
      await this.deps.storage.remove(key);
      orphans += 1;
    }
    if (orphans) this.deps.log.warn({ orphans }, "removed stored file objects without a record");
    if (this.reaper) clearInterval(this.reaper);
    this.reaper = setInterval(() => void this.reap(), this.config.reaperIntervalMs);
    this.reaper.unref();
  }

  close(): void {
    if (this.reaper) clearInterval(this.reaper);
  }

  /** Deletes expired files: the record first (so the file is gone for readers), then the bytes. */
  async reap(now = Date.now()): Promise<number> {
    if (this.reaping) return 0;
    this.reaping = true;
    let n = 0;
    try {
      for (;;) {
        const batch = await this.deps.store.expired(now, 100);
        for (const f of batch) {
          if (await this.deps.store.delete(f.id)) this.deps.quota.removed(f.tenantId, f.bytes);
          await this.deps.storage
            .remove(f.storageKey)
            .catch((err) => this.deps.log.error({ err, file_id: f.id }, "could not remove an expired file"));
          n += 1;
        }
        if (batch.length < 100) break;
      }
    } finally {
      this.reaping = false;
    }
    return n;
  }

  checkPurpose(purpose: string | undefined): Purpose {
    if (purpose === undefined || purpose === "") throw invalid(`'purpose' is required; one of ${PURPOSES.join(", ")}`);
    if (!(PURPOSES as readonly string[]).includes(purpose))
      throw invalid(`'purpose' must be one of ${PURPOSES.join(", ")}; got '${purpose.slice(0, 64)}'`);
    return purpose as Purpose;
  }

  /** Seconds from a form field or JSON value; 1 .. maxExpirySeconds. */
  parseExpiry(value: string | number): number {
    const n = typeof value === "number" ? value : /^-?\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
    if (!Number.isInteger(n) || n < 1 || n > this.config.maxExpirySeconds) {
      throw invalid(
        `'expires_after' must be a whole number of seconds from 1 to ${this.config.maxExpirySeconds}; got '${String(value).slice(0, 32)}'`,
      );
    }
    return n;
  }

  /** Refuses at once what cannot fit: too many files, or a known size over the limit or the quota. */
  async precheck(tenantId: string, knownBytes?: number): Promise<void> {
    await this.deps.quota.refresh(tenantId);
    const usage = await this.deps.store.usage(tenantId);
    if (usage.files >= this.config.maxFilesPerTenant) {
      throw new ApiError("quota_exceeded", `This tenant already holds ${usage.files} files, the most allowed; delete some first`);
    }
    if (knownBytes !== undefined) {
      if (knownBytes > this.config.maxFileBytes) throw this.tooLarge();
      this.deps.quota.check(tenantId, knownBytes);
    }
  }

  private tooLarge(): ApiError {
    return new ApiError("payload_too_large", `The file is larger than the limit of ${this.config.maxFileBytes} bytes per file`);
  }

  /**
   * Streams `source` into storage, checksumming it and refusing it as soon as it passes the size
   * limit or the tenant's quota. The bytes have no record yet: commit() or discard() must follow.
   * `signal` aborts the transfer (the client went away).
   */
  async receive(tenantId: string, source: Readable, signal?: AbortSignal): Promise<Staged> {
    await this.precheck(tenantId);
    const key = `file-${crypto.randomBytes(12).toString("hex")}`;
    // Every byte received is reserved against the quota as it arrives, next to what the tenant
    // holds and what its other writes in flight have received: uploads streaming at the same time
    // cannot together pass it (the one whose byte does not fit is refused, the others go on).
    const reservation = this.deps.quota.reserve(tenantId);
    const meter = new Meter((bytes) => {
      if (bytes > this.config.maxFileBytes) throw this.tooLarge();
      reservation.grow(bytes);
    });
    const onAbort = () => meter.destroy(new ApiError("invalid_request", "The upload was cut off before it ended"));
    signal?.addEventListener("abort", onAbort, { once: true });
    // Piped, not pipelined: a refused upload must not destroy the source (a multipart parser keeps
    // reading the rest of the body through it); the caller drains it.
    const onSourceError = (err: Error) => meter.destroy(err);
    source.once("error", onSourceError);
    source.pipe(meter);
    try {
      if (signal?.aborted) onAbort();
      await this.deps.storage.put(key, meter);
      return { key, bytes: meter.bytes, sha256: meter.digest(), reservation };
    } catch (err) {
      reservation.release();
      throw err;
    } finally {
      source.off("error", onSourceError);
      source.unpipe(meter);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Records staged bytes as a file object (their reservation becomes stored bytes); the bytes are removed if it fails. */
  async commit(tenantId: string, staged: Staged, meta: FileMeta): Promise<FileRecord> {
    try {
      const purpose = this.checkPurpose(meta.purpose);
      const now = Date.now();
      const record: FileRecord = {
        id: staged.key,
        tenantId,
        filename: meta.filename,
        purpose,
        bytes: staged.bytes,
        sha256: staged.sha256,
        storageKey: staged.key,
        createdAt: now,
        expiresAt: meta.expiresAfterS === undefined ? null : now + meta.expiresAfterS * 1000,
      };
      await staged.reservation.commit(() => this.deps.store.insert(record));
      return record;
    } catch (err) {
      await this.discard(staged);
      throw err;
    }
  }

  async discard(staged: Staged): Promise<void> {
    staged.reservation.release();
    await this.deps.storage
      .remove(staged.key)
      .catch((err) => this.deps.log.error({ err, key: staged.key }, "could not remove a discarded upload"));
  }

  async get(tenantId: string, id: string): Promise<FileRecord> {
    const f = await this.deps.store.get(tenantId, id);
    if (!f) throw new ApiError("file_not_found", `File '${id}' was not found`);
    return f;
  }

  list(tenantId: string, q: FileListQuery): Promise<{ files: FileRecord[]; hasMore: boolean }> {
    if (q.purpose !== undefined) this.checkPurpose(q.purpose);
    return this.deps.store.list(tenantId, q);
  }

  async delete(tenantId: string, id: string): Promise<FileRecord> {
    const f = await this.get(tenantId, id);
    // The record goes first: from here the file is gone for every reader; a crash before the
    // bytes are removed leaves an orphan that the next start-up sweeps.
    if (await this.deps.store.delete(f.id)) this.deps.quota.removed(f.tenantId, f.bytes);
    await this.deps.storage
      .remove(f.storageKey)
      .catch((err) => this.deps.log.error({ err, file_id: f.id }, "could not remove a deleted file's bytes"));
    return f;
  }

  /** The file's bytes, or a range of them. */
  async open(tenantId: string, id: string, range?: ByteRange): Promise<{ file: FileRecord; stream: Readable }> {
    const file = await this.get(tenantId, id);
    try {
      return { file, stream: await this.deps.storage.open(file.storageKey, range) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as { name?: string }).name === "NoSuchKey") {
        throw new ApiError("file_not_found", `File '${id}' was not found`);
      }
      throw err;
    }
  }

  /** Copies a stored file into a sandbox (default: /home/user/<filename>; a directory receives it under its filename). */
  async importToSandbox(
    tenantId: string,
    sandboxId: string,
    fileId: string,
    path?: string,
  ): Promise<{ path: string; size: number; file: FileRecord }> {
    const box = await this.deps.box(tenantId, sandboxId);
    const { file, stream } = await this.open(tenantId, fileId);
    const target = path ?? `${HOME}/${file.filename}`;
    let upload: Upload | undefined;
    try {
      upload = await Upload.open(box, target.endsWith("/") ? undefined : target);
      await upload.pump(stream);
      const done = await upload.commit(target, file.filename);
      return { path: done.path, size: done.size, file };
    } catch (err) {
      await upload?.abort();
      throw err;
    } finally {
      stream.destroy();
    }
  }

  /** Stores a sandbox's file as a new file object (same size limit and quota as an upload). */
  async exportFromSandbox(
    tenantId: string,
    sandboxId: string,
    path: string,
    meta: Omit<FileMeta, "filename"> & { filename?: string },
  ): Promise<FileRecord> {
    this.checkPurpose(meta.purpose);
    const box = await this.deps.box(tenantId, sandboxId);
    const file = await download(box, path, this.config.maxFileBytes).catch((err) => {
      if (err instanceof ApiError && err.code === "payload_too_large") throw this.tooLarge();
      throw err;
    });
    try {
      await this.precheck(tenantId, file.size);
      const staged = await this.receive(tenantId, file.stream);
      return await this.commit(tenantId, staged, { ...meta, filename: cleanFilename(meta.filename ?? file.path, "file") });
    } finally {
      file.stream.destroy();
    }
  }
}
