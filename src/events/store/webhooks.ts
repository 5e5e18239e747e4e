// Webhooks and their deliveries as stored: registrations per tenant, and every delivery with its
// state, next attempt and attempt log, so that pending deliveries survive a restart.
import crypto from "node:crypto";
import { type Db, type Migration, migrate } from "../../store/db.js";
import type { EventType } from "../bus.js";

export interface Webhook {
  id: string;
  tenantId: string;
  url: string;
  events: EventType[];
  secret: string;
  createdAt: string;
}

export type DeliveryState = "pending" | "delivered" | "failed";

export interface Attempt {
  at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

export interface Delivery {
  id: string;
  webhookId: string;
  tenantId: string;
  event: EventType;
  payload: string;
  state: DeliveryState;
  attempts: number;
  /** ms since the epoch. */
  createdAt: number;
  nextAttemptAt: number;
  log: Attempt[];
}

export interface HookRow {
  id: string;
  tenant_id: string;
  url: string;
  events: string;
  secret: string;
  created_at: string;
}

export interface DeliveryRow {
  id: string;
  webhook_id: string;
  tenant_id: string;
  event: EventType;
  payload: string;
  state: DeliveryState;
  attempts: number;
  created_at: number;
  next_attempt_at: number;
  log: string;
}

export const toHook = (r: HookRow): Webhook => ({
  id: r.id,
  tenantId: r.tenant_id,
  url: r.url,
  events: JSON.parse(r.events) as EventType[],
  secret: r.secret,
  createdAt: r.created_at,
});

export const toDelivery = (r: DeliveryRow): Delivery => ({
  id: r.id,
  webhookId: r.webhook_id,
  tenantId: r.tenant_id,
  event: r.event,
  payload: r.payload,
  state: r.state,
  attempts: r.attempts,
  createdAt: r.created_at,
  nextAttemptAt: r.next_attempt_at,
  log: JSON.parse(r.log) as Attempt[],
});

export interface WebhookStore {
  /** Registers a webhook unless the tenant has `maxPerTenant` already (checked and inserted in one
   * atomic step); undefined when it has. */
  addHook(tenantId: string, url: string, events: EventType[], secret: string, maxPerTenant: number): Promise<Webhook | undefined>;
  /** The tenant's webhooks, oldest first. */
  hooksOf(tenantId: string): Promise<Webhook[]>;
  countHooks(tenantId: string): Promise<number>;
  /** The tenant's webhook, or undefined (another tenant's webhook does not exist for it). */
  hook(tenantId: string, id: string): Promise<Webhook | undefined>;
  /** Removes a webhook and every delivery of it (pending ones are not sent any more). */
  deleteHook(id: string): Promise<void>;
  pendingCount(webhookId: string): Promise<number>;
  /**
   * Queues a delivery (due at once) as pending unless its webhook has `maxPending` pending already;
   * then it is stored as failed with `refusal` as its one attempt. Checked and inserted in one
   * atomic step; returns the state it got.
   */
  enqueue(d: NewDelivery, maxPending: number, refusal: Attempt): Promise<DeliveryState>;
  /** Pending deliveries whose next attempt is due at `now`, soonest first, except those of `skipHooks`. */
  due(now: number, limit: number, skipHooks?: string[]): Promise<Delivery[]>;
  /** When the next pending delivery is due (ms since the epoch), if any is pending. */
  nextDue(): Promise<number | undefined>;
  /**
   * Takes the next attempt of a pending delivery: counts it and moves its next attempt to `retryAt`,
   * only if the delivery is still pending with `attempts` attempts made (one atomic step). False when
   * another dispatcher (another node on the same database) took that attempt first.
   */
  claim(id: string, attempts: number, retryAt: number): Promise<boolean>;
  /** Writes a delivery's state, attempts, next attempt and log (the log cut to its first and last attempts). */
  save(d: Delivery): Promise<void>;
  /** The webhook's deliveries, newest first. */
  deliveries(webhookId: string, limit: number): Promise<Delivery[]>;
  /** Keeps the newest `keep` finished deliveries of every webhook. */
  trimHistory(keep: number): Promise<void>;
}

/** A delivery as queued: due at `createdAt`. */
export type NewDelivery = Omit<Delivery, "attempts" | "log" | "state" | "nextAttemptAt">;

/** Attempts kept in a delivery's log (the first few and the last ones tell the story). */
const MAX_LOG = 30;

/** A delivery's log as stored: cut to its first and last attempts. */
export const keptLog = (log: Attempt[]): Attempt[] => (log.length > MAX_LOG ? [...log.slice(0, 5), ...log.slice(-(MAX_LOG - 5))] : log);

/** A new webhook's record (its id made here). */
export const newHook = (tenantId: string, url: string, events: EventType[], secret: string): Webhook => ({
  id: `wh_${crypto.randomUUID()}`,
  tenantId,
  url,
  events,
  secret,
  createdAt: new Date().toISOString(),
});

export const WEBHOOK_MIGRATIONS: Migration[] = [
  {
    area: "webhooks",
    version: 1,
    // IF NOT EXISTS: databases from before versioned areas already have these tables.
    up: (db) =>
      db.exec(
        `CREATE TABLE IF NOT EXISTS webhooks (
         id TEXT PRIMARY KEY,
         tenant_id TEXT NOT NULL,
         url TEXT NOT NULL,
         events TEXT NOT NULL,
         secret TEXT NOT NULL,
         created_at TEXT NOT NULL
       );
       CREATE INDEX IF NOT EXISTS webhooks_by_tenant ON webhooks (tenant_id, created_at);
       CREATE TABLE IF NOT EXISTS webhook_deliveries (
         id TEXT PRIMARY KEY,
         webhook_id TEXT NOT NULL,
         tenant_id TEXT NOT NULL,
         event TEXT NOT NULL,
         payload TEXT NOT NULL,
         state TEXT NOT NULL,
         attempts INTEGER NOT NULL,
         created_at INTEGER NOT NULL,
         next_attempt_at INTEGER NOT NULL,
         log TEXT NOT NULL
       );
       CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
       CREATE INDEX IF NOT EXISTS webhook_deliveries_by_hook ON webhook_deliveries (webhook_id, state, created_at);`,
      ),
  },
];

export class SqliteWebhookStore implements WebhookStore {
  private readonly stmts;
  /** The pending count and the insert of enqueue(), in one transaction. */
  private readonly enqueueTx: (d: NewDelivery, maxPending: number, refusal: Attempt) => DeliveryState;

