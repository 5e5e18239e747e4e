// What each tenant holds in vector indexes (indexes, vectors, bytes) and the bytes of all of them,
// summed in memory as committed writes are counted: both catalogs (SQLite, PostgreSQL) keep one.
import type { VectorUsage } from "./rows.js";

export class UsageTally {
  private readonly usage = new Map<string, VectorUsage>();
  private bytes = 0;

  /** What the tenant holds now (a copy). */
  of(tenantId: string): VectorUsage {
    return { ...(this.usage.get(tenantId) ?? { indexes: 0, vectors: 0, bytes: 0 }) };
  }

  /** The bytes of every tenant's vectors together. */
  get total(): number {
    return this.bytes;
  }

  /** Adds a committed change (negative to take away) to the tenant's sums. */
  add(tenantId: string, change: VectorUsage): void {
    const u = this.usage.get(tenantId) ?? { indexes: 0, vectors: 0, bytes: 0 };
    u.indexes += change.indexes;
    u.vectors += change.vectors;
    u.bytes += change.bytes;
    this.bytes += change.bytes;
    if (u.indexes === 0 && u.vectors === 0 && u.bytes === 0) this.usage.delete(tenantId);
    else this.usage.set(tenantId, u);
  }
}
