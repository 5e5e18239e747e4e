// A tenant's stored bytes against its storage quota: stored files and snapshots together, the bytes
// their records hold (committed) plus the bytes being written right now (reservations: uploads,
// exports and snapshot archives in flight), so that writes running at the same time cannot together
// pass the quota. The one place that says whether more bytes fit; knows nothing of HTTP.
import { ApiError } from "../errors.js";

const MiB = 2 ** 20;
/** A refusal may clear once writes in flight end or the tenant deletes something: worth a retry later, not at once. */
const RETRY_AFTER_S = 10;

export interface StoredBytesSource {
  /** The tenant's quota, bytes. */
  limit(tenantId: string): number;
  /** Bytes every tenant's records hold (stored files and snapshots), read once at start. */
  committedPerTenant(): Promise<Map<string, number>>;
  /** Bytes one tenant's records hold now (every node's writes, in a cluster). */
  committedOf(tenantId: string): Promise<number>;
}

/**
 * A tenant's stored bytes as this service counts them: `committed`, what its records hold (loaded
 * at start, moved by every commit and removal), and `reserved`, what its writes in flight have
 * received. Kept in memory so that a reservation is decided synchronously, with no read of the
 * records between the check and the count (writes running at the same time cannot both take the
 * last room). Every row of stored bytes is written through a reservation and removed through
 * removed(), so the count follows the records.
 */
export interface Account {
  committed: number;
  reserved: number;
}

export class StorageQuota {
  private readonly accounts = new Map<string, Account>();
  /** A node of a cluster: other nodes write and delete the tenant's records too (see refresh()). */
  private overCluster = false;

  constructor(private readonly source: StoredBytesSource) {}

  /** This node is one of a cluster sharing the records: a write first reads what the tenant holds again. */
  countOverCluster(): void {
    this.overCluster = true;
  }

  /**
   * In a cluster, before a write: the tenant's committed bytes are read again from the records, so
   * what other nodes stored or deleted since counts (their writes still in flight do not: the
   * quota can be passed by those). A write of this node's committed while the records are read
   * may be missed until the tenant's next write reads them again. On one node, nothing: this
   * node's own count is the truth.
   */
  async refresh(tenantId: string): Promise<void> {
    if (!this.overCluster) return;
    const bytes = await this.source.committedOf(tenantId);
    this.account(tenantId).committed = bytes;
  }

  /** Reads what every tenant holds; before the first reservation. */
  async load(): Promise<void> {
    for (const [tenantId, bytes] of await this.source.committedPerTenant()) this.account(tenantId).committed += bytes;
  }

  limit(tenantId: string): number {
    return this.source.limit(tenantId);
  }

  private account(tenantId: string): Account {
    let account = this.accounts.get(tenantId);
    if (!account) {
      account = { committed: 0, reserved: 0 };
      this.accounts.set(tenantId, account);
    }
    return account;
  }

  /** What the tenant holds and what is being written for it now. */
  usage(tenantId: string): { committed: number; reserved: number } {
    const account = this.accounts.get(tenantId);
    return { committed: account?.committed ?? 0, reserved: account?.reserved ?? 0 };
  }

  /** Refuses (429 quota_exceeded) unless `extra` more bytes fit next to what is stored and being written. */
  check(tenantId: string, extra = 0): void {
    const account = this.account(tenantId);
    if (!this.fits(tenantId, account, extra)) throw this.exceeded(tenantId, account.committed, account.reserved);
  }

  /** Starts a write of the tenant's: its bytes count from the first one, see Reservation. */
  reserve(tenantId: string): Reservation {
    return new Reservation(this, tenantId, this.account(tenantId));
  }

  /** A record of the tenant's holding `bytes` was removed (a deleted or expired file, a deleted snapshot). */
  removed(tenantId: string, bytes: number): void {
    const account = this.account(tenantId);
    account.committed = Math.max(0, account.committed - bytes);
  }

  /** @internal (Reservation) Whether `extra` more bytes fit. */
  fits(tenantId: string, account: Account, extra: number): boolean {
    return account.committed + account.reserved + extra <= this.limit(tenantId);
  }

  /** @internal */
  exceeded(tenantId: string, committed: number, reserved: number): ApiError {
    const limit = this.limit(tenantId);
    const writing = reserved > 0 ? ` and ${reserved} more are being written` : "";
    return new ApiError(
      "quota_exceeded",
      `Storage quota exceeded: this tenant may keep ${limit} bytes (${Math.floor(limit / MiB)} MiB) of stored files and snapshots ` +
        `together; it holds ${committed}${writing}. Delete files or snapshots, or ask the operator for a larger storage_mb`,
      RETRY_AFTER_S,
    );
  }
}

/**
 * The bytes one write has received so far, counted against its tenant's quota as they arrive.
 * Ends exactly once: commit() when its record is written (the bytes then count as committed), or
 * release() when it fails or is abandoned (they no longer count). Both may be called again, harmlessly.
 */
export class Reservation {
  private held = 0;
  private open = true;

  constructor(
    private readonly quota: StorageQuota,
    readonly tenantId: string,
    private readonly account: Account,
  ) {}

  /** Bytes reserved now. */
  get bytes(): number {
    return this.held;
  }

  /**
   * Reserves up to `total` bytes (the write's size so far). If they do not fit, the whole
   * reservation is released at once (the write is refused; another may use the room) and
   * 429 quota_exceeded is thrown.
   */
  grow(total: number): void {
    if (!this.open) throw new Error("a reservation grew after it ended");
    const extra = total - this.held;
    if (extra <= 0) return;
    if (!this.quota.fits(this.tenantId, this.account, extra)) {
      const err = this.quota.exceeded(this.tenantId, this.account.committed, this.account.reserved);
      this.release();
      throw err;
    }
    this.account.reserved += extra;
    this.held = total;
  }

  /**
   * Writes the record (`insert`) and counts the reserved bytes as committed. The bytes stay
   * reserved while the record is written (no other write can take their room meanwhile) and move
   * to committed in one step when it is. If `insert` fails, the reservation is released.
   */
  async commit<T>(insert: () => Promise<T>): Promise<T> {
    if (!this.open) throw new Error("a reservation was committed after it ended");
    try {
      const result = await insert();
      this.account.committed += this.held;
      return result;
    } finally {
      this.release();
    }
  }

  release(): void {
    if (!this.open) return;
    this.open = false;
    this.account.reserved -= this.held;
    this.held = 0;
  }
}
