// Wiring of tenancy at start-up: the API keys (the bootstrap key among them), the operator's admin
// key (made, and printed once, on the first start without AGENTBOX_ADMIN_KEY), and the tenants with
// their quotas and suspensions.
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Db } from "../store/db.js";
import { AdminKeys, KeyDirectory } from "./key-directory.js";
import { SqliteAdminKeyStore, SqliteKeyStore } from "./store/keys.js";
import { SqliteTenantStore } from "./store/tenants.js";
import { TenantDirectory } from "./tenant-directory.js";

export interface TenancyArea {
  keys: KeyDirectory;
  admin: AdminKeys;
  tenants: TenantDirectory;
  /** Writes the keys' last-use times not yet written. */
  close(): Promise<void>;
}

export async function openTenancy(config: Pick<Config, "bootstrapApiKey" | "adminApiKey">, db: Db, logger: Logger): Promise<TenancyArea> {
  const keys = new KeyDirectory(new SqliteKeyStore(db), config.bootstrapApiKey);
  const admin = new AdminKeys(new SqliteAdminKeyStore(db), config.adminApiKey);
  const firstAdminKey = await admin.ensure();
  if (firstAdminKey) {
    // The only time this key is ever shown: the database keeps its hash.
    process.stderr.write(
      `\n===== AGENTBOX ADMIN KEY (shown once, store it now; only its hash is kept) =====\n${firstAdminKey}\n` +
        "===== (set AGENTBOX_ADMIN_KEY to choose your own; `agentbox admin rotate-key` makes a new one) =====\n\n",
    );
    logger.warn("admin key generated and printed once on stderr");
  }
  const tenants = await TenantDirectory.open(new SqliteTenantStore(db));
  return { keys, admin, tenants, close: () => keys.close() };
}
