// The tenants' snapshots as kept things: their archives (written on disk by ./snapshots.ts, then
// kept there or, when the service has a shared store, in the object store every node reads) and
// their records, the cap on how many a tenant keeps, and the storage quota their bytes count
// against as they arrive. Knows nothing of live sandboxes: it is handed the box to copy and the
// settings to keep.
import crypto from "node:crypto";
import fs from "node:fs";
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import type { SandboxConfig } from "./settings.js";
import { ApiError } from "../errors.js";
import type { Reservation, StorageQuota } from "../files/quota.js";
import type { FileStorage } from "../files/storage.js";
import type { SnapshotKind, SnapshotRecord, SnapshotSettings, SnapshotStore } from "./store/snapshots.js";
import type { Box } from "./box.js";
import { FILE_CHUNK } from "./protocol.js";
import { SnapshotFiles } from "./snapshots.js";

export type SnapshotKeeperConfig = Pick<SandboxConfig, "snapshotsPerTenant" | "snapshotDir" | "snapshotMaxBytes">;

export class SnapshotKeeper {
  readonly files: SnapshotFiles;
  /** Snapshots being written per tenant (counted against the tenant's cap before their row exists). */
  private readonly writing = new Map<string, number>();

  constructor(
    private readonly config: SnapshotKeeperConfig,
    private readonly snapshots: SnapshotStore,
    /** Tenants' stored bytes (stored files and snapshots together): snapshots are held to it. */
    private readonly storage: StorageQuota,
    private readonly log: Logger,
    /**
     * The object store every node shares (the S3 backend), or none: archives then stay on this
     * node's disk. With one, an archive is written on disk, copied there, and removed from disk
     * before its record exists, so any node restores any snapshot.
     */
    private readonly shared?: FileStorage,
  ) {
    this.files = new SnapshotFiles(config.snapshotDir, config.snapshotMaxBytes);
  }

  /** Whether archives are kept in the store every node shares: any node restores any snapshot. */
  get sharesArchives(): boolean {
    return this.shared !== undefined;
  }

  /** Moves a just-written archive from this node's disk to the shared store (nothing when there is none). */
  private async share(id: string): Promise<void> {
    if (!this.shared) return;
    try {
      await this.shared.put(id, fs.createReadStream(this.files.pathOf(id), { highWaterMark: FILE_CHUNK }));
    } catch (err) {
      this.log.error({ err, snapshot_id: id }, "could not store a snapshot archive in the object store");
      throw new ApiError("internal_error", "The snapshot failed: its archive could not be stored in the object store; retry");
    } finally {
      await this.files.remove(id);
    }
  }

