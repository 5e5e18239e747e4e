// Sandbox lifecycle events as stored: a bounded history per sandbox, kept for a retention period
// after the sandbox ended (what GET /sandboxes/{id}/events serves).
import type { EmittedEvent, EventType } from "../bus.js";
import { type Db, type Migration, migrate } from "../../store/db.js";

export interface StoredEvent {
  type: EventType;
  at: string;
  reason: string | null;
  detail: Record<string, unknown>;
}

export interface EventStore {
  /** Appends an event and keeps only the sandbox's newest `perSandbox` (one atomic step). */
  add(event: EmittedEvent): Promise<void>;
  /** The sandbox's events, oldest first (the caller has checked the sandbox is the tenant's). */
  list(tenantId: string, sandboxId: string): Promise<StoredEvent[]>;
  /** Removes the events of sandboxes that ended before `cutoff` (ISO-8601); returns how many. */
  prune(cutoff: string): Promise<number>;
}

/** The serialised detail of one event is cut to this (a detail is a few ids and numbers). */
const MAX_DETAIL_CHARS = 4096;

/** An event's columns as stored: its end reason (if it is an end) and its detail as JSON, cut to MAX_DETAIL_CHARS. */
export function eventColumns(event: EmittedEvent): { reason: string | null; detail: string } {
  const reason = event.type === "ended" ? event.reason : null;
  const detail: Record<string, unknown> = { ...event.detail };
  if (event.type === "ended" && event.by) detail.by = event.by;
  const text = JSON.stringify(detail);
  return { reason, detail: text.length > MAX_DETAIL_CHARS ? JSON.stringify({ truncated: true }) : text };
}

export interface EventRow {
  type: EventType;
  at: string;
  reason: string | null;
  detail: string;
}

export const toStoredEvent = (r: EventRow): StoredEvent => ({
  type: r.type,
  at: r.at,
  reason: r.reason,
  detail: JSON.parse(r.detail) as Record<string, unknown>,
});

export const EVENT_MIGRATIONS: Migration[] = [
  {
    area: "events",
    version: 1,
    // IF NOT EXISTS: databases from before versioned areas already have these tables.
    up: (db) =>
      db.exec(
        `CREATE TABLE IF NOT EXISTS sandbox_events (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         sandbox_id TEXT NOT NULL,
         tenant_id TEXT NOT NULL,
         type TEXT NOT NULL,
         at TEXT NOT NULL,
         reason TEXT,
         detail TEXT NOT NULL
       );
       CREATE INDEX IF NOT EXISTS sandbox_events_by_sandbox ON sandbox_events (sandbox_id, id);`,
      ),
  },
];

export class SqliteEventStore implements EventStore {
  private readonly stmts;

  constructor(
    private readonly db: Db,
    private readonly perSandbox: number,
  ) {
    migrate(db, EVENT_MIGRATIONS);
    this.stmts = {
      insert: db.prepare("INSERT INTO sandbox_events (sandbox_id, tenant_id, type, at, reason, detail) VALUES (?, ?, ?, ?, ?, ?)"),
      // Keeps the newest `perSandbox` events of the sandbox.
      trim: db.prepare(
        `DELETE FROM sandbox_events WHERE sandbox_id = ? AND id <= (
           SELECT id FROM sandbox_events WHERE sandbox_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
      ),
      list: db.prepare<[string, string, number], EventRow>(
        "SELECT type, at, reason, detail FROM sandbox_events WHERE sandbox_id = ? AND tenant_id = ? ORDER BY id LIMIT ?",
      ),
      prune: db.prepare(
        `DELETE FROM sandbox_events WHERE sandbox_id IN (
           SELECT id FROM sandboxes WHERE ended_at IS NOT NULL AND ended_at < ?)`,
      ),
    };
  }

  async add(event: EmittedEvent): Promise<void> {
    const { reason, detail } = eventColumns(event);
    this.db.transaction(() => {
      this.stmts.insert.run(event.sandboxId, event.tenantId, event.type, event.at, reason, detail);
      this.stmts.trim.run(event.sandboxId, event.sandboxId, this.perSandbox);
    })();
  }

  async list(tenantId: string, sandboxId: string): Promise<StoredEvent[]> {
    return this.stmts.list.all(sandboxId, tenantId, this.perSandbox).map(toStoredEvent);
  }

  async prune(cutoff: string): Promise<number> {
    return this.stmts.prune.run(cutoff).changes;
  }
}
