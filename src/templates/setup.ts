// Constructs the templates area for the entry point and connects it to the sandbox manager (which
// asks it for a tenant's template when a sandbox is created or re-adopted).
import type { Logger } from "pino";
import type { SandboxConfig } from "../sandbox/settings.js";
import type { SandboxManager } from "../sandbox/manager.js";
import type { Db } from "../store/db.js";
import { RootfsStore } from "./rootfs.js";
import { TemplateService } from "./service.js";
import type { TemplateSettings } from "./settings.js";
import { SqliteTemplateStore } from "./store.js";

export async function openTemplates(
  config: SandboxConfig,
  db: Db,
  sandboxes: SandboxManager,
  logger: Logger,
  settings: TemplateSettings,
): Promise<TemplateService> {
  const templates = new TemplateService({
    store: new SqliteTemplateStore(db),
    rootfs: new RootfsStore(settings.dir),
    settings,
    limits: config.limits,
    builtIns: sandboxes.templates,
    sandboxesOf: (id) => sandboxes.sandboxesOfTemplate(id),
    buildBox: (prepare) => sandboxes.buildBox(prepare),
    log: (fields, msg) => logger.error(fields, msg),
  });
  await templates.init();
  sandboxes.useTemplates((tenantId, idOrName) => templates.resolve(tenantId, idOrName));
  return templates;
}
