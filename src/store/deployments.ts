// Deployment rows: what each tenant asked to run (model, replica bounds, hardware) and the
// deployment's last known status. The replicas themselves live only in memory (src/deployments/).
import { type Db, type Migration, migrate } from "./db.js";

export type DeploymentStatus = "creating" | "running" | "failed" | "deleting";

export interface DeploymentRow {
  id: string;
  tenant_id: string;
  name: string;
  model_name: string;
  hw_type: string;
  gpu_model: string | null;
  gpu_count: number;
  min_replicas: number;
  max_replicas: number;
  status: DeploymentStatus;
  /** Why the deployment failed (a replica's last words), or null. */
  reason: string | null;
  created_at: string;
}

export interface DeploymentStore {
  /** Inserts a row; false when the tenant already has a deployment of that name (checked by the insert itself). */
  insert(row: DeploymentRow): Promise<boolean>;
  /** Every row, oldest first. */
  all(): Promise<DeploymentRow[]>;
  setStatus(id: string, status: DeploymentStatus, reason: string | null): Promise<void>;
  remove(id: string): Promise<void>;
}

export const DEPLOYMENT_MIGRATIONS: Migration[] = [
  {
    area: "deployments",
    version: 1,
    // IF NOT EXISTS: databases from before versioned areas already have the table.
    up: (db) =>
      db.exec(
        `CREATE TABLE IF NOT EXISTS deployments (
          id TEXT PRIMARY KEY,
          tenant_id TEXT NOT NULL,
          name TEXT NOT NULL,
          model_name TEXT NOT NULL,
          hw_type TEXT NOT NULL,
          gpu_model TEXT,
          gpu_count INTEGER NOT NULL,
          min_replicas INTEGER NOT NULL,
          max_replicas INTEGER NOT NULL,
          status TEXT NOT NULL,
          reason TEXT,
          created_at TEXT NOT NULL,
          UNIQUE (tenant_id, name)
        )`,
      ),
  },
];

export class SqliteDeploymentStore implements DeploymentStore {
  private readonly stmts;

  constructor(db: Db) {
    migrate(db, DEPLOYMENT_MIGRATIONS);
    this.stmts = {
      insert: db.prepare(
        `INSERT OR IGNORE INTO deployments (id, tenant_id, name, model_name, hw_type, gpu_model, gpu_count, min_replicas,
          max_replicas, status, reason, created_at)
         VALUES (@id, @tenant_id, @name, @model_name, @hw_type, @gpu_model, @gpu_count, @min_replicas, @max_replicas,
          @status, @reason, @created_at)`,
      ),
      all: db.prepare<[], DeploymentRow>("SELECT * FROM deployments ORDER BY created_at, id"),
      setStatus: db.prepare("UPDATE deployments SET status = ?, reason = ? WHERE id = ?"),
      remove: db.prepare("DELETE FROM deployments WHERE id = ?"),
    };
  }

  async insert(row: DeploymentRow): Promise<boolean> {
    return this.stmts.insert.run(row).changes === 1;
  }

  async all(): Promise<DeploymentRow[]> {
    return this.stmts.all.all();
  }

  async setStatus(id: string, status: DeploymentStatus, reason: string | null): Promise<void> {
    this.stmts.setStatus.run(status, reason, id);
  }

  async remove(id: string): Promise<void> {
    this.stmts.remove.run(id);
  }
}
