// The network policy of each live sandbox, kept in the database so that a sandbox re-adopted after
// a restart of the service gets its policy back.
import { type Db, type Migration, migrate } from "../store/db.js";
import type { NetworkPolicy } from "./policy.js";

export interface StoredPolicy {
  sandboxId: string;
  tenantId: string;
  policy: NetworkPolicy;
}

export interface NetworkStore {
  /** Sets the sandbox's policy (a second save replaces it; the tenant stays the first one's). */
  save(sandboxId: string, tenantId: string, policy: NetworkPolicy): Promise<void>;
  remove(sandboxId: string): Promise<void>;
  all(): Promise<StoredPolicy[]>;
}

export const NETWORK_MIGRATIONS: Migration[] = [
  {
    area: "network",
    version: 1,
    // IF NOT EXISTS: databases from before versioned areas already have the table.
    up: (db) =>
      db.exec("CREATE TABLE IF NOT EXISTS sandbox_network (sandbox_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, policy TEXT NOT NULL)"),
  },
];

export class SqliteNetworkStore implements NetworkStore {
  private readonly stmts;

  constructor(db: Db) {
    migrate(db, NETWORK_MIGRATIONS);
    this.stmts = {
      save: db.prepare(
        "INSERT INTO sandbox_network (sandbox_id, tenant_id, policy) VALUES (?, ?, ?) ON CONFLICT(sandbox_id) DO UPDATE SET policy = excluded.policy",
      ),
      remove: db.prepare("DELETE FROM sandbox_network WHERE sandbox_id = ?"),
      all: db.prepare<[], { sandbox_id: string; tenant_id: string; policy: string }>(
        "SELECT sandbox_id, tenant_id, policy FROM sandbox_network ORDER BY sandbox_id",
      ),
    };
  }

  async save(sandboxId: string, tenantId: string, policy: NetworkPolicy): Promise<void> {
    this.stmts.save.run(sandboxId, tenantId, JSON.stringify(policy));
  }

  async remove(sandboxId: string): Promise<void> {
    this.stmts.remove.run(sandboxId);
  }

  async all(): Promise<StoredPolicy[]> {
    return this.stmts.all
      .all()
      .map((r) => ({ sandboxId: r.sandbox_id, tenantId: r.tenant_id, policy: JSON.parse(r.policy) as NetworkPolicy }));
  }
}
