// Persistence: the embedded SQLite database, and the one migration runner every area's schema goes
// through (numbered versions per area, recorded in `schema_migrations`). Above this floor code talks
// to the async Store interfaces next to each implementation, so another database can replace SQLite.
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";

export type Db = Database.Database;

/** One step of an area's schema: run once, in a transaction, in the order of `version` within the area. */
export interface Migration {
  /** The area that owns the tables (one sequence of versions per area). */
  area: string;
  /** 1, 2, 3 ... within the area; a new schema change is a new version, never an edit of an old one. */
  version: number;
  up(db: Db): void;
}

/** Keys, sandbox records, usage, tenants and the admin key: the tables every server has. These three
 * steps were counted in `PRAGMA user_version` before areas had versions of their own. */
export const CORE_MIGRATIONS: Migration[] = [
  {
    area: "core",
    version: 1,
    up: (db) =>
      db.exec(`CREATE TABLE api_keys (
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
   CREATE INDEX usage_key ON usage (key_id, created_at);`),
  },

  // Per-tenant quotas set by an operator (src/tenancy/store/tenants.ts); a NULL column means the default.
  {
    area: "core",
    version: 2,
    up: (db) =>
      db.exec(`CREATE TABLE tenants (
     id TEXT PRIMARY KEY,
     max_sandboxes INTEGER,
     max_concurrent_runs INTEGER,
     memory_mb INTEGER,
     max_processes INTEGER,
     storage_mb INTEGER,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );`),
  },

  // The operator's admin key (src/tenancy/store/keys.ts AdminKeys), only as a hash; and when each API key
  // was last used (written at most once a minute per key, off the request path).
  {
    area: "core",
    version: 3,
    up: (db) =>
      db.exec(`CREATE TABLE admin_keys (
     id TEXT PRIMARY KEY,
     prefix TEXT NOT NULL,
     hash TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;`),
  },
];

/** Opens (creating it if need be) a SQLite file with the settings every database here uses. */
export function openSqlite(file: string): Db {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file);
  fs.chmodSync(file, 0o600);
  db.pragma("journal_mode = WAL");
  // A committed write survives the process being killed (it is in the WAL); NORMAL skips the
  // per-commit fsync that only power loss would need.
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  return db;
}

/** The database of the data dir (`<dataDir>/agentbox.db`), or the file AGENTBOX_DATABASE_FILE names. */
export function openDb(dataDir: string, file = path.join(dataDir, "agentbox.db")): Db {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = openSqlite(file);
  migrate(db, CORE_MIGRATIONS);
  return db;
}

/**
 * The one migration runner: applies the given migrations that the database has not had yet, each in
 * its own transaction together with its row in `schema_migrations` (area, version), in version
 * order per area. Every area's store calls it with its own list when it opens, so an area owns its
 * schema and needs no ordering against the others; calling it again is a no-op.
 */
export function migrate(db: Db, migrations: readonly Migration[]): void {
  db.exec(
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       area TEXT NOT NULL,
       version INTEGER NOT NULL,
       applied_at TEXT NOT NULL,
       PRIMARY KEY (area, version)
     )`,
  );
  adoptUserVersion(db);
  const key = (m: { area: string; version: number }) => `${m.area}\0${m.version}`;
  const applied = new Set(db.prepare<[], { area: string; version: number }>("SELECT area, version FROM schema_migrations").all().map(key));
  const record = db.prepare("INSERT INTO schema_migrations (area, version, applied_at) VALUES (?, ?, ?)");
  const ordered = [...migrations].sort((a, b) => (a.area < b.area ? -1 : a.area > b.area ? 1 : a.version - b.version));
  for (const m of ordered) {
    if (applied.has(key(m))) continue;
    db.transaction(() => {
      m.up(db);
      record.run(m.area, m.version, new Date().toISOString());
    })();
    applied.add(key(m));
  }
}

/** The versions of an area the database has had, in order. */
export function appliedVersions(db: Db, area: string): number[] {
  return db
    .prepare<[string], { version: number }>("SELECT version FROM schema_migrations WHERE area = ? ORDER BY version")
    .all(area)
    .map((r) => r.version);
}

/** Databases from before `schema_migrations` counted the core steps in `PRAGMA user_version`: those are
 * recorded as applied once (and the pragma cleared), so they are not run again. */
function adoptUserVersion(db: Db): void {
  const legacy = db.pragma("user_version", { simple: true }) as number;
  if (legacy === 0) return;
  db.transaction(() => {
    const at = new Date().toISOString();
    const insert = db.prepare("INSERT OR IGNORE INTO schema_migrations (area, version, applied_at) VALUES ('core', ?, ?)");
    for (let v = 1; v <= legacy; v++) insert.run(v, at);
    db.pragma("user_version = 0");
  })();
}

/**
 * Adds a column unless it is already there (SQLite has no `ADD COLUMN IF NOT EXISTS`); true when it
 * was added, so the migration can fill it in. Only for the first versions of an area: they adopt
 * databases whose tables were made before areas had versions, some with the column and some without.
 */
export function addColumnIfMissing(db: Db, table: string, column: string, type: string): boolean {
  const cols = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
  if (cols.some((c) => c.name === column)) return false;
  db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
  return true;
}
