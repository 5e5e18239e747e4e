// The tenants' snapshots as kept things: their archives on disk (./snapshots.ts) and their records,
// the cap on how many a tenant keeps, and the storage quota their bytes count against as they
// arrive. Knows nothing of live sandboxes: it is handed the box to copy and the settings to keep.
import crypto from "node:crypto";
import type { Logger } from "pino";
import type { SandboxConfig } from "./settings.js";
import { ApiError } from "../errors.js";
import type { Reservation, StorageQuota } from "../files/quota.js";
import type { SnapshotKind, SnapshotRecord, SnapshotSettings, SnapshotStore } from "./store/snapshots.js";
import type { Box } from "./box.js";
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
  ) {
    this.files = new SnapshotFiles(config.snapshotDir, config.snapshotMaxBytes);
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
      await this.files.link(source.id, id);
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
      await this.files.remove(snapshot.id);
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
    return this.files
      .remove(snapshot.id)
      .catch((err) => this.log.error({ err, snapshot_id: snapshot.id }, "could not remove a snapshot file"));
  }
}
