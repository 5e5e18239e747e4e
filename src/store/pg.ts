// Persistence in PostgreSQL: the connection pool (AGENTBOX_DATABASE_URL) and the one migration runner
// for it, the twin of the SQLite one in db.ts: numbered versions per area in `schema_migrations`, each
// applied in its own transaction, under an advisory lock so that nodes starting together apply each
// version once.
import pg from "pg";

export type PgPool = pg.Pool;
export type PgClient = pg.PoolClient;

/** One step of an area's schema in PostgreSQL (the same areas and rule as the SQLite `Migration`).
 * Text columns are declared `COLLATE "C"`: ids and ISO times sort byte by byte, as in SQLite,
 * whatever the database's locale. */
export interface PgMigration {
  area: string;
  version: number;
  sql: string;
}

/** Any number that fits a double comes back as a number: COUNT(*) and BIGINT columns are int8, SUM of
 * an int8 column is numeric, and node-postgres returns both as strings. Every count, byte size and
 * epoch time kept here is far below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) return (v: string) => Number(v);
    return format === undefined ? pg.types.getTypeParser(oid) : pg.types.getTypeParser(oid, format);
  }) as typeof pg.types.getTypeParser,
};

/** A pool of `max` connections to the database at `url` (a `postgres://` URL; a search_path may be
 * given in its `options`). */
export function openPgPool(url: string, max: number): PgPool {
  const pool = new pg.Pool({ connectionString: url, max, types });
  // An idle connection the server drops (a restart) is an error event on the pool, not a crash: the
  // next query opens a new one.
  pool.on("error", () => {});
  return pool;
}

/** Runs `fn` in one transaction on one connection: committed if it returns, rolled back if it throws. */
export async function inTransaction<T>(pool: PgPool, fn: (client: PgClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** The advisory lock every migration run holds (any constant: it only has to be the same on every node). */
const MIGRATION_LOCK = 0x61676e74; // "agnt"

/**
 * Applies the given migrations the database has not had yet, each in its own transaction with its row
 * in `schema_migrations`, in version order per area. Several nodes may start at once: the advisory
 * lock makes them take turns, and each reads what is applied only once it holds the lock.
 */
export async function migratePg(pool: PgPool, migrations: readonly PgMigration[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         area TEXT NOT NULL,
         version INTEGER NOT NULL,
         applied_at TEXT NOT NULL,
         PRIMARY KEY (area, version)
       )`,
    );
    const key = (m: { area: string; version: number }) => `${m.area}\0${m.version}`;
    const { rows } = await client.query<{ area: string; version: number }>("SELECT area, version FROM schema_migrations");
    const applied = new Set(rows.map(key));
    const ordered = [...migrations].sort((a, b) => (a.area < b.area ? -1 : a.area > b.area ? 1 : a.version - b.version));
    for (const m of ordered) {
      if (applied.has(key(m))) continue;
      await client.query("BEGIN");
      try {
        await client.query(m.sql);
        await client.query("INSERT INTO schema_migrations (area, version, applied_at) VALUES ($1, $2, $3)", [
          m.area,
          m.version,
          new Date().toISOString(),
        ]);
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {});
        throw err;
      }
      applied.add(key(m));
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
}

/** The versions of an area the database has had, in order. */
export async function appliedPgVersions(pool: PgPool, area: string): Promise<number[]> {
  const { rows } = await pool.query<{ version: number }>("SELECT version FROM schema_migrations WHERE area = $1 ORDER BY version", [area]);
  return rows.map((r) => r.version);
}
