// The network policies of live sandboxes in PostgreSQL (the twin of store.ts).
import { migratePg, type PgMigration, type PgPool } from "../store/pg.js";
import type { NetworkPolicy } from "./policy.js";
import type { NetworkStore, StoredPolicy } from "./store.js";

export const PG_NETWORK_MIGRATIONS: PgMigration[] = [
  {
    area: "network",
    version: 1,
    sql: `CREATE TABLE sandbox_network (sandbox_id TEXT COLLATE "C" PRIMARY KEY, tenant_id TEXT COLLATE "C" NOT NULL, policy TEXT NOT NULL)`,
  },
];

export class PgNetworkStore implements NetworkStore {
  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgNetworkStore> {
    await migratePg(pool, PG_NETWORK_MIGRATIONS);
    return new PgNetworkStore(pool);
  }

  async save(sandboxId: string, tenantId: string, policy: NetworkPolicy): Promise<void> {
    await this.pool.query(
      "INSERT INTO sandbox_network (sandbox_id, tenant_id, policy) VALUES ($1, $2, $3) ON CONFLICT (sandbox_id) DO UPDATE SET policy = excluded.policy",
      [sandboxId, tenantId, JSON.stringify(policy)],
    );
  }

  async remove(sandboxId: string): Promise<void> {
    await this.pool.query("DELETE FROM sandbox_network WHERE sandbox_id = $1", [sandboxId]);
  }

  async all(): Promise<StoredPolicy[]> {
    const { rows } = await this.pool.query<{ sandbox_id: string; tenant_id: string; policy: string }>(
      "SELECT sandbox_id, tenant_id, policy FROM sandbox_network ORDER BY sandbox_id",
    );
    return rows.map((r) => ({ sandboxId: r.sandbox_id, tenantId: r.tenant_id, policy: JSON.parse(r.policy) as NetworkPolicy }));
  }
}
