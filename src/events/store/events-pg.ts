// Sandbox lifecycle events in PostgreSQL (the twin of events.ts): a bounded history per sandbox, so
// any node can answer GET /sandboxes/{id}/events for a sandbox another node runs.
import type { EmittedEvent } from "../bus.js";
import { inTransaction, migratePg, type PgMigration, type PgPool } from "../../store/pg.js";
import { type EventRow, type EventStore, eventColumns, type StoredEvent, toStoredEvent } from "./events.js";

export const PG_EVENT_MIGRATIONS: PgMigration[] = [
  {
    area: "events",
    version: 1,
    sql: `CREATE TABLE sandbox_events (
       id BIGSERIAL PRIMARY KEY,
       sandbox_id TEXT COLLATE "C" NOT NULL,
       tenant_id TEXT COLLATE "C" NOT NULL,
       type TEXT COLLATE "C" NOT NULL,
       at TEXT COLLATE "C" NOT NULL,
       reason TEXT COLLATE "C",
       detail TEXT COLLATE "C" NOT NULL
     );
     CREATE INDEX sandbox_events_by_sandbox ON sandbox_events (sandbox_id, id);`,
  },
];

/** Events are pruned by their sandbox's end: open this after the sandbox records' store (the
 * `sandboxes` table), as the service does. */
export class PgEventStore implements EventStore {
  private constructor(
    private readonly pool: PgPool,
    private readonly perSandbox: number,
  ) {}

  static async open(pool: PgPool, perSandbox: number): Promise<PgEventStore> {
    await migratePg(pool, PG_EVENT_MIGRATIONS);
    return new PgEventStore(pool, perSandbox);
  }

  async add(event: EmittedEvent): Promise<void> {
    const { reason, detail } = eventColumns(event);
    await inTransaction(this.pool, async (c) => {
      await c.query("INSERT INTO sandbox_events (sandbox_id, tenant_id, type, at, reason, detail) VALUES ($1, $2, $3, $4, $5, $6)", [
        event.sandboxId,
        event.tenantId,
        event.type,
        event.at,
        reason,
        detail,
      ]);
      // Keeps the newest `perSandbox` events of the sandbox.
      await c.query(
        `DELETE FROM sandbox_events WHERE sandbox_id = $1 AND id <= (
           SELECT id FROM sandbox_events WHERE sandbox_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`,
        [event.sandboxId, this.perSandbox],
      );
    });
  }

  async list(tenantId: string, sandboxId: string): Promise<StoredEvent[]> {
    const { rows } = await this.pool.query<EventRow>(
      "SELECT type, at, reason, detail FROM sandbox_events WHERE sandbox_id = $1 AND tenant_id = $2 ORDER BY id LIMIT $3",
      [sandboxId, tenantId, this.perSandbox],
    );
    return rows.map(toStoredEvent);
  }

  async prune(cutoff: string): Promise<number> {
    const res = await this.pool.query(
      "DELETE FROM sandbox_events WHERE sandbox_id IN (SELECT id FROM sandboxes WHERE ended_at IS NOT NULL AND ended_at < $1)",
      [cutoff],
    );
    return res.rowCount ?? 0;
  }
}
