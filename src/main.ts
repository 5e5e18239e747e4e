// Entry point: reads configuration, opens the database, re-adopts sandboxes, serves HTTP, and
// shuts down gracefully on SIGTERM/SIGINT.
import fs from "node:fs";
import { pino } from "pino";
import { buildApp } from "./api/app.js";
import { OpenRequests } from "./api/open-requests.js";
import { loadFilesConfig } from "./files/settings.js";
import { openFiles, openSnapshotArchives, openStorageQuota } from "./files/setup.js";
import { Metrics } from "./api/metrics.js";
import { loadConfig } from "./config.js";
import { e2bSettings } from "./e2b/settings.js";
import { loadDeploymentsConfig } from "./deployments/settings.js";
import { openDeployments } from "./deployments/setup.js";
import { EmbeddingService } from "./inference/embeddings.js";
import { loadEmbeddingsConfig } from "./inference/embeddings-config.js";
import { loadProviders } from "./inference/providers.js";
import { inferenceSettings } from "./inference/settings.js";
import { networkSettings } from "./network/settings.js";
import { openNetwork } from "./network/setup.js";
import { LocalModels } from "./models/source.js";
import { checkHost } from "./sandbox/preflight.js";
import { openSandboxes, openSandboxService } from "./sandbox/setup.js";
import { sandboxSettings } from "./sandbox/settings.js";
import { standbyTurn } from "./sandbox/standby.js";
import { openDb } from "./store/db.js";
import { closePersistence, openPersistence } from "./store/persistence.js";
import { openUsageStore } from "./inference/setup.js";
import { clusterSettings } from "./cluster/settings.js";
import { openCluster } from "./cluster/setup.js";
import { eventSettings } from "./events/settings.js";
import { openEvents } from "./events/setup.js";
import { openTenancy } from "./tenancy/setup.js";
import { vectorSettings } from "./vectors/settings.js";
import { templateSettings } from "./templates/settings.js";
import { openTemplates } from "./templates/setup.js";
import { openVectors } from "./vectors/setup.js";

