// Entry point: reads configuration, opens the database, re-adopts sandboxes, serves HTTP, and
// shuts down gracefully on SIGTERM/SIGINT.
import fs from "node:fs";
import { pino } from "pino";
import { buildApp } from "./api/app.js";
import { Metrics } from "./api/metrics.js";
import { loadConfig } from "./config.js";
import { ContextRegistry } from "./sandbox/contexts.js";
import { SandboxManager } from "./sandbox/manager.js";
import { checkHost } from "./sandbox/preflight.js";
import { openDb } from "./store/db.js";
import { SqliteKeyStore } from "./store/keys.js";
import { SqliteSandboxStore } from "./store/sandboxes.js";

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: config.logLevel });
  checkHost();
  fs.mkdirSync(config.dataDir, { recursive: true });
  const db = openDb(config.dataDir);
  const keys = new SqliteKeyStore(db, config.bootstrapApiKey);
  const sandboxes = new SandboxManager(config, new SqliteSandboxStore(db), logger);
  await sandboxes.init();
  const metrics = new Metrics(() => sandboxes.liveCount());
  const app = await buildApp({ config, keys, sandboxes, contexts: new ContextRegistry(config.maxContextsPerSandbox), metrics }, logger);
  await app.listen({ host: config.host, port: config.port });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: no new requests, waiting for running ones");
    const deadline = setTimeout(() => process.exit(1), 30_000);
    deadline.unref();
    await app.close();
    await sandboxes.close();
    db.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

main().catch((err) => {
  process.stderr.write(`agentbox failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
