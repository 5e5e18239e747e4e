// Wiring of the inference gateway's durable part: the token-usage store in the configured database
// (the gateway's routes and the embeddings service each keep a UsageLog in front of it).
import type { Persistence } from "../store/persistence.js";
import { SqliteUsageStore, type UsageStore } from "./usage.js";
import { PgUsageStore } from "./usage-pg.js";

export async function openUsageStore(p: Persistence): Promise<UsageStore> {
  return p.kind === "pg" ? PgUsageStore.open(p.pool) : new SqliteUsageStore(p.db);
}
