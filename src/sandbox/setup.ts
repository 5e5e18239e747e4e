// Wiring of the sandbox area: its record stores, the manager (host, registry, warm pool, lifecycle)
// and the service that every route, the E2B API and the gateway's code tool run code through.
import type { Logger } from "pino";
import type { SandboxConfig } from "./settings.js";
import type { StorageQuota } from "../files/quota.js";
import type { Db } from "../store/db.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import { SandboxManager } from "./manager.js";
import { type SandboxServiceDeps, type ServiceCounters, SandboxService } from "./service.js";
import { SqliteSandboxStore } from "./store/sandboxes.js";
import { type SnapshotStore, SqliteSnapshotStore } from "./store/snapshots.js";

export interface SandboxesArea {
  sandboxes: SandboxManager;
  /** The tenants' storage quota, made by the caller from the snapshot store (stored files share it). */
  storage: StorageQuota;
}

/**
 * The stores and the manager, not yet started: the caller listens to `sandboxes.events` first (the
 * ends recorded while re-adopting a previous run's sandboxes are events too), then awaits
 * `sandboxes.init()`.
 */
export async function openSandboxes(
  config: SandboxConfig,
  db: Db,
  tenants: TenantDirectory,
  logger: Logger,
  storageOf: (snapshots: SnapshotStore) => Promise<StorageQuota>,
): Promise<SandboxesArea> {
  const snapshots = new SqliteSnapshotStore(db);
  const storage = await storageOf(snapshots);
  const sandboxes = new SandboxManager(config, new SqliteSandboxStore(db), tenants, logger, snapshots, storage);
  return { sandboxes, storage };
}

/** The service the routes run through; the network area's egress bytes count in each sandbox's metrics. */
export function openSandboxService(
  config: SandboxConfig,
  sandboxes: SandboxManager,
  tenants: TenantDirectory,
  counters: ServiceCounters,
  network?: SandboxServiceDeps["network"],
): SandboxService {
  return new SandboxService({ config, sandboxes, tenants, counters, network });
}
