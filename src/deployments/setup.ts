// Wiring of deployments at start-up: the store, the service (restarting the deployments the
// database has), the host's accelerators, and the gateway hook that routes deployment names.
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { FileService } from "../files/service.js";
import type { ProviderRegistry } from "../inference/providers.js";
import type { Persistence } from "../store/persistence.js";
import { type DeploymentStore, SqliteDeploymentStore } from "./store.js";
import { PgDeploymentStore } from "./store-pg.js";
import { Accelerators } from "./accelerators.js";
import { type DeploymentsConfig, loadDeploymentsConfig } from "./settings.js";
import { DeploymentService } from "./service.js";

export interface DeploymentsArea {
  deployments: DeploymentService;
  accelerators: Accelerators;
  /** Lets deployments serve GGUF files stored in /v1/files (made after this area at start-up). */
  useFiles(files: FileService): void;
  close(): Promise<void>;
}

/** `modelFile`: AGENTBOX_MODEL (src/inference/settings.ts), which a deployment may name too. */
export async function openDeployments(
  config: Config,
  persistence: Persistence,
  providers: ProviderRegistry,
  logger: Logger,
  modelFile: string | undefined,
  settings: DeploymentsConfig = loadDeploymentsConfig(),
  /** A node of a cluster: it runs only the deployments recorded on it, and takes over lost nodes' ones. */
  clustered = false,
): Promise<DeploymentsArea> {
  const accelerators = new Accelerators(settings.gpus);
  const store: DeploymentStore =
    persistence.kind === "pg" ? await PgDeploymentStore.open(persistence.pool) : new SqliteDeploymentStore(persistence.db);
  const deployments = new DeploymentService({
    store,
    config: settings,
    dataDir: config.dataDir,
    modelFile,
    accelerators,
    log: (level, msg, extra) => logger[level](extra ?? {}, msg),
    nodeId: config.nodeId,
    clustered,
  });
  // Asked before the providers file: a tenant's deployment name is what that tenant means.
  providers.addSource(deployments, "first");
  await deployments.init();
  return {
    deployments,
    accelerators,
    useFiles: (files) => deployments.useFiles(files),
    async close() {
      providers.removeSource(deployments);
      await deployments.close();
    },
  };
}
