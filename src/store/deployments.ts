// Deployment rows: what each tenant asked to run (model, replica bounds, hardware) and the
// deployment's last known status. The replicas themselves live only in memory (src/deployments/).
import type { Database } from "better-sqlite3";
import { ensureTables } from "./db.js";

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

export class DeploymentStore {
  constructor(private readonly db: Database) {
    ensureTables(
      db,
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
    );
  }

  /** Inserts a row; false when the tenant already has a deployment of that name. */
  insert(row: DeploymentRow): boolean {
    const r = this.db
      .prepare(
        `INSERT OR IGNORE INTO deployments (id, tenant_id, name, model_name, hw_type, gpu_model, gpu_count, min_replicas,
          max_replicas, status, reason, created_at)
         VALUES (@id, @tenant_id, @name, @model_name, @hw_type, @gpu_model, @gpu_count, @min_replicas, @max_replicas,
          @status, @reason, @created_at)`,
      )
      .run(row);
    return r.changes === 1;
  }

  all(): DeploymentRow[] {
    return this.db.prepare("SELECT * FROM deployments ORDER BY created_at, id").all() as DeploymentRow[];
  }

  setStatus(id: string, status: DeploymentStatus, reason: string | null): void {
    this.db.prepare("UPDATE deployments SET status = ?, reason = ? WHERE id = ?").run(status, reason, id);
  }

  remove(id: string): void {
    this.db.prepare("DELETE FROM deployments WHERE id = ?").run(id);
  }
}
