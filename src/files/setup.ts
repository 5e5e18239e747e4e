// Wiring of the stored-files area: the configured storage backend, the record store and the service.
import type { Logger } from "pino";
import type { Box } from "../sandbox/box.js";
import type { Db } from "../store/db.js";
import { SqliteFileStore } from "../store/files.js";
import type { TenantStore } from "../store/tenants.js";
import type { FilesConfig } from "./config.js";
import { FileService } from "./service.js";
import { type FileStorage, LocalStorage } from "./storage.js";

export async function openFiles(
  config: FilesConfig,
  db: Db,
  tenants: TenantStore,
  box: (tenantId: string, sandboxId: string) => Box,
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
  const files = new FileService({ config, store: new SqliteFileStore(db), storage, tenants, box, log });
  await files.init();
  return files;
}