  constructor(private readonly db: Db) {
    migrate(db, WEBHOOK_MIGRATIONS);
    this.stmts = {
      // One statement: the count and the insert cannot be split by another registration.
      insertHook: db.prepare(
        `INSERT INTO webhooks (id, tenant_id, url, events, secret, created_at)
         SELECT @id, @tenant_id, @url, @events, @secret, @created_at
         WHERE (SELECT COUNT(*) FROM webhooks WHERE tenant_id = @tenant_id) < @max`,
      ),
      hooksOf: db.prepare<[string], HookRow>("SELECT * FROM webhooks WHERE tenant_id = ? ORDER BY created_at, id"),
      hook: db.prepare<[string], HookRow>("SELECT * FROM webhooks WHERE id = ?"),
      deleteHook: db.prepare("DELETE FROM webhooks WHERE id = ?"),
      deleteHookDeliveries: db.prepare("DELETE FROM webhook_deliveries WHERE webhook_id = ?"),
      countHooks: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM webhooks WHERE tenant_id = ?"),
      insertDelivery: db.prepare(
        `INSERT INTO webhook_deliveries (id, webhook_id, tenant_id, event, payload, state, attempts, created_at, next_attempt_at, log)
         VALUES (@id, @webhook_id, @tenant_id, @event, @payload, @state, 0, @created_at, @next_attempt_at, @log)`,
      ),
      pendingOf: db.prepare<[string], { n: number }>(
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ? AND state = 'pending'",
      ),
      due: db.prepare<[number, string, number], DeliveryRow>(
        `SELECT * FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?
           AND webhook_id NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_at LIMIT ?`,
      ),
      claim: db.prepare(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ? WHERE id = ? AND state = 'pending' AND attempts = ?",
      ),
      nextDue: db.prepare<[], { at: number | null }>("SELECT MIN(next_attempt_at) AS at FROM webhook_deliveries WHERE state = 'pending'"),
      update: db.prepare(
        "UPDATE webhook_deliveries SET state = @state, attempts = @attempts, next_attempt_at = @next_attempt_at, log = @log WHERE id = @id",
      ),
      deliveriesOf: db.prepare<[string, number], DeliveryRow>(
        "SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, id LIMIT ?",
      ),
      hookIds: db.prepare<[], { id: string }>("SELECT id FROM webhooks"),
      trimHistory: db.prepare(
        `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND state != 'pending' AND id NOT IN (
           SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND state != 'pending' ORDER BY created_at DESC LIMIT ?)`,
      ),
    };
    this.enqueueTx = db.transaction((d: NewDelivery, maxPending: number, refusal: Attempt): DeliveryState => {
      const full = (this.stmts.pendingOf.get(d.webhookId)?.n ?? 0) >= maxPending;
      const state: DeliveryState = full ? "failed" : "pending";
      this.stmts.insertDelivery.run({
        id: d.id,
        webhook_id: d.webhookId,
        tenant_id: d.tenantId,
        event: d.event,
        payload: d.payload,
        state,
        created_at: d.createdAt,
        next_attempt_at: d.createdAt,
        log: JSON.stringify(full ? [refusal] : []),
      });
      return state;
    });
  }

