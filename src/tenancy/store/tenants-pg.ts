// Tenants and their quotas in PostgreSQL (the twin of tenants.ts). Every change is one upsert
// statement, so concurrent changes of different quotas, from any node, all stay.
import { migratePg, type PgMigration, type PgPool } from "../../store/pg.js";
import { type TenantQuotas, type TenantRecord, type TenantRow, type TenantStore, toTenantRecord } from "./tenants.js";

export const PG_TENANT_MIGRATIONS: PgMigration[] = [
  {
    area: "tenants",
    version: 1,
    sql: `CREATE TABLE tenants (
       id TEXT COLLATE "C" PRIMARY KEY,
       max_sandboxes INTEGER,
       max_concurrent_runs INTEGER,
       memory_mb INTEGER,
       max_processes INTEGER,
       storage_mb INTEGER,
       max_vector_indexes INTEGER,
       max_vectors BIGINT,
       vector_storage_mb INTEGER,
       suspended_at TEXT COLLATE "C",
       created_at TEXT COLLATE "C" NOT NULL,
       updated_at TEXT COLLATE "C" NOT NULL
     );`,
  },
];

/** Each quota's column (fixed names: the only text put into the statements below). */
const COLUMNS: { [K in keyof TenantQuotas]: string } = {
  maxSandboxes: "max_sandboxes",
  maxConcurrentRuns: "max_concurrent_runs",
  memoryMb: "memory_mb",
  maxProcesses: "max_processes",
  storageMb: "storage_mb",
  maxVectorIndexes: "max_vector_indexes",
  maxVectors: "max_vectors",
  vectorStorageMb: "vector_storage_mb",
};

export class PgTenantStore implements TenantStore {
  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgTenantStore> {
    await migratePg(pool, PG_TENANT_MIGRATIONS);
    return new PgTenantStore(pool);
  }

  async get(id: string): Promise<TenantRecord | undefined> {
    const { rows } = await this.pool.query<TenantRow>("SELECT * FROM tenants WHERE id = $1", [id]);
    return rows[0] && toTenantRecord(rows[0]);
  }

  async put(id: string, quotas: Partial<TenantQuotas>, at: string): Promise<TenantRecord> {
    // Only the given quotas are written (a new row has the others unset); the rest of an existing row stays.
    const given = (Object.keys(COLUMNS) as (keyof TenantQuotas)[]).filter((k) => quotas[k] !== undefined);
    const columns = given.map((k) => COLUMNS[k]);
    const values = given.map((k) => quotas[k]);
    const placeholders = columns.map((_, i) => `$${i + 3}`);
    const { rows } = await this.pool.query<TenantRow>(
      `INSERT INTO tenants (id, created_at, updated_at${columns.map((c) => `, ${c}`).join("")})
       VALUES ($1, $2, $2${placeholders.map((p) => `, ${p}`).join("")})
       ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at${columns.map((c) => `, ${c} = excluded.${c}`).join("")}
       RETURNING *`,
      [id, at, ...values],
    );
    return toTenantRecord(rows[0] as TenantRow);
  }

  async list(): Promise<TenantRecord[]> {
    const { rows } = await this.pool.query<TenantRow>("SELECT * FROM tenants ORDER BY id");
    return rows.map(toTenantRecord);
  }

  async setSuspended(id: string, suspended: boolean, at: string): Promise<TenantRecord> {
    // A suspension in force keeps its first time; letting the tenant back in clears it.
    const { rows } = await this.pool.query<TenantRow>(
      `INSERT INTO tenants (id, suspended_at, created_at, updated_at) VALUES ($1, $2, $3, $3)
       ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at,
         suspended_at = CASE WHEN $4::boolean THEN COALESCE(tenants.suspended_at, excluded.suspended_at) ELSE NULL END
       RETURNING *`,
      [id, suspended ? at : null, at, suspended],
    );
    return toTenantRecord(rows[0] as TenantRow);
  }
}
