// Which database the areas keep their durable records in: the embedded SQLite file (one node, the
// default) or PostgreSQL (AGENTBOX_DATABASE_URL). Each area's open<Area>() gets this value and opens
// its SQLite or its PostgreSQL store from it; no area needs to know the other's tables.
// Every area follows this choice, vector records included (their graphs stay a per-node cache in
// the data directory); template records too, while their root filesystems stay on the disk of the
// node that built them.
import type { Config } from "../config.js";
import type { Db } from "./db.js";
import { openPgPool, type PgPool } from "./pg.js";

/**
 * `shared`: the SQLite file may be shared by the nodes of a cluster (AGENTBOX_DATABASE_FILE with
 * AGENTBOX_REDIS_URL), so no node may take over rows another node id wrote.
 */
export type Persistence = { kind: "sqlite"; db: Db; nodeId: string; shared?: boolean } | { kind: "pg"; pool: PgPool; nodeId: string };

/** SQLite (`db`, already migrated by openDb) unless a database URL is configured; `clustered`: AGENTBOX_REDIS_URL is set. */
export function openPersistence(
  config: Pick<Config, "databaseUrl" | "databasePoolSize" | "databaseConnectTimeoutMs" | "nodeId">,
  db: Db,
  clustered = false,
): Persistence {
  if (config.databaseUrl === undefined) return { kind: "sqlite", db, nodeId: config.nodeId, shared: clustered };
  return {
    kind: "pg",
    pool: openPgPool(config.databaseUrl, config.databasePoolSize, config.databaseConnectTimeoutMs),
    nodeId: config.nodeId,
  };
}

/** Closes what openPersistence() opened (the SQLite file stays with its opener). */
export async function closePersistence(p: Persistence): Promise<void> {
  if (p.kind === "pg") await p.pool.end();
}
