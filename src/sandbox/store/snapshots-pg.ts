// Snapshot records in PostgreSQL (the twin of snapshots.ts): any node can list, resume or fork a
// tenant's snapshots from them (the archives themselves are wherever the snapshot directory is).
import { migratePg, type PgMigration, type PgPool } from "../../store/pg.js";
import { type SnapshotRecord, type SnapshotRow, type SnapshotStore, toSnapshotRecord } from "./snapshots.js";

export const PG_SNAPSHOT_MIGRATIONS: PgMigration[] = [
  {
    area: "snapshots",
    version: 1,
    sql: `CREATE TABLE snapshots (
       id TEXT COLLATE "C" PRIMARY KEY,
       tenant_id TEXT COLLATE "C" NOT NULL,
       sandbox_id TEXT COLLATE "C" NOT NULL,
       kind TEXT COLLATE "C" NOT NULL,
       created_at TEXT COLLATE "C" NOT NULL,
       size_bytes BIGINT NOT NULL,
       files INTEGER NOT NULL,
       sha256 TEXT COLLATE "C" NOT NULL,
       settings TEXT COLLATE "C" NOT NULL
     );
     CREATE INDEX snapshots_tenant ON snapshots (tenant_id, created_at);
     CREATE INDEX snapshots_sandbox ON snapshots (sandbox_id, kind);
     CREATE TABLE sandbox_on_timeout (sandbox_id TEXT COLLATE "C" PRIMARY KEY, on_timeout TEXT COLLATE "C" NOT NULL);`,
  },
];

export class PgSnapshotStore implements SnapshotStore {
  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgSnapshotStore> {
    await migratePg(pool, PG_SNAPSHOT_MIGRATIONS);
    return new PgSnapshotStore(pool);
  }

  async insert(r: SnapshotRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO snapshots (id, tenant_id, sandbox_id, kind, created_at, size_bytes, files, sha256, settings)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [r.id, r.tenantId, r.sandboxId, r.kind, r.createdAt, r.sizeBytes, r.files, r.sha256, JSON.stringify(r.settings)],
    );
  }

  async get(id: string): Promise<SnapshotRecord | undefined> {
    const { rows } = await this.pool.query<SnapshotRow>("SELECT * FROM snapshots WHERE id = $1", [id]);
    return rows[0] && toSnapshotRecord(rows[0]);
  }

  async listByTenant(tenantId: string, limit: number, offset: number) {
    const [page, total] = await Promise.all([
      this.pool.query<SnapshotRow>("SELECT * FROM snapshots WHERE tenant_id = $1 ORDER BY created_at DESC, id LIMIT $2 OFFSET $3", [
        tenantId,
        limit,
        offset,
      ]),
      this.countByTenant(tenantId),
    ]);
    return { snapshots: page.rows.map(toSnapshotRecord), total };
  }

  async countByTenant(tenantId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>("SELECT COUNT(*) AS n FROM snapshots WHERE tenant_id = $1", [tenantId]);
    return rows[0]?.n ?? 0;
  }

  async bytesByTenant(tenantId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: number | null }>("SELECT SUM(size_bytes) AS n FROM snapshots WHERE tenant_id = $1", [
      tenantId,
    ]);
    return rows[0]?.n ?? 0;
  }

  async bytesPerTenant(): Promise<Map<string, number>> {
    const { rows } = await this.pool.query<{ tenant_id: string; n: number }>(
      "SELECT tenant_id, SUM(size_bytes) AS n FROM snapshots GROUP BY tenant_id",
    );
    return new Map(rows.map((r) => [r.tenant_id, r.n]));
  }

  async hibernated(sandboxId: string): Promise<SnapshotRecord | undefined> {
    const { rows } = await this.pool.query<SnapshotRow>(
      "SELECT * FROM snapshots WHERE sandbox_id = $1 AND kind = 'hibernate' ORDER BY created_at DESC LIMIT 1",
      [sandboxId],
    );
    return rows[0] && toSnapshotRecord(rows[0]);
  }

  async delete(id: string): Promise<boolean> {
    return ((await this.pool.query("DELETE FROM snapshots WHERE id = $1", [id])).rowCount ?? 0) > 0;
  }

  async setOnTimeout(sandboxId: string, onTimeout: string | null): Promise<void> {
    if (onTimeout === null) await this.pool.query("DELETE FROM sandbox_on_timeout WHERE sandbox_id = $1", [sandboxId]);
    else
      await this.pool.query(
        "INSERT INTO sandbox_on_timeout (sandbox_id, on_timeout) VALUES ($1, $2) ON CONFLICT (sandbox_id) DO UPDATE SET on_timeout = excluded.on_timeout",
        [sandboxId, onTimeout],
      );
  }

  async onTimeout(sandboxId: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ on_timeout: string }>("SELECT on_timeout FROM sandbox_on_timeout WHERE sandbox_id = $1", [
      sandboxId,
    ]);
    return rows[0]?.on_timeout;
  }
}
