// Persistence: the embedded SQLite database (keys, tenants, sandbox records, usage) and its schema.
// Everything above this folder talks to the Store interfaces in keys.ts and sandboxes.ts, so that a
// PostgreSQL implementation can replace this one without touching the API or the sandbox layer.
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";

export type Db = Database.Database;

const MIGRATIONS: string[] = [
  `CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     tenant_id TEXT NOT NULL,
     name TEXT NOT NULL,
     prefix TEXT NOT NULL,
     hash TEXT NOT NULL UNIQUE,
     created_at TEXT NOT NULL,
     revoked_at TEXT,
     rate_limit_per_minute INTEGER,
     max_concurrent_runs INTEGER
   );
   CREATE TABLE sandboxes (
     id TEXT PRIMARY KEY,
     tenant_id TEXT NOT NULL,
     template TEXT NOT NULL,
     status TEXT NOT NULL,
     metadata TEXT NOT NULL,
     env_vars TEXT NOT NULL,
     cpu_count REAL NOT NULL,
     memory_mb INTEGER NOT NULL,
     host_uid INTEGER NOT NULL,
     started_at TEXT NOT NULL,
     timeout_at TEXT NOT NULL,
     ended_at TEXT
   );
   CREATE INDEX sandboxes_tenant ON sandboxes (tenant_id, started_at);
   CREATE INDEX sandboxes_status ON sandboxes (status);
   CREATE TABLE usage (
     key_id TEXT NOT NULL,
     model TEXT NOT NULL,
     prompt_tokens INTEGER NOT NULL,
     completion_tokens INTEGER NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX usage_key ON usage (key_id, created_at);`,
  // Per-tenant quotas set by an operator (src/store/tenants.ts); a NULL column means the default.
  `CREATE TABLE tenants (
     id TEXT PRIMARY KEY,
     max_sandboxes INTEGER,
     max_concurrent_runs INTEGER,
     memory_mb INTEGER,
     max_processes INTEGER,
     storage_mb INTEGER,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );`,
  // The operator's admin key (src/store/keys.ts AdminKeys), only as a hash; and when each API key
  // was last used (written at most once a minute per key, off the request path).
  `CREATE TABLE admin_keys (
     id TEXT PRIMARY KEY,
     prefix TEXT NOT NULL,
     hash TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;`,
];

export function openDb(dataDir: string): Db {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, "agentbox.db");
  const db = new Database(file);
  fs.chmodSync(file, 0o600);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

/** Creates an area's own tables and indexes (idempotent `CREATE ... IF NOT EXISTS` statements), so
 * areas can own their schema in their own store module without ordering against one another. */
export function ensureTables(db: Db, ddl: string): void {
  db.exec(ddl);
}

/** Adds a column to an existing table unless it is already there (SQLite has no `ADD COLUMN IF NOT
 * EXISTS`); true when it was added (so the caller can fill it in). */
export function addColumnIfMissing(db: Db, table: string, column: string, type: string): boolean {
  const cols = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
  if (cols.some((c) => c.name === column)) return false;
  db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
  return true;
}
