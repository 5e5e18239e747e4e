// What route handlers depend on, bundled once at start-up.
import type { Database } from "better-sqlite3";
import type { Config } from "../config.js";
import type { ProviderRegistry } from "../inference/providers.js";
import type { ContextRegistry } from "../sandbox/contexts.js";
import type { SandboxManager } from "../sandbox/manager.js";
import type { AdminKeys, KeyStore } from "../store/keys.js";
import type { TenantStore } from "../store/tenants.js";
import type { Metrics } from "./metrics.js";

export interface Services {
  config: Config;
  keys: KeyStore;
  /** The operator's admin key (the /v1/admin routes). */
  admin: AdminKeys;
  /** Tenants and their quotas. */
  tenants: TenantStore;
  sandboxes: SandboxManager;
  contexts: ContextRegistry;
  metrics?: Metrics;
  /** The inference gateway's upstreams and the database it records usage in; absent, no /v1/inference routes. */
  inference?: { db: Database; providers: ProviderRegistry };
}
