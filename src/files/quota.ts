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
  /** Bytes the tenant's records hold now (stored files and snapshots). */
  committed(tenantId: string): number;
}

/**
 * A tenant with writes in flight. `committed` is read from the records when the first write
 * starts and moved by the writes that commit; a deletion meanwhile is not seen until the next
 * refusal re-reads it (the count can only be too high in between, never too low, because every
 * row of stored bytes is written through a reservation).
 */
export interface Account {
  committed: number;
  reserved: number;
  writers: number;
}

export class StorageQuota {
  private readonly accounts = new Map<string, Account>();

  constructor(private readonly source: StoredBytesSource) {}

  limit(tenantId: string): number {
    return this.source.limit(tenantId);
  }

  /** What the tenant holds and what is being written for it now. */
  usage(tenantId: string): { committed: number; reserved: number } {
    const account = this.accounts.get(tenantId);
    return account
      ? { committed: account.committed, reserved: account.reserved }
      : { committed: this.source.committed(tenantId), reserved: 0 };
  }

  /** Refuses (429 quota_exceeded) unless `extra` more bytes fit next to what is stored and being written. */
  check(tenantId: string, extra = 0): void {
    const account = this.accounts.get(tenantId);
    if (account) {
      if (!this.fits(tenantId, account, extra)) throw this.exceeded(tenantId, account.committed, account.reserved);
      return;
    }
    const committed = this.source.committed(tenantId);
    if (committed + extra > this.limit(tenantId)) throw this.exceeded(tenantId, committed, 0);
  }

  /** Starts a write of the tenant's: its bytes count from the first one, see Reservation. */
  reserve(tenantId: string): Reservation {
    let account = this.accounts.get(tenantId);
    if (!account) {
      account = { committed: this.source.committed(tenantId), reserved: 0, writers: 0 };
      this.accounts.set(tenantId, account);
    }
    account.writers += 1;
    return new Reservation(this, tenantId, account);
  }

  /** @internal (Reservation) Whether `extra` more bytes fit; re-reads the records before saying no. */
  fits(tenantId: string, account: Account, extra: number): boolean {
    const limit = this.limit(tenantId);
    if (account.committed + account.reserved + extra <= limit) return true;
    account.committed = this.source.committed(tenantId);
    return account.committed + account.reserved + extra <= limit;
  }

  /** @internal (Reservation) A write ended: its account goes once no write of the tenant is left. */
  leave(tenantId: string, account: Account): void {
    account.writers -= 1;
    if (account.writers <= 0 && this.accounts.get(tenantId) === account) this.accounts.delete(tenantId);
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
   * Writes the record (`insert`, synchronous: nothing runs between it and the conversion) and
   * counts the reserved bytes as committed. If `insert` throws, the reservation is released.
   */
  commit<T>(insert: () => T): T {
    if (!this.open) throw new Error("a reservation was committed after it ended");
    try {
      const result = insert();
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
    this.quota.leave(this.tenantId, this.account);
  }
}