  /**
   * The archive's bytes: from this node's disk when it is there (no shared store, or a snapshot
   * written before there was one), otherwise from the shared store, whichever node wrote it.
   */
  private async open(id: string): Promise<Readable> {
    try {
      const handle = await fs.promises.open(this.files.pathOf(id), "r");
      return handle.createReadStream({ highWaterMark: FILE_CHUNK });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    if (!this.shared) {
      throw new ApiError("internal_error", `The archive of snapshot '${id}' is not on this node (it was written on another one)`);
    }
    try {
      return await this.shared.open(id);
    } catch (err) {
      if ((err as { name?: string }).name === "NoSuchKey") {
        throw new ApiError("internal_error", `The archive of snapshot '${id}' is missing from the object store`);
      }
      throw err;
    }
  }

  /** Unpacks the snapshot's archive into the box's /home/user (checked against its checksum); the entries unpacked. */
  async restore(box: Box, snapshot: SnapshotRecord): Promise<number> {
    return this.files.restoreFrom(box, await this.open(snapshot.id), snapshot.sha256);
  }

  /** Removes an archive wherever it is kept. */
  private async discard(id: string): Promise<void> {
    await this.files.remove(id);
    await this.shared?.remove(id);
  }

  /**
   * At start-up: archives no record points to (a crash between writing one and recording it, or
   * between deleting a record and its file; a fork's temporary archive) are never snapshots.
   */
  async sweep(): Promise<void> {
    await this.files.sweep(async (id) => (await this.snapshots.get(id)) !== undefined);
  }

  /**
   * Refuses a snapshot past the tenant's cap on their number (counting the ones being written);
   * returns the release. The slot is taken before the count is read and the writes already under
   * way are noted at that moment: one that is recorded while the count is read is counted twice at
   * worst (a refusal too many), never missed.
   */
  private async reserveSlot(tenantId: string): Promise<() => void> {
    // In a cluster: the storage quota sees the other nodes' files and snapshots (their bytes are reserved after this).
    await this.storage.refresh(tenantId);
    const others = this.writing.get(tenantId) ?? 0;
    this.writing.set(tenantId, others + 1);
    const release = () => {
      const left = (this.writing.get(tenantId) ?? 1) - 1;
      if (left > 0) this.writing.set(tenantId, left);
      else this.writing.delete(tenantId);
    };
    const cap = this.config.snapshotsPerTenant;
    let kept: number;
    try {
      kept = await this.snapshots.countByTenant(tenantId);
    } catch (err) {
      release();
      throw err;
    }
    if (kept + others >= cap) {
      release();
      throw new ApiError("quota_exceeded", `Your tenant already keeps ${cap} snapshots, its limit; delete some first`);
    }
    return release;
  }

  /**
   * Writes a snapshot of a sandbox's files (the box running, or thawed for the copy) and records it
   * with `settings` (read once the archive is written). Its bytes are reserved against the tenant's
   * storage quota as they arrive (429 quota_exceeded, and nothing kept, past it) and become the
   * tenant's stored bytes with the record. A hibernation's snapshot is outside the tenant's cap.
   */
  async write(
    box: Box,
    of: { tenantId: string; sandboxId: string },
    kind: SnapshotKind,
    settings: () => SnapshotSettings,
  ): Promise<SnapshotRecord> {
    const release = kind === "hibernate" ? () => {} : await this.reserveSlot(of.tenantId);
    const bytes = this.storage.reserve(of.tenantId);
    try {
      const id = `snap_${crypto.randomUUID()}`;
      const info = await this.files.write(box, id, (size) => bytes.grow(size));
      await this.share(id);
      const snapshot: SnapshotRecord = {
        id,
        tenantId: of.tenantId,
        sandboxId: of.sandboxId,
        kind,
        createdAt: new Date().toISOString(),
        ...info,
        settings: settings(),
      };
      await this.commit(bytes, snapshot);
      return snapshot;
    } finally {
      bytes.release();
      release();
    }
  }

  /**
   * A second name (a manual snapshot) for an archive already kept, e.g. a hibernated sandbox's. It
   * counts against the cap and the storage quota like any snapshot (the first one may go first).
   */
  async copy(source: SnapshotRecord): Promise<SnapshotRecord> {
    const release = await this.reserveSlot(source.tenantId);
    const bytes = this.storage.reserve(source.tenantId);
    try {
      bytes.grow(source.sizeBytes);
      const id = `snap_${crypto.randomUUID()}`;
      if (this.shared) await this.shared.put(id, await this.open(source.id));
      else await this.files.link(source.id, id);
      const snapshot: SnapshotRecord = { ...source, id, kind: "manual", createdAt: new Date().toISOString() };
      await this.commit(bytes, snapshot);
      return snapshot;
    } finally {
      bytes.release();
      release();
    }
  }

  /** The record, with the reserved bytes made the tenant's; without it, no file either. */
  private async commit(bytes: Reservation, snapshot: SnapshotRecord): Promise<void> {
    try {
      await bytes.commit(() => this.snapshots.insert(snapshot));
    } catch (err) {
      await this.discard(snapshot.id).catch((e) =>
        this.log.error({ err: e, snapshot_id: snapshot.id }, "could not remove a snapshot archive"),
      );
      throw err;
    }
  }

  /** Refuses (429 quota_exceeded) when `bytes` more would take the tenant past its storage quota. */
  checkStorage(tenantId: string, bytes: number): void {
    this.storage.check(tenantId, bytes);
  }

  /** Bytes reserved against the tenant's storage quota as they arrive (a fork's temporary archive). */
  async reserveStorage(tenantId: string): Promise<Reservation> {
    await this.storage.refresh(tenantId);
    return this.storage.reserve(tenantId);
  }

  async get(tenantId: string, id: string): Promise<SnapshotRecord> {
    const snapshot = await this.snapshots.get(id);
    if (!snapshot || snapshot.tenantId !== tenantId) throw new ApiError("snapshot_not_found", `Snapshot '${id}' was not found`);
    return snapshot;
  }

  list(tenantId: string, limit: number, offset: number) {
    return this.snapshots.listByTenant(tenantId, limit, offset);
  }

  async remove(snapshot: SnapshotRecord): Promise<void> {
    // The row first: a crash between the two leaves an orphan file, never a row without its file.
    if (await this.snapshots.delete(snapshot.id)) this.storage.removed(snapshot.tenantId, snapshot.sizeBytes);
    return this.discard(snapshot.id).catch((err) => this.log.error({ err, snapshot_id: snapshot.id }, "could not remove a snapshot file"));
  }
}
