// API keys and the operator's admin key in PostgreSQL (the twin of keys.ts): the same rows, kept
// only as SHA-256 hashes.
import { inTransaction, migratePg, type PgMigration, type PgPool } from "../../store/pg.js";
import { type AdminKeyStore, type ApiKeyRecord, type KeyRow, type KeyStore, toKeyRecord } from "./keys.js";

export const PG_KEY_MIGRATIONS: PgMigration[] = [
  {
    area: "keys",
    version: 1,
    sql: `CREATE TABLE api_keys (
       id TEXT COLLATE "C" PRIMARY KEY,
       tenant_id TEXT COLLATE "C" NOT NULL,
       name TEXT COLLATE "C" NOT NULL,
       prefix TEXT COLLATE "C" NOT NULL,
       hash TEXT COLLATE "C" NOT NULL UNIQUE,
       created_at TEXT COLLATE "C" NOT NULL,
       revoked_at TEXT COLLATE "C",
       rate_limit_per_minute INTEGER,
       max_concurrent_runs INTEGER,
       last_used_at TEXT COLLATE "C"
     );
     CREATE TABLE admin_keys (
       id TEXT COLLATE "C" PRIMARY KEY,
       prefix TEXT COLLATE "C" NOT NULL,
       hash TEXT COLLATE "C" NOT NULL,
       created_at TEXT COLLATE "C" NOT NULL
     );`,
  },
];

export class PgKeyStore implements KeyStore {
  private constructor(private readonly pool: PgPool) {}

  /** The store, its tables migrated. */
  static async open(pool: PgPool): Promise<PgKeyStore> {
    await migratePg(pool, PG_KEY_MIGRATIONS);
    return new PgKeyStore(pool);
  }

  async insert(r: ApiKeyRecord, hash: string): Promise<void> {
    await this.pool.query(
      `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, created_at, rate_limit_per_minute, max_concurrent_runs)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [r.id, r.tenantId, r.name, r.prefix, hash, r.createdAt, r.rateLimitPerMinute, r.maxConcurrentRuns],
    );
  }

  async findActiveByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const { rows } = await this.pool.query<KeyRow>("SELECT * FROM api_keys WHERE hash = $1 AND revoked_at IS NULL", [hash]);
    return rows[0] && toKeyRecord(rows[0]);
  }

  async list(): Promise<ApiKeyRecord[]> {
    const { rows } = await this.pool.query<KeyRow>("SELECT * FROM api_keys ORDER BY created_at, id");
    return rows.map(toKeyRecord);
  }

  async get(id: string): Promise<ApiKeyRecord | undefined> {
    const { rows } = await this.pool.query<KeyRow>("SELECT * FROM api_keys WHERE id = $1", [id]);
    return rows[0] && toKeyRecord(rows[0]);
  }

  async revoke(idOrPrefix: string, at: string): Promise<boolean> {
    const res = await this.pool.query("UPDATE api_keys SET revoked_at = $1 WHERE (id = $2 OR prefix = $2) AND revoked_at IS NULL", [
      at,
      idOrPrefix,
    ]);
    return (res.rowCount ?? 0) > 0;
  }

  async isActive(id: string): Promise<boolean> {
    const { rows } = await this.pool.query("SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL", [id]);
    return rows.length > 0;
  }

  async touch(lastUsed: Array<[id: string, at: string]>): Promise<void> {
    if (lastUsed.length === 0) return;
    // One statement for the whole batch.
    await this.pool.query(
      "UPDATE api_keys AS k SET last_used_at = v.at FROM unnest($1::text[], $2::text[]) AS v(id, at) WHERE k.id = v.id",
      [lastUsed.map(([id]) => id), lastUsed.map(([, at]) => at)],
    );
  }
}

export class PgAdminKeyStore implements AdminKeyStore {
  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgAdminKeyStore> {
    await migratePg(pool, PG_KEY_MIGRATIONS);
    return new PgAdminKeyStore(pool);
  }

  async hashes(): Promise<string[]> {
    const { rows } = await this.pool.query<{ hash: string }>("SELECT hash FROM admin_keys");
    return rows.map((r) => r.hash);
  }

  async replace(id: string, prefix: string, hash: string, createdAt: string): Promise<void> {
    await inTransaction(this.pool, async (c) => {
      // Two nodes rotating at once: the lock makes one replace follow the other, leaving one row.
      await c.query("LOCK TABLE admin_keys IN EXCLUSIVE MODE");
      await c.query("DELETE FROM admin_keys");
      await c.query("INSERT INTO admin_keys (id, prefix, hash, created_at) VALUES ($1, $2, $3, $4)", [id, prefix, hash, createdAt]);
    });
  }
}
