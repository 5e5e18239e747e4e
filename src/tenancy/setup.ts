// Wiring of tenancy at start-up: the API keys (the bootstrap key among them), the operator's admin
// key (made, and printed once, on the first start without AGENTBOX_ADMIN_KEY), and the tenants with
// their quotas and suspensions.
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Persistence } from "../store/persistence.js";
import { AdminKeys, KeyDirectory } from "./key-directory.js";
import { type AdminKeyStore, type KeyStore, SqliteAdminKeyStore, SqliteKeyStore } from "./store/keys.js";
import { PgAdminKeyStore, PgKeyStore } from "./store/keys-pg.js";
import { SqliteTenantStore, type TenantStore } from "./store/tenants.js";
import { PgTenantStore } from "./store/tenants-pg.js";
import { TenantDirectory } from "./tenant-directory.js";

export interface TenancyArea {
  keys: KeyDirectory;
  admin: AdminKeys;
  tenants: TenantDirectory;
  /** Writes the keys' last-use times not yet written. */
  close(): Promise<void>;
}

/** The key stores in the configured database (also what the CLI's local commands write to). */
export async function openKeyStores(p: Persistence): Promise<{ keys: KeyStore; admin: AdminKeyStore }> {
  if (p.kind === "pg") return { keys: await PgKeyStore.open(p.pool), admin: await PgAdminKeyStore.open(p.pool) };
  return { keys: new SqliteKeyStore(p.db), admin: new SqliteAdminKeyStore(p.db) };
}

export async function openTenancy(
  config: Pick<Config, "bootstrapApiKey" | "adminApiKey">,
  persistence: Persistence,
  logger: Logger,
): Promise<TenancyArea> {
  const stores = await openKeyStores(persistence);
  const keys = new KeyDirectory(stores.keys, config.bootstrapApiKey);
  const admin = new AdminKeys(stores.admin, config.adminApiKey);
  const firstAdminKey = await admin.ensure();
  if (firstAdminKey) {
    // The only time this key is ever shown: the database keeps its hash.
    process.stderr.write(
      `\n===== AGENTBOX ADMIN KEY (shown once, store it now; only its hash is kept) =====\n${firstAdminKey}\n` +
        "===== (set AGENTBOX_ADMIN_KEY to choose your own; `agentbox admin rotate-key` makes a new one) =====\n\n",
    );
    logger.warn("admin key generated and printed once on stderr");
  }
  const tenantStore: TenantStore =
    persistence.kind === "pg" ? await PgTenantStore.open(persistence.pool) : new SqliteTenantStore(persistence.db);
  const tenants = await TenantDirectory.open(tenantStore);
  return { keys, admin, tenants, close: () => keys.close() };
}
