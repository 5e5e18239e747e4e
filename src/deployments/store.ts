// Deployment rows: what each tenant asked to run (model, replica bounds, hardware), the
// deployment's last known status, and the node that runs its replicas. The replicas themselves
// live only in that node's memory (src/deployments/).
import { type Db, type Migration, migrate } from "../store/db.js";

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
  /**
   * The node that runs its replicas (AGENTBOX_NODE_ID); null in rows from before nodes were
   * recorded. In a cluster, a lost node's deployments are claimed by another node (claim()).
   */
  node_id: string | null;
}

export interface DeploymentStore {
  /** Inserts a row; false when the tenant already has a deployment of that name (checked by the insert itself). */
  insert(row: DeploymentRow): Promise<boolean>;
  /** Every row, oldest first. */
  all(): Promise<DeploymentRow[]>;
  /** One row by id, or undefined. */
  get(id: string): Promise<DeploymentRow | undefined>;
  /** The tenant's row of that name, or undefined. */
  named(tenantId: string, name: string): Promise<DeploymentRow | undefined>;
  /** The tenant's rows, oldest first. */
  ofTenant(tenantId: string): Promise<DeploymentRow[]>;
  setStatus(id: string, status: DeploymentStatus, reason: string | null): Promise<void>;
  remove(id: string): Promise<void>;
  /**
   * Makes `to` the node of a deployment still on `from` (and not being deleted), in one
   * conditional update: of several nodes claiming one deployment at once, one gets true.
   */
  claim(id: string, from: string | null, to: string): Promise<boolean>;
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
  {
    area: "deployments",
    version: 2,
    up: (db) => db.exec("ALTER TABLE deployments ADD COLUMN node_id TEXT"),
  },
];

export class SqliteDeploymentStore implements DeploymentStore {
  private readonly stmts;

  constructor(db: Db) {
    migrate(db, DEPLOYMENT_MIGRATIONS);
    this.stmts = {
      insert: db.prepare(
        `INSERT OR IGNORE INTO deployments (id, tenant_id, name, model_name, hw_type, gpu_model, gpu_count, min_replicas,
          max_replicas, status, reason, created_at, node_id)
         VALUES (@id, @tenant_id, @name, @model_name, @hw_type, @gpu_model, @gpu_count, @min_replicas, @max_replicas,
          @status, @reason, @created_at, @node_id)`,
      ),
      all: db.prepare<[], DeploymentRow>("SELECT * FROM deployments ORDER BY created_at, id"),
      get: db.prepare<[string], DeploymentRow>("SELECT * FROM deployments WHERE id = ?"),
      named: db.prepare<[string, string], DeploymentRow>("SELECT * FROM deployments WHERE tenant_id = ? AND name = ?"),
      ofTenant: db.prepare<[string], DeploymentRow>("SELECT * FROM deployments WHERE tenant_id = ? ORDER BY created_at, id"),
      setStatus: db.prepare("UPDATE deployments SET status = ?, reason = ? WHERE id = ?"),
      remove: db.prepare("DELETE FROM deployments WHERE id = ?"),
      claim: db.prepare("UPDATE deployments SET node_id = ? WHERE id = ? AND node_id IS ? AND status <> 'deleting'"),
    };
  }

  async insert(row: DeploymentRow): Promise<boolean> {
    return this.stmts.insert.run(row).changes === 1;
  }

  async all(): Promise<DeploymentRow[]> {
    return this.stmts.all.all();
  }

  async get(id: string): Promise<DeploymentRow | undefined> {
    return this.stmts.get.get(id);
  }

  async named(tenantId: string, name: string): Promise<DeploymentRow | undefined> {
    return this.stmts.named.get(tenantId, name);
  }

  async ofTenant(tenantId: string): Promise<DeploymentRow[]> {
    return this.stmts.ofTenant.all(tenantId);
  }

  async setStatus(id: string, status: DeploymentStatus, reason: string | null): Promise<void> {
    this.stmts.setStatus.run(status, reason, id);
  }

  async remove(id: string): Promise<void> {
    this.stmts.remove.run(id);
  }

  async claim(id: string, from: string | null, to: string): Promise<boolean> {
    return this.stmts.claim.run(to, id, from).changes === 1;
  }
}
