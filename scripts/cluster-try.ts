// `npm run cluster:try`: a three-node cluster on this machine for trying it. A private PostgreSQL 15
// and Redis 7 in temporary directories on free loopback ports, and three nodes (each both API and
// executor) on three ports sharing them; prints a key, the admin key and the URLs, and stops
// everything (nodes, their sandboxes, Redis, PostgreSQL) and removes what they kept on Ctrl-C.
// Needs what the tests need: root, `npm run setup` done (PostgreSQL 15 and Redis from Debian).
import { readFileSync } from "node:fs";
import path from "node:path";
import { startCluster, type TestCluster } from "../test/helpers/cluster.js";
import { startPostgres, type TestPostgres } from "../test/helpers/postgres.js";
import type { TestServer } from "../test/helpers/server.js";

const NODES = ["node-1", "node-2", "node-3"];

let postgres: TestPostgres | undefined;
let cluster: TestCluster | undefined;
let stopping: Promise<void> | undefined;

/** Stops what was started, in reverse order; once, whichever signal or failure asks first. */
function stopAll(): Promise<void> {
  stopping ??= (async () => {
    process.stdout.write("\nstopping the nodes, Redis and PostgreSQL...\n");
    await cluster?.dispose();
    await postgres?.stop();
    process.stdout.write("stopped; nothing left running\n");
  })();
  return stopping;
}

for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => {
    void stopAll().then(() => process.exit(0));
  });

try {
  process.stdout.write("starting PostgreSQL, Redis and three nodes (a minute on a slow machine)...\n");
  postgres = await startPostgres({ settings: { synchronous_commit: "on" } });
  const databaseUrl = await postgres.createDatabase("agentbox");
  cluster = await startCluster({ leaseMs: 5000, databaseUrl });
  const nodes: TestServer[] = [];
  // One after the other: the first one creates the database's tables.
  for (const id of NODES) nodes.push(await cluster.node(id, "both"));
  const postmaster = Number(readFileSync(path.join(postgres.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  const lines = [
    "",
    "AgentBox cluster on this machine: three nodes on one PostgreSQL and one Redis.",
    "",
    ...nodes.map((n, i) => `  ${NODES[i]}  ${n.url}  (pid ${n.process.pid})`),
    `  PostgreSQL  ${postgres.url("agentbox")}  (pid ${postmaster})`,
    `  Redis       ${cluster.redis.url}  (pid ${cluster.redis.process.pid})`,
    "",
    `  API key:    ${cluster.key}`,
    `  admin key:  ${cluster.adminKey}`,
    "",
    "Try it: a sandbox created through node-1, its code run through node-3 (forwarded to its owner):",
    "",
    `  export KEY=${cluster.key}`,
    `  ID=$(curl -s -X POST ${nodes[0]?.url}/v1/agents/sandboxes -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{}' | sed 's/.*"sandbox_id":"\\([^"]*\\)".*/\\1/')`,
    `  curl -s -X POST ${nodes[2]?.url}/v1/agents/sandboxes/$ID/code/run -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"language":"python","code":"print(6*7)"}'`,
    `  curl -s ${nodes[1]?.url}/v1/admin/nodes -H "Authorization: Bearer ${cluster.adminKey}"`,
    "",
    "Ctrl-C stops everything and removes its data.",
    "",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} catch (err) {
  process.stderr.write(`cluster:try failed: ${(err as Error).stack ?? err}\n`);
  await stopAll();
  process.exit(1);
}
