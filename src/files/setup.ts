// Wiring of the stored-files area: the configured storage backend, the record store, the service,
// and the tenants' storage quota it shares with snapshots.
import type { Logger } from "pino";
import type { Box } from "../sandbox/box.js";
import type { Persistence } from "../store/persistence.js";
import { type FileStore, SqliteFileStore } from "./store.js";
import { PgFileStore } from "./store-pg.js";
import type { SnapshotStore } from "../sandbox/store/snapshots.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import type { FilesConfig } from "./settings.js";
import { StorageQuota } from "./quota.js";
import { FileService } from "./service.js";
import { type FileStorage, LocalStorage } from "./storage.js";

const MiB = 2 ** 20;

/** The file records' store in the configured database. */
async function openFileStore(p: Persistence): Promise<FileStore> {
  return p.kind === "pg" ? PgFileStore.open(p.pool) : new SqliteFileStore(p.db);
}

/**
 * The stored bytes of each tenant (its files and its snapshots) against its storage_mb quota, or
 * AGENTBOX_TENANT_FILES_MB when the operator set none; what each holds is read once, here (and
 * again for its tenant before each write in a cluster, see StorageQuota.refresh).
 */
export async function openStorageQuota(
  config: FilesConfig,
  persistence: Persistence,
  tenants: TenantDirectory,
  snapshots: SnapshotStore,
): Promise<StorageQuota> {
  const files = await openFileStore(persistence);
  const quota = new StorageQuota({
    limit: (tenantId) => (tenants.get(tenantId).quotas.storageMb ?? config.tenantQuotaMb) * MiB,
    committedPerTenant: async () => {
      const total = await files.bytesPerTenant();
      for (const [tenantId, bytes] of await snapshots.bytesPerTenant()) total.set(tenantId, (total.get(tenantId) ?? 0) + bytes);
      return total;
    },
    committedOf: async (tenantId) => (await files.usage(tenantId)).bytes + (await snapshots.bytesByTenant(tenantId)),
  });
  await quota.load();
  return quota;
}

/**
 * Where snapshot archives are kept for every node: with the S3 backend, the object store under
 * AGENTBOX_S3_SNAPSHOTS_PREFIX (a snapshot taken on one node is resumed or forked on any other);
 * with the local backend none (each node keeps its archives on its own disk). No start-up sweep
 * of that prefix: in a cluster another node may be writing an archive its record does not name yet.
 */
export async function openSnapshotArchives(config: FilesConfig): Promise<FileStorage | undefined> {
  if (config.backend !== "s3") return undefined;
  const { S3Storage } = await import("./s3.js");
  return new S3Storage({ ...config.s3, prefix: config.s3.snapshotsPrefix });
}

export async function openFiles(
  config: FilesConfig,
  persistence: Persistence,
  quota: StorageQuota,
  box: (tenantId: string, sandboxId: string) => Promise<Box>,
  log: Logger,
): Promise<FileService> {
  let storage: FileStorage;
  if (config.backend === "s3") {
    // Loaded only when used: the AWS SDK is large.
    const { S3Storage } = await import("./s3.js");
    storage = new S3Storage(config.s3);
  } else {
    storage = new LocalStorage(config.dir);
  }
  const files = new FileService({ config, store: await openFileStore(persistence), storage, quota, box, log });
  await files.init();
  return files;
}
