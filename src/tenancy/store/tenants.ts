// Tenants and their quotas: what one tenant (all of its API keys together) may hold at once. An
// operator sets them (admin API); a quota left unset (null) takes the service-wide default from
// the configuration, so a tenant that was never configured needs no row at all.
import { addColumnIfMissing, type Db, type Migration, migrate } from "../../store/db.js";

/** The tenants table is made by the core migrations (src/store/db.ts); these are its later columns. */
export const TENANT_MIGRATIONS: Migration[] = [
  {
    area: "tenants",
    version: 1,
    // The vector quotas. Databases from before versioned areas may have them already.
    up: (db) => {
      for (const column of ["max_vector_indexes", "max_vectors", "vector_storage_mb"]) addColumnIfMissing(db, "tenants", column, "INTEGER");
    },
  },
  {
    area: "tenants",
    version: 2,
    // Suspension. Databases from before versioned areas may have it already.
    up: (db) => void addColumnIfMissing(db, "tenants", "suspended_at", "TEXT"),
  },
];

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
  /** The tenant's record, or undefined when the operator never configured it. */
  get(id: string): Promise<TenantRecord | undefined>;
  /** Sets the given quotas (null clears one back to the default), keeping the others, in one
   * atomic step; creates the record if need be. */
  put(id: string, quotas: Partial<TenantQuotas>, at: string): Promise<TenantRecord>;
  /** Every configured tenant, by id. */
  list(): Promise<TenantRecord[]>;
  /** Suspends (since `at`, or since an earlier suspension still in force) or lets the tenant back in
   * (false), in one atomic step; creates the record if need be. */
  setSuspended(id: string, suspended: boolean, at: string): Promise<TenantRecord>;
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

export interface TenantRow {
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

export const toTenantRecord = (r: TenantRow): TenantRecord => ({
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
  private readonly stmts;
  private readonly putTx: (id: string, quotas: Partial<TenantQuotas>, at: string) => TenantRecord;
  private readonly suspendTx: (id: string, suspended: boolean, at: string) => TenantRecord;

  constructor(db: Db) {
    migrate(db, TENANT_MIGRATIONS);
    this.stmts = {
      get: db.prepare<[string], TenantRow>("SELECT * FROM tenants WHERE id = ?"),
      list: db.prepare<[], TenantRow>("SELECT * FROM tenants ORDER BY id"),
      upsert: db.prepare(
        `INSERT INTO tenants (id, max_sandboxes, max_concurrent_runs, memory_mb, max_processes, storage_mb,
           max_vector_indexes, max_vectors, vector_storage_mb, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET max_sandboxes = excluded.max_sandboxes, max_concurrent_runs = excluded.max_concurrent_runs,
           memory_mb = excluded.memory_mb, max_processes = excluded.max_processes, storage_mb = excluded.storage_mb,
           max_vector_indexes = excluded.max_vector_indexes, max_vectors = excluded.max_vectors,
           vector_storage_mb = excluded.vector_storage_mb, updated_at = excluded.updated_at`,
      ),
    };
    // Read, merge and write in one transaction: two changes of different quotas both stay.
    this.putTx = db.transaction((id: string, quotas: Partial<TenantQuotas>, at: string): TenantRecord => {
      const old = this.stmts.get.get(id);
      const record: TenantRecord = {
        id,
        quotas: { ...(old ? toTenantRecord(old).quotas : NO_QUOTAS), ...quotas },
        suspendedAt: old?.suspended_at ?? null,
        createdAt: old?.created_at ?? at,
        updatedAt: at,
      };
      const q = record.quotas;
      this.stmts.upsert.run(
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
        at,
      );
      return record;
    });
    const suspend = db.prepare("UPDATE tenants SET suspended_at = ? WHERE id = ?");
    this.suspendTx = db.transaction((id: string, suspended: boolean, at: string): TenantRecord => {
      const record = this.putTx(id, {}, at);
      const suspendedAt = suspended ? (record.suspendedAt ?? at) : null;
      suspend.run(suspendedAt, id);
      return { ...record, suspendedAt };
    });
  }

  async get(id: string): Promise<TenantRecord | undefined> {
    const row = this.stmts.get.get(id);
    return row && toTenantRecord(row);
  }

  async put(id: string, quotas: Partial<TenantQuotas>, at: string): Promise<TenantRecord> {
    return this.putTx(id, quotas, at);
  }

  async list(): Promise<TenantRecord[]> {
    return this.stmts.list.all().map(toTenantRecord);
  }

  async setSuspended(id: string, suspended: boolean, at: string): Promise<TenantRecord> {
    return this.suspendTx(id, suspended, at);
  }
}