async function main(): Promise<void> {
  // A standby API process of the sandbox host waits here, its modules loaded, until it is needed.
  await standbyTurn();
  const server = loadConfig();
  // Every area's settings, read before anything starts: a bad value stops the start-up with the
  // variable's name, before a sandbox or a file exists.
  const config = { ...server, ...sandboxSettings(server.dataDir), ...e2bSettings() };
  const inference = inferenceSettings();
  const settings = {
    events: eventSettings(),
    network: networkSettings(),
    embeddings: loadEmbeddingsConfig(),
    vectors: vectorSettings(),
    deployments: loadDeploymentsConfig(),
    templates: templateSettings(config.dataDir),
    cluster: clusterSettings(),
  };
  // In a cluster the nodes share the S3 store: a node's start must leave the others' writes alone.
  const filesConfig = loadFilesConfig(config.dataDir, process.env, settings.cluster.redisUrl !== undefined);
  const providers = loadProviders(inference.providersFile);
  // Pulled models and AGENTBOX_MODEL: after the providers file, which wins a name clash.
  providers.addSource(new LocalModels(config.dataDir, inference.localModel, inference.model), "last");
  const logger = pino({ level: config.logLevel });
  // A cluster's API-only node runs no sandbox: it neither needs nor opens the sandbox host.
  const runsSandboxes = settings.cluster.redisUrl === undefined || settings.cluster.roles !== "api";
  if (runsSandboxes) checkHost();
  fs.mkdirSync(config.dataDir, { recursive: true });
  // The SQLite file is always opened; with AGENTBOX_DATABASE_URL every area's records live in
  // PostgreSQL (vector indexes keep only their graphs, a per-node cache, in the data directory).
  const db = openDb(config.dataDir, config.databaseFile);
  const persistence = openPersistence(config, db, settings.cluster.redisUrl !== undefined);
  const tenancy = await openTenancy(config, persistence, logger);
  const { tenants } = tenancy;
  // Stored files and snapshots share each tenant's storage quota.
  const { sandboxes, storage } = await openSandboxes(
    config,
    persistence,
    tenants,
    logger,
    (snapshots) => openStorageQuota(filesConfig, persistence, tenants, snapshots),
    runsSandboxes,
    await openSnapshotArchives(filesConfig),
  );
  // Before init(): the ends recorded while re-adopting (timed_out, host_restart) are events too.
  const eventsArea = await openEvents(persistence, sandboxes.events, logger, settings.events);
  // Before init(): re-adopted sandboxes of tenants' own templates start on their template's root.
  const templates = await openTemplates(config, persistence, sandboxes, logger, settings.templates);
  await sandboxes.init();
  const network = await openNetwork(config, persistence, sandboxes, logger, settings.network);
  const metrics = new Metrics(() => sandboxes.liveCount(), {
    id: config.nodeId,
    roles: settings.cluster.redisUrl === undefined ? "both" : settings.cluster.roles,
  });
  const sandbox = openSandboxService(config, sandboxes, tenants, metrics, network);
  // Builds whose request gives `network` reach it through the network area, as sandboxes do.
  templates.useNetwork({ attach: (tenantId, box, policy, onEntry) => network.attachBuild(tenantId, box, policy, onEntry) });
  const usage = await openUsageStore(persistence);
  const embeddings = new EmbeddingService(usage, providers, {
    config: settings.embeddings,
    counters: metrics,
    onError: (msg, err) => logger.error({ err }, msg),
  });
  metrics.watchEmbeddings(embeddings);
  metrics.watchTemplateBuilds(templates);
  const vectorsArea = await openVectors(
    config.dataDir,
    persistence,
    embeddings,
    logger,
    {
      // The tenant's quotas now (the operator's where set, the defaults elsewhere).
      quotaOf: (tenantId) => sandboxes.tenantQuotas(tenantId),
      memoryMb: config.vectorMemoryMb,
    },
    settings.vectors,
  );
  metrics.watchVectors(vectorsArea.vectors.engine);
  const deploymentsArea = await openDeployments(
    config,
    persistence,
    providers,
    logger,
    inference.model,
    settings.deployments,
    settings.cluster.redisUrl !== undefined,
  );
  const files = await openFiles(filesConfig, persistence, storage, (tenantId, id) => sandboxes.box(tenantId, id), logger);
  deploymentsArea.useFiles(files);
  const openRequests = new OpenRequests();
  // Only with AGENTBOX_REDIS_URL: this service joins a cluster of nodes (src/cluster/).
  const cluster = await openCluster(settings.cluster, {
    host: config.host,
    port: config.port,
    nodeId: config.nodeId,
    sandboxes,
    keys: tenancy.keys,
    tenants,
    webhooks: eventsArea.webhooks,
    openRequests,
    logger,
    deployments: deploymentsArea.deployments,
    gates: sandbox.gates,
    vectors: vectorsArea.cluster,
    templates,
  });
  // A template's files another node holds are fetched from it at its first sandbox here.
  if (cluster) templates.usePeers(cluster.peers);
  const app = await buildApp(
    {
      config,
      keys: tenancy.keys,
      openRequests,
      cluster,
      admin: tenancy.admin,
      tenants,
      sandboxes,
      sandbox,
      network,
      events: eventsArea,
      metrics,
      inference: { usage, providers, embeddings },
      vectors: vectorsArea.vectors,
      deployments: deploymentsArea,
      files,
      templates,
    },
    logger,
  );
  // A deep accept queue (the kernel caps it at net.core.somaxconn): Node's default of 511 drops the
  // SYNs of a thousand clients connecting at once, and each dropped one waits 1, 3, 7 s to retry.
  await cluster?.join();
  await app.listen({ host: config.host, port: config.port, backlog: 4096 });
  vectorsArea.warm();
  // In its worker thread, after the service listens: the first embedding need not wait for it.
  embeddings.preload();

  let stopping = false;
  /**
   * A graceful stop. `leaveSandboxes` (SIGUSR2, sent by the sandbox host on its SIGHUP) stops this
   * API process alone: its requests finish, and its sandboxes stay with the host for the next API
   * process to take over, as after a crash of this one.
   */
  const stop = async (signal: string, leaveSandboxes = false) => {
    if (stopping) return;
    stopping = true;
    const graceMs = config.shutdownGraceS * 1000;
    logger.info(
      { signal, grace_s: config.shutdownGraceS, in_flight: sandbox.gates.inFlight() },
      "shutting down: no new requests, waiting for running ones",
    );
    // Last resort if clean-up itself hangs.
    setTimeout(() => process.exit(1), graceMs + 15_000).unref();
    // Running requests get up to the grace period; past it, their sandboxes are stopped under them.
    let graceTimer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      app.close().then(() => true),
      new Promise<false>((resolve) => {
        graceTimer = setTimeout(() => resolve(false), graceMs);
      }),
    ]);
    clearTimeout(graceTimer);
    if (!finished) logger.warn({ in_flight: sandbox.gates.inFlight() }, "grace period over: stopping sandboxes under running requests");
    // Saving changed vector graphs is the longest part of a stop: started first, beside the
    // sandboxes' teardown, so that it finishes within the last-resort timer above.
    const vectorsClosed = vectorsArea.close();
    files.close();
    await cluster?.close();
    await deploymentsArea.close();
    if (!leaveSandboxes) await sandboxes.close();
    await eventsArea.close();
    await providers.close();
    await vectorsClosed;
    await embeddings.close();
    await tenancy.close();
    await closePersistence(persistence);
    db.close();
    logger.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  if (process.env.AGENTBOX_SANDBOX_HOST === "1") process.on("SIGUSR2", () => void stop("SIGUSR2", true));
}

main().catch((err) => {
  process.stderr.write(`agentbox failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
