// Tenants and their quotas: what one tenant (all of its API keys together) may hold at once. An
// operator sets them (admin API); a quota left unset (null) takes the service-wide default from
// the configuration, so a tenant that was never configured needs no row at all.
import { addColumnIfMissing, type Db } from "./db.js";

const VECTOR_COLUMNS = ["max_vector_indexes", "max_vectors", "vector_storage_mb"];

/** Quotas as stored: null means "the configured default". */
export interface TenantQuotas {
  /** Live sandboxes at once. */
  maxSandboxes: number | null;
  /** code/run + commands/run executing at once, over all the tenant's keys. */
  maxConcurrentRuns: number | null;
  /** Memory of all the tenant's sandboxes together (the tenant's parent cgroup), MiB. */
  memoryMb: number | null;
  /** Processes and threads of all the tenant's sandboxes together (the tenant's parent cgroup). */
  maxProcesses: number | null;
  /** Stored bytes (sandbox workspaces, files), MiB. */
  storageMb: number | null;
  /** Vector indexes at once. */
  maxVectorIndexes: number | null;
  /** Vectors in all the tenant's indexes together. */
  maxVectors: number | null;
  /** Bytes of all the tenant's vectors together (embedding + metadata JSON + id of each), MiB. */
  vectorStorageMb: number | null;
}

export type EffectiveQuotas = { [K in keyof TenantQuotas]: number };

export interface TenantRecord {
  id: string;
  quotas: TenantQuotas;
  /** When the operator suspended the tenant (its keys are refused, its open requests ended); null if active. */
  suspendedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface TenantStore {
  /** The tenant's record; one with every quota unset when the operator never configured it. */
  get(id: string): TenantRecord;
  /** Sets the given quotas (null clears one back to the default); the others are kept. */
  put(id: string, quotas: Partial<TenantQuotas>): TenantRecord;
  list(): TenantRecord[];
  /** Suspends (true) or lets the tenant back in (false); a tenant not yet known is created. */
  setSuspended(id: string, suspended: boolean): TenantRecord;
  /** Read on every request: from memory. */
  isSuspended(id: string): boolean;
}

export const NO_QUOTAS: TenantQuotas = {
  maxSandboxes: null,
  maxConcurrentRuns: null,
  memoryMb: null,
  maxProcesses: null,
  storageMb: null,
  maxVectorIndexes: null,
  maxVectors: null,
  vectorStorageMb: null,
};

/** The tenant's quotas with every unset one replaced by its default. */
export function effectiveQuotas(quotas: TenantQuotas, defaults: EffectiveQuotas): EffectiveQuotas {
  return {
    maxSandboxes: quotas.maxSandboxes ?? defaults.maxSandboxes,
    maxConcurrentRuns: quotas.maxConcurrentRuns ?? defaults.maxConcurrentRuns,
    memoryMb: quotas.memoryMb ?? defaults.memoryMb,
    maxProcesses: quotas.maxProcesses ?? defaults.maxProcesses,
    storageMb: quotas.storageMb ?? defaults.storageMb,
    maxVectorIndexes: quotas.maxVectorIndexes ?? defaults.maxVectorIndexes,
    maxVectors: quotas.maxVectors ?? defaults.maxVectors,
    vectorStorageMb: quotas.vectorStorageMb ?? defaults.vectorStorageMb,
  };
}

interface Row {
  id: string;
  max_sandboxes: number | null;
  max_concurrent_runs: number | null;
  memory_mb: number | null;
  max_processes: number | null;
  storage_mb: number | null;
  max_vector_indexes: number | null;
  max_vectors: number | null;
  vector_storage_mb: number | null;
  suspended_at: string | null;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): TenantRecord => ({
  id: r.id,
  quotas: {
    maxSandboxes: r.max_sandboxes,
    maxConcurrentRuns: r.max_concurrent_runs,
    memoryMb: r.memory_mb,
    maxProcesses: r.max_processes,
    storageMb: r.storage_mb,
    maxVectorIndexes: r.max_vector_indexes,
    maxVectors: r.max_vectors,
    vectorStorageMb: r.vector_storage_mb,
  },
  suspendedAt: r.suspended_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class SqliteTenantStore implements TenantStore {
  /** Read on every sandbox create and every run: kept in memory, written through. */
  private readonly cache = new Map<string, TenantRecord>();

  constructor(private readonly db: Db) {
    // Columns of quotas added after the table (databases from before them get them here, unset).
    for (const column of VECTOR_COLUMNS) addColumnIfMissing(db, "tenants", column, "INTEGER");
    addColumnIfMissing(db, "tenants", "suspended_at", "TEXT");
    for (const row of db.prepare<[], Row>("SELECT * FROM tenants").all()) this.cache.set(row.id, toRecord(row));
  }

  get(id: string): TenantRecord {
    const known = this.cache.get(id);
    if (known) return known;
    const epoch = new Date(0).toISOString();
    return { id, quotas: { ...NO_QUOTAS }, suspendedAt: null, createdAt: epoch, updatedAt: epoch };
  }

  put(id: string, quotas: Partial<TenantQuotas>): TenantRecord {
    const now = new Date().toISOString();
    const old = this.cache.get(id);
    const record: TenantRecord = {
      id,
      quotas: { ...(old?.quotas ?? NO_QUOTAS), ...quotas },
      suspendedAt: old?.suspendedAt ?? null,
      createdAt: old?.createdAt ?? now,
      updatedAt: now,
    };
    const q = record.quotas;
    this.db
      .prepare(
        `INSERT INTO tenants (id, max_sandboxes, max_concurrent_runs, memory_mb, max_processes, storage_mb,
           max_vector_indexes, max_vectors, vector_storage_mb, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET max_sandboxes = excluded.max_sandboxes, max_concurrent_runs = excluded.max_concurrent_runs,
           memory_mb = excluded.memory_mb, max_processes = excluded.max_processes, storage_mb = excluded.storage_mb,
           max_vector_indexes = excluded.max_vector_indexes, max_vectors = excluded.max_vectors,
           vector_storage_mb = excluded.vector_storage_mb, updated_at = excluded.updated_at`,
      )
      .run(
        id,
        q.maxSandboxes,
        q.maxConcurrentRuns,
        q.memoryMb,
        q.maxProcesses,
        q.storageMb,
        q.maxVectorIndexes,
        q.maxVectors,
        q.vectorStorageMb,
        record.createdAt,
        now,
      );
    this.cache.set(id, record);
    return record;
  }

  setSuspended(id: string, suspended: boolean): TenantRecord {
    const record = this.put(id, {});
    const suspendedAt = suspended ? (record.suspendedAt ?? new Date().toISOString()) : null;
    this.db.prepare("UPDATE tenants SET suspended_at = ? WHERE id = ?").run(suspendedAt, id);
    const updated = { ...record, suspendedAt };
    this.cache.set(id, updated);
    return updated;
  }

  isSuspended(id: string): boolean {
    return (this.cache.get(id)?.suspendedAt ?? null) !== null;
  }

  list(): TenantRecord[] {
    return [...this.cache.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}