  async addHook(tenantId: string, url: string, events: EventType[], secret: string, maxPerTenant: number): Promise<Webhook | undefined> {
    const hook = newHook(tenantId, url, events, secret);
    const res = this.stmts.insertHook.run({
      id: hook.id,
      tenant_id: tenantId,
      url,
      events: JSON.stringify(events),
      secret,
      created_at: hook.createdAt,
      max: maxPerTenant,
    });
    return res.changes === 1 ? hook : undefined;
  }

  async hooksOf(tenantId: string): Promise<Webhook[]> {
    return this.stmts.hooksOf.all(tenantId).map(toHook);
  }

  async countHooks(tenantId: string): Promise<number> {
    return this.stmts.countHooks.get(tenantId)?.n ?? 0;
  }

  async hook(tenantId: string, id: string): Promise<Webhook | undefined> {
    const row = this.stmts.hook.get(id);
    return row && row.tenant_id === tenantId ? toHook(row) : undefined;
  }

  async deleteHook(id: string): Promise<void> {
    this.db.transaction(() => {
      this.stmts.deleteHook.run(id);
      this.stmts.deleteHookDeliveries.run(id);
    })();
  }

  async pendingCount(webhookId: string): Promise<number> {
    return this.stmts.pendingOf.get(webhookId)?.n ?? 0;
  }

  async enqueue(d: NewDelivery, maxPending: number, refusal: Attempt): Promise<DeliveryState> {
    return this.enqueueTx(d, maxPending, refusal);
  }

  async due(now: number, limit: number, skipHooks: string[] = []): Promise<Delivery[]> {
    return this.stmts.due.all(now, JSON.stringify(skipHooks), limit).map(toDelivery);
  }

  async nextDue(): Promise<number | undefined> {
    return this.stmts.nextDue.get()?.at ?? undefined;
  }

  async claim(id: string, attempts: number, retryAt: number): Promise<boolean> {
    return this.stmts.claim.run(retryAt, id, attempts).changes === 1;
  }

  async save(d: Delivery): Promise<void> {
    this.stmts.update.run({
      id: d.id,
      state: d.state,
      attempts: d.attempts,
      next_attempt_at: d.nextAttemptAt,
      log: JSON.stringify(keptLog(d.log)),
    });
  }

  async deliveries(webhookId: string, limit: number): Promise<Delivery[]> {
    return this.stmts.deliveriesOf.all(webhookId, limit).map(toDelivery);
  }

  async trimHistory(keep: number): Promise<void> {
    for (const { id } of this.stmts.hookIds.all()) this.stmts.trimHistory.run(id, id, keep);
  }
}
