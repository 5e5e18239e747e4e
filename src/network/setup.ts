// Wiring of the network area at start-up: the service and its policy store, hooked into the sandbox
// lifecycle (snapshots and copies carry a sandbox's policy), with the policies of re-adopted sandboxes back.
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { SandboxManager } from "../sandbox/manager.js";
import type { Persistence } from "../store/persistence.js";
import type { NetworkPolicy } from "./policy.js";
import { NetworkService } from "./service.js";
import { type NetworkSettings, networkSettings } from "./settings.js";
import { type NetworkStore, SqliteNetworkStore } from "./store.js";
import { PgNetworkStore } from "./store-pg.js";

/** Call after the manager's init(): the sandboxes it re-adopted get their stored policies back. */
export async function openNetwork(
  config: Config,
  persistence: Persistence,
  sandboxes: SandboxManager,
  logger: Logger,
  settings: NetworkSettings = networkSettings(),
): Promise<NetworkService> {
  const store: NetworkStore =
    persistence.kind === "pg" ? await PgNetworkStore.open(persistence.pool) : new SqliteNetworkStore(persistence.db);
  const network = new NetworkService(config, sandboxes, store, logger, settings);
  sandboxes.lifecycle.useNetwork({
    capture: (_tenantId, id) => network.policyOf(id),
    apply: (tenantId, id, policy) => network.attach(tenantId, id, policy as NetworkPolicy),
  });
  await network.init();
  return network;
}
