// Constructs the templates area for the entry point and connects it to the sandbox manager (which
// asks it for a tenant's template when a sandbox is created or re-adopted).
import path from "node:path";
import type { Logger } from "pino";
import type { SandboxConfig } from "../sandbox/settings.js";
import type { SandboxManager } from "../sandbox/manager.js";
import { SnapshotFiles } from "../sandbox/snapshots.js";
import type { Persistence } from "../store/persistence.js";
import { RootfsStore } from "./rootfs.js";
import { TemplateService } from "./service.js";
import type { TemplateSettings } from "./settings.js";
import { SqliteTemplateStore, type TemplateStore } from "./store.js";
import { PgTemplateStore } from "./store-pg.js";

export async function openTemplates(
  config: SandboxConfig,
  persistence: Persistence,
  sandboxes: SandboxManager,
  logger: Logger,
  settings: TemplateSettings,
): Promise<TemplateService> {
  // The records follow the other areas' (PostgreSQL with a database URL); root filesystems are on
  // the disks of the nodes that made or fetched them (docs/cluster.md, templates in a cluster).
  const store: TemplateStore =
    persistence.kind === "pg" ? await PgTemplateStore.open(persistence.pool, persistence.nodeId) : new SqliteTemplateStore(persistence.db);
  const templates = new TemplateService({
    store,
    nodeId: persistence.nodeId,
    rootfs: new RootfsStore(settings.dir),
    // A saved sandbox's files are held to the snapshot size limit: they are restored as a snapshot is.
    homes: new SnapshotFiles(path.join(settings.dir, "homes"), config.snapshotMaxBytes),
    settings,
    limits: config.limits,
    builtIns: sandboxes.templates,
    sandboxesOf: (id) => sandboxes.sandboxesOfTemplate(id),
    // box() refuses what is not the tenant's, ended or paused, with the sandbox routes' errors.
    sandbox: async (tenantId, id) => {
      const box = await sandboxes.box(tenantId, id);
      return { box, template: sandboxes.liveRecord(tenantId, id)?.template ?? "" };
    },
    dropPool: (id) => sandboxes.dropTemplatePool(id),
    poolSize: (id) => sandboxes.templatePoolSize(id),
    buildBox: (prepare) => sandboxes.buildBox(prepare),
    log: (fields, msg) => logger.error(fields, msg),
  });
  await templates.init();
  sandboxes.useTemplates((tenantId, idOrName) => templates.resolve(tenantId, idOrName));
  return templates;
}
