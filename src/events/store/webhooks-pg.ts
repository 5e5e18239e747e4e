// Webhooks and their deliveries in PostgreSQL (the twin of webhooks.ts). The checks that must be one
// atomic step with their insert (webhooks per tenant, pending deliveries per webhook) take a
// transaction-scoped advisory lock on the tenant or the webhook, so they hold across nodes too.
import type { EventType } from "../bus.js";
import { inTransaction, migratePg, type PgMigration, type PgPool } from "../../store/pg.js";
import {
  type Attempt,
  type Delivery,
  type DeliveryRow,
  type DeliveryState,
  type HookRow,
  keptLog,
  type NewDelivery,
  newHook,
  toDelivery,
  toHook,
  type Webhook,
  type WebhookStore,
} from "./webhooks.js";

export const PG_WEBHOOK_MIGRATIONS: PgMigration[] = [
  {
    area: "webhooks",
    version: 1,
    sql: `CREATE TABLE webhooks (
       id TEXT COLLATE "C" PRIMARY KEY,
       tenant_id TEXT COLLATE "C" NOT NULL,
       url TEXT COLLATE "C" NOT NULL,
       events TEXT COLLATE "C" NOT NULL,
       secret TEXT COLLATE "C" NOT NULL,
       created_at TEXT COLLATE "C" NOT NULL
     );
     CREATE INDEX webhooks_by_tenant ON webhooks (tenant_id, created_at);
     CREATE TABLE webhook_deliveries (
       id TEXT COLLATE "C" PRIMARY KEY,
       webhook_id TEXT COLLATE "C" NOT NULL,
       tenant_id TEXT COLLATE "C" NOT NULL,
       event TEXT COLLATE "C" NOT NULL,
       payload TEXT COLLATE "C" NOT NULL,
       state TEXT COLLATE "C" NOT NULL,
       attempts INTEGER NOT NULL,
       created_at BIGINT NOT NULL,
       next_attempt_at BIGINT NOT NULL,
       log TEXT COLLATE "C" NOT NULL
     );
     CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
     CREATE INDEX webhook_deliveries_by_hook ON webhook_deliveries (webhook_id, state, created_at);`,
  },
];

/** The advisory lock of one tenant's or one webhook's count (hashtext: a 32-bit key from the id). */
const LOCK = "SELECT pg_advisory_xact_lock(hashtext($1))";

export class PgWebhookStore implements WebhookStore {
  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgWebhookStore> {
    await migratePg(pool, PG_WEBHOOK_MIGRATIONS);
    return new PgWebhookStore(pool);
  }

  async addHook(tenantId: string, url: string, events: EventType[], secret: string, maxPerTenant: number): Promise<Webhook | undefined> {
    const hook = newHook(tenantId, url, events, secret);
    return inTransaction(this.pool, async (c) => {
      await c.query(LOCK, [`webhooks:${tenantId}`]);
      const res = await c.query(
        `INSERT INTO webhooks (id, tenant_id, url, events, secret, created_at)
         SELECT $1, $2, $3, $4, $5, $6 WHERE (SELECT COUNT(*) FROM webhooks WHERE tenant_id = $2) < $7`,
        [hook.id, tenantId, url, JSON.stringify(events), secret, hook.createdAt, maxPerTenant],
      );
      return res.rowCount === 1 ? hook : undefined;
    });
  }

  async hooksOf(tenantId: string): Promise<Webhook[]> {
    const { rows } = await this.pool.query<HookRow>("SELECT * FROM webhooks WHERE tenant_id = $1 ORDER BY created_at, id", [tenantId]);
    return rows.map(toHook);
  }

  async countHooks(tenantId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>("SELECT COUNT(*) AS n FROM webhooks WHERE tenant_id = $1", [tenantId]);
    return rows[0]?.n ?? 0;
  }

  async hook(tenantId: string, id: string): Promise<Webhook | undefined> {
    const { rows } = await this.pool.query<HookRow>("SELECT * FROM webhooks WHERE id = $1 AND tenant_id = $2", [id, tenantId]);
    return rows[0] && toHook(rows[0]);
  }

  async deleteHook(id: string): Promise<void> {
    await inTransaction(this.pool, async (c) => {
      await c.query("DELETE FROM webhooks WHERE id = $1", [id]);
      await c.query("DELETE FROM webhook_deliveries WHERE webhook_id = $1", [id]);
    });
  }

  async pendingCount(webhookId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = $1 AND state = 'pending'",
      [webhookId],
    );
    return rows[0]?.n ?? 0;
  }

  async enqueue(d: NewDelivery, maxPending: number, refusal: Attempt): Promise<DeliveryState> {
    return inTransaction(this.pool, async (c) => {
      await c.query(LOCK, [`deliveries:${d.webhookId}`]);
      const { rows } = await c.query<{ n: number }>(
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = $1 AND state = 'pending'",
        [d.webhookId],
      );
      const full = (rows[0]?.n ?? 0) >= maxPending;
      const state: DeliveryState = full ? "failed" : "pending";
      await c.query(
        `INSERT INTO webhook_deliveries (id, webhook_id, tenant_id, event, payload, state, attempts, created_at, next_attempt_at, log)
         VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $7, $8)`,
        [d.id, d.webhookId, d.tenantId, d.event, d.payload, state, d.createdAt, JSON.stringify(full ? [refusal] : [])],
      );
      return state;
    });
  }

  async due(now: number, limit: number, skipHooks: string[] = []): Promise<Delivery[]> {
    const { rows } = await this.pool.query<DeliveryRow>(
      `SELECT * FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= $1 AND webhook_id <> ALL($2::text[])
       ORDER BY next_attempt_at LIMIT $3`,
      [now, skipHooks, limit],
    );
    return rows.map(toDelivery);
  }

  async nextDue(): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ at: number | null }>(
      "SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE state = 'pending'",
    );
    return rows[0]?.at ?? undefined;
  }

  async claim(id: string, attempts: number, retryAt: number): Promise<boolean> {
    // One conditional update: of several nodes reading the same due delivery, one takes the attempt.
    const res = await this.pool.query(
      "UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = $1 WHERE id = $2 AND state = 'pending' AND attempts = $3",
      [retryAt, id, attempts],
    );
    return res.rowCount === 1;
  }

  async save(d: Delivery): Promise<void> {
    await this.pool.query("UPDATE webhook_deliveries SET state = $1, attempts = $2, next_attempt_at = $3, log = $4 WHERE id = $5", [
      d.state,
      d.attempts,
      d.nextAttemptAt,
      JSON.stringify(keptLog(d.log)),
      d.id,
    ]);
  }

  async deliveries(webhookId: string, limit: number): Promise<Delivery[]> {
    const { rows } = await this.pool.query<DeliveryRow>(
      "SELECT * FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC, id LIMIT $2",
      [webhookId, limit],
    );
    return rows.map(toDelivery);
  }

  async trimHistory(keep: number): Promise<void> {
    // Every webhook at once: the finished deliveries past each one's newest `keep`.
    await this.pool.query(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM (
           SELECT id, ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY created_at DESC) AS n
             FROM webhook_deliveries WHERE state <> 'pending') AS finished
         WHERE n > $1)`,
      [keep],
    );
  }
}
