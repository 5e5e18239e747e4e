// The network policy of each live sandbox, kept in the database so that a sandbox re-adopted after
// a restart of the service gets its policy back.
import type { Database } from "better-sqlite3";
import { ensureTables } from "../store/db.js";
import type { NetworkPolicy } from "./policy.js";

export class NetworkStore {
  constructor(private readonly db: Database) {
    ensureTables(
      db,
      "CREATE TABLE IF NOT EXISTS sandbox_network (sandbox_id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, policy TEXT NOT NULL)",
    );
  }

  save(sandboxId: string, tenantId: string, policy: NetworkPolicy): void {
    this.db
      .prepare(
        "INSERT INTO sandbox_network (sandbox_id, tenant_id, policy) VALUES (?, ?, ?) ON CONFLICT(sandbox_id) DO UPDATE SET policy = excluded.policy",
      )
      .run(sandboxId, tenantId, JSON.stringify(policy));
  }

  remove(sandboxId: string): void {
    this.db.prepare("DELETE FROM sandbox_network WHERE sandbox_id = ?").run(sandboxId);
  }

  all(): { sandboxId: string; tenantId: string; policy: NetworkPolicy }[] {
    const rows = this.db.prepare("SELECT sandbox_id, tenant_id, policy FROM sandbox_network").all() as {
      sandbox_id: string;
      tenant_id: string;
      policy: string;
    }[];
    return rows.map((r) => ({ sandboxId: r.sandbox_id, tenantId: r.tenant_id, policy: JSON.parse(r.policy) as NetworkPolicy }));
  }
}
