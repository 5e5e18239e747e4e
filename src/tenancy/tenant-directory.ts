// The tenants' quotas as the service reads them: every sandbox create and every run asks, so the
// configured tenants are read from the TenantStore once at start and kept in memory; a change is
// written through the store first, then kept. Changes come through the admin API of this process,
// or in a cluster of another node, which tells this one to read the tenant again (reload).
import { NO_QUOTAS, type TenantQuotas, type TenantRecord, type TenantStore } from "./store/tenants.js";

export class TenantDirectory {
  /** Told of every change made here (a cluster tells the other nodes: src/cluster/broadcast.ts). */
  private readonly changed: ((id: string) => void)[] = [];

  private constructor(
    private readonly store: TenantStore,
    private readonly cache: Map<string, TenantRecord>,
  ) {}

  static async open(store: TenantStore): Promise<TenantDirectory> {
    return new TenantDirectory(store, new Map((await store.list()).map((t) => [t.id, t])));
  }

  /** The tenant's record; one with every quota unset when the operator never configured it. */
  get(id: string): TenantRecord {
    const known = this.cache.get(id);
    if (known) return known;
    const epoch = new Date(0).toISOString();
    return { id, quotas: { ...NO_QUOTAS }, suspendedAt: null, createdAt: epoch, updatedAt: epoch };
  }

  /** Sets the given quotas (null clears one back to the default); the others are kept. */
  async put(id: string, quotas: Partial<TenantQuotas>): Promise<TenantRecord> {
    const record = await this.store.put(id, quotas, new Date().toISOString());
    this.cache.set(id, record);
    this.announce(id);
    return record;
  }

  /** Suspends (true) or lets the tenant back in (false); a tenant not yet known is created. */
  async setSuspended(id: string, suspended: boolean): Promise<TenantRecord> {
    const record = await this.store.setSuspended(id, suspended, new Date().toISOString());
    this.cache.set(id, record);
    this.announce(id);
    return record;
  }

  private announce(id: string): void {
    for (const listener of this.changed) listener(id);
  }

  /** Calls `listener` with the tenant's id after each change of its quotas or suspension made here. */
  onChanged(listener: (id: string) => void): void {
    this.changed.push(listener);
  }

  /** Reads the tenant's record again (another node changed it in the shared store); the record now. */
  async reload(id: string): Promise<TenantRecord> {
    const record = await this.store.get(id);
    if (record) this.cache.set(id, record);
    else this.cache.delete(id);
    return this.get(id);
  }

  /** Read on every request: from memory. */
  isSuspended(id: string): boolean {
    return (this.cache.get(id)?.suspendedAt ?? null) !== null;
  }

  /** The configured tenants, by id. */
  list(): TenantRecord[] {
    return [...this.cache.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}
