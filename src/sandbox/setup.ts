// Wiring of the sandbox area: its record stores, the manager (host, registry, warm pool, lifecycle)
// and the service that every route, the E2B API and the gateway's code tool run code through.
import type { Logger } from "pino";
import type { SandboxConfig } from "./settings.js";
import type { StorageQuota } from "../files/quota.js";
import type { FileStorage } from "../files/storage.js";
import type { Persistence } from "../store/persistence.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import { SandboxManager } from "./manager.js";
import { type SandboxServiceDeps, type ServiceCounters, SandboxService } from "./service.js";
import { type SandboxStore, SqliteSandboxStore } from "./store/sandboxes.js";
import { PgSandboxStore } from "./store/sandboxes-pg.js";
import { type SnapshotStore, SqliteSnapshotStore } from "./store/snapshots.js";
import { PgSnapshotStore } from "./store/snapshots-pg.js";

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
  persistence: Persistence,
  tenants: TenantDirectory,
  logger: Logger,
  storageOf: (snapshots: SnapshotStore) => Promise<StorageQuota>,
  /** False on a cluster's API-only node: no sandbox host is opened (see SandboxManager). */
  runsSandboxes = true,
  /** Where snapshot archives are kept for every node (the S3 backend); none: on this node's disk. */
  archives?: FileStorage,
): Promise<SandboxesArea> {
  const p = persistence;
  // The records of this node's sandboxes carry its id (config.nodeId): it re-adopts only its own.
  const records: SandboxStore = p.kind === "pg" ? await PgSandboxStore.open(p.pool, p.nodeId) : new SqliteSandboxStore(p.db, p.nodeId);
  const snapshots: SnapshotStore = p.kind === "pg" ? await PgSnapshotStore.open(p.pool) : new SqliteSnapshotStore(p.db);
  const storage = await storageOf(snapshots);
  const sandboxes = new SandboxManager(config, records, tenants, logger, snapshots, storage, runsSandboxes, archives);
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
