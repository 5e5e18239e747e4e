// Deployment rows in PostgreSQL (the twin of store.ts).
import { migratePg, type PgMigration, type PgPool } from "../store/pg.js";
import type { DeploymentRow, DeploymentStatus, DeploymentStore } from "./store.js";

export const PG_DEPLOYMENT_MIGRATIONS: PgMigration[] = [
  {
    area: "deployments",
    version: 1,
    sql: `CREATE TABLE deployments (
       id TEXT COLLATE "C" PRIMARY KEY,
       tenant_id TEXT COLLATE "C" NOT NULL,
       name TEXT COLLATE "C" NOT NULL,
       model_name TEXT COLLATE "C" NOT NULL,
       hw_type TEXT COLLATE "C" NOT NULL,
       gpu_model TEXT COLLATE "C",
       gpu_count INTEGER NOT NULL,
       min_replicas INTEGER NOT NULL,
       max_replicas INTEGER NOT NULL,
       status TEXT COLLATE "C" NOT NULL,
       reason TEXT COLLATE "C",
       created_at TEXT COLLATE "C" NOT NULL,
       UNIQUE (tenant_id, name)
     )`,
  },
  { area: "deployments", version: 2, sql: `ALTER TABLE deployments ADD COLUMN node_id TEXT COLLATE "C"` },
];

export class PgDeploymentStore implements DeploymentStore {
  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgDeploymentStore> {
    await migratePg(pool, PG_DEPLOYMENT_MIGRATIONS);
    return new PgDeploymentStore(pool);
  }

  async insert(r: DeploymentRow): Promise<boolean> {
    // ON CONFLICT DO NOTHING: the tenant's name taken (or the id) inserts nothing.
    const res = await this.pool.query(
      `INSERT INTO deployments (id, tenant_id, name, model_name, hw_type, gpu_model, gpu_count, min_replicas, max_replicas, status, reason, created_at, node_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING`,
      [
        r.id,
        r.tenant_id,
        r.name,
        r.model_name,
        r.hw_type,
        r.gpu_model,
        r.gpu_count,
        r.min_replicas,
        r.max_replicas,
        r.status,
        r.reason,
        r.created_at,
        r.node_id,
      ],
    );
    return res.rowCount === 1;
  }

  async all(): Promise<DeploymentRow[]> {
    return (await this.pool.query<DeploymentRow>("SELECT * FROM deployments ORDER BY created_at, id")).rows;
  }

  async get(id: string): Promise<DeploymentRow | undefined> {
    return (await this.pool.query<DeploymentRow>("SELECT * FROM deployments WHERE id = $1", [id])).rows[0];
  }

  async named(tenantId: string, name: string): Promise<DeploymentRow | undefined> {
    const res = await this.pool.query<DeploymentRow>("SELECT * FROM deployments WHERE tenant_id = $1 AND name = $2", [tenantId, name]);
    return res.rows[0];
  }

  async ofTenant(tenantId: string): Promise<DeploymentRow[]> {
    const res = await this.pool.query<DeploymentRow>("SELECT * FROM deployments WHERE tenant_id = $1 ORDER BY created_at, id", [tenantId]);
    return res.rows;
  }

  async setStatus(id: string, status: DeploymentStatus, reason: string | null): Promise<void> {
    await this.pool.query("UPDATE deployments SET status = $1, reason = $2 WHERE id = $3", [status, reason, id]);
  }

  async remove(id: string): Promise<void> {
    await this.pool.query("DELETE FROM deployments WHERE id = $1", [id]);
  }

  async claim(id: string, from: string | null, to: string): Promise<boolean> {
    const res = await this.pool.query(
      "UPDATE deployments SET node_id = $1 WHERE id = $2 AND node_id IS NOT DISTINCT FROM $3 AND status <> 'deleting'",
      [to, id, from],
    );
    return res.rowCount === 1;
  }
}
