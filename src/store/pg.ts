// Persistence in PostgreSQL: the connection pool (AGENTBOX_DATABASE_URL) and the one migration runner
// for it, the twin of the SQLite one in db.ts: numbered versions per area in `schema_migrations`, each
// applied in its own transaction, under an advisory lock so that nodes starting together apply each
// version once. A database that cannot be reached is typed here, once: every query of the pool and
// every transaction fails with 503 `database_unavailable` (Retry-After) instead of the driver's error.
import { createRequire } from "node:module";
import type pg from "pg";
import { ApiError } from "../errors.js";

let driver: typeof pg | undefined;
/** node-postgres, loaded on first use: a service on SQLite (the default) never needs it, and loading
 * it is a noticeable part of a start (~70 ms of CPU). */
const loadPg = (): typeof pg => {
  driver ??= createRequire(import.meta.url)("pg") as typeof pg;
  return driver;
};

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
    const { types } = loadPg();
    if (oid === types.builtins.INT8 || oid === types.builtins.NUMERIC) return (v: string) => Number(v);
    return format === undefined ? types.getTypeParser(oid) : types.getTypeParser(oid, format);
  }) as typeof pg.types.getTypeParser,
};

/** What a client is told to wait (Retry-After, seconds) while the database cannot be reached: about a restart. */
export const DATABASE_RETRY_AFTER_S = 2;

/** SQLSTATEs of a server that is going, gone or not taking connections (not of a statement's own failure). */
const UNAVAILABLE_SQLSTATES = new Set([
  "57P01", // admin_shutdown: `pg_ctl stop -m fast`, a terminated backend
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up, shutting down, in recovery
  "53300", // too_many_connections
  "08000", // connection_exception and its kinds
  "08001",
  "08003",
  "08004",
  "08006",
]);
/** Socket errors of a connection that could not be opened or was cut. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
/** node-postgres's own messages for a connection that ended under a query, or none free in time. */
const LOST_CONNECTION =
  /^Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable/;

/** The error is the database being unreachable (down, restarting, cut off), not the statement's fault. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && (UNAVAILABLE_SQLSTATES.has(code) || NETWORK_CODES.has(code))) return true;
  // A connection that failed with several addresses tried (localhost: IPv4 and IPv6).
  if (err instanceof AggregateError && err.errors.some(isDatabaseUnavailable)) return true;
  return LOST_CONNECTION.test(err.message);
}

/** `err` as the API's 503 when it is the database being unreachable; otherwise `err` itself. */
function asUnavailable(err: unknown): unknown {
  if (!isDatabaseUnavailable(err)) return err;
  const api = new ApiError("database_unavailable", "The database is unavailable; nothing was done, retry later", DATABASE_RETRY_AFTER_S);
  api.cause = err;
  return api;
}

function rethrowUnavailable(err: unknown): never {
  throw asUnavailable(err);
}

/** A pool of `max` connections to the database at `url` (a `postgres://` URL; a search_path may be
 * given in its `options`); opening one waits at most `connectTimeoutMs` (also for a free one). */
export function openPgPool(url: string, max: number, connectTimeoutMs = 5000): PgPool {
  const pool = new (loadPg().Pool)({ connectionString: url, max, types, connectionTimeoutMillis: connectTimeoutMs });
  // An idle connection the server drops (a restart) is an error event on the pool, not a crash: the
  // next query opens a new one.
  pool.on("error", () => {});
  // Every store queries through pool.query (transactions through inTransaction below): its failures
  // for want of a database become the 503 there.
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => {
    const result = query(...args);
    return result instanceof Promise ? result.catch(rethrowUnavailable) : result;
  }) as typeof pool.query;
  return pool;
}

/** Runs `fn` in one transaction on one connection: committed if it returns, rolled back if it throws. */
export async function inTransaction<T>(pool: PgPool, fn: (client: PgClient) => Promise<T>): Promise<T> {
  const client = await pool.connect().catch(rethrowUnavailable);
  // A connection cut while it is checked out is an 'error' event on it, which the pool only listens
  // to on idle ones: unheard, it would end the process. Its query fails too, and says so below.
  let broken: unknown;
  const onError = (err: Error) => {
    broken = err;
  };
  client.on("error", onError);
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    // A connection that failed is not given back to the pool for another query.
    if (isDatabaseUnavailable(err)) broken = err;
    else await client.query("ROLLBACK").catch(() => {});
    throw asUnavailable(err);
  } finally {
    client.off("error", onError);
    client.release(broken instanceof Error ? broken : undefined);
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
  const client = await pool.connect().catch(rethrowUnavailable);
  // As in inTransaction: a cut connection fails the query below, not the process.
  const onError = () => {};
  client.on("error", onError);
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
    client.off("error", onError);
    client.release();
  }
}

/** The versions of an area the database has had, in order. */
export async function appliedPgVersions(pool: PgPool, area: string): Promise<number[]> {
  const { rows } = await pool.query<{ version: number }>("SELECT version FROM schema_migrations WHERE area = $1 ORDER BY version", [area]);
  return rows.map((r) => r.version);
}
