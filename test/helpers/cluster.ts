// A cluster on this machine for tests and benchmarks: one private Redis and nodes that share one
// SQLite database file, or a PostgreSQL database (so one set of keys and records), each with its own
// data dir and workspaces; and startClusterServer(), the three-node cluster that startServer()
// starts in place of one service when the end-to-end files run with AGENTBOX_TEST_CLUSTER=1.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { PrivateNetwork } from "./netns.js";
import { startRedis, type TestRedis } from "./redis.js";
import { freePort, removeWorkspaces, type ServerOptions, startNode, type TestServer } from "./server.js";

export interface TestCluster {
  redis: TestRedis;
  key: string;
  adminKey: string;
  /** AGENTBOX_CLUSTER_SECRET of every node (a test signs a request as a node would, see src/cluster/channel-auth.ts). */
  secret: string;
  /** The nodes started so far, in order. */
  readonly nodes: readonly TestServer[];
  /** Where a node's internal listener is (the nodes' own routes, /v1/internal/*: never on its public port). */
  internalUrl(node: TestServer): string;
  /** Starts a node (one after the other: the first one creates the shared database's tables), on `port` if given. */
  node(id: string, roles: "api" | "executor" | "both", env?: Record<string, string>, port?: number): Promise<TestServer>;
  /** SIGTERM to every node, then Redis; keeps the database and the nodes' data dirs (see `dir`). */
  stop(): Promise<void>;
  /** SIGKILL to every node (no clean-up by them), then Redis stops; keeps what `stop()` keeps. */
  crash(): Promise<void>;
  /** Stops every node and Redis, removes what they kept. */
  dispose(): Promise<void>;
}

/**
 * `network`: each node in its own network namespace of this private network (in the order they
 * are started), Redis on its bridge; without it, every node on loopback. `databaseUrl`: the nodes
 * share that PostgreSQL database instead of one SQLite file. `dir`: the SQLite file is
 * `<dir>/agentbox.db` and node `id` keeps its data in `<dir>/nodes/<id>` and its workspaces in
 * `<workspaceDir>/<id>`, so a cluster started again on the same `dir` with the same node ids finds
 * its records and re-adopts its sandboxes (default: new temporary directories). `key`, `adminKey`:
 * the bootstrap and admin keys (default: new random ones).
 */
export async function startCluster(opts: {
  leaseMs: number;
  network?: PrivateNetwork;
  databaseUrl?: string;
  dir?: string;
  workspaceDir?: string;
  key?: string;
  adminKey?: string;
}): Promise<TestCluster> {
  const { network } = opts;
  const redis = await startRedis(network?.gateway);
  const dbDir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-cluster-db-"));
  const key = opts.key ?? `test_${crypto.randomBytes(12).toString("hex")}`;
  const adminKey = opts.adminKey ?? `testadmin_${crypto.randomBytes(16).toString("hex")}`;
  const secret = crypto.randomBytes(32).toString("base64");
  const nodes: TestServer[] = [];
  const internalUrls = new Map<TestServer, string>();
  const stopRedis = async () => {
    // Stopped already by an earlier stop() or crash(): nothing to do.
    if (redis.process.exitCode === null && redis.process.signalCode === null) await redis.stop();
  };
  return {
    redis,
    key,
    adminKey,
    secret,
    nodes,
    internalUrl(node) {
      const url = internalUrls.get(node);
      if (!url) throw new Error("not a node of this cluster");
      return url;
    },
    async node(id, roles, env = {}, port) {
      const slot = nodes.length;
      const place = network ? { host: network.nodes[slot]?.address as string, wrap: network.enter(slot) } : {};
      const dirs = opts.dir
        ? {
            dataDir: path.join(opts.dir, "nodes", id),
            workspaceDir: path.join(opts.workspaceDir ?? path.join("/run/agentbox-test", path.basename(opts.dir)), id),
          }
        : {};
      const internalPort = env.AGENTBOX_INTERNAL_PORT ?? String(await freePort());
      const node = await startNode({
        key,
        port,
        // Three services start where one would: on a loaded machine each takes longer.
        startTimeoutMs: 120_000,
        ...dirs,
        ...place,
        env: {
          AGENTBOX_ADMIN_KEY: adminKey,
          ...(opts.databaseUrl ? { AGENTBOX_DATABASE_URL: opts.databaseUrl } : { AGENTBOX_DATABASE_FILE: path.join(dbDir, "agentbox.db") }),
          AGENTBOX_REDIS_URL: redis.url,
          AGENTBOX_CLUSTER_SECRET: secret,
          AGENTBOX_INTERNAL_PORT: internalPort,
          AGENTBOX_NODE_ID: id,
          AGENTBOX_NODE_ROLES: roles,
          AGENTBOX_NODE_LEASE_MS: String(opts.leaseMs),
          AGENTBOX_WARM_POOL: roles === "api" ? "0" : "1",
          ...env,
        },
      });
      nodes.push(node);
      internalUrls.set(node, `http://${place.host ?? "127.0.0.1"}:${env.AGENTBOX_INTERNAL_PORT ?? internalPort}`);
      return node;
    },
    async stop() {
      for (const node of nodes) {
        node.process.kill("SIGCONT");
        await node.stop();
      }
      await stopRedis();
    },
    async crash() {
      for (const node of nodes) await node.crash();
      await stopRedis();
    },
    async dispose() {
      for (const node of nodes) {
        // A frozen node cannot stop: let it run again first.
        node.process.kill("SIGCONT");
        await node.dispose();
      }
      await stopRedis();
      fs.rmSync(dbDir, { recursive: true, force: true });
    },
  };
}

/**
 * The cluster startServer() starts with AGENTBOX_TEST_CLUSTER=1: a private Redis, one SQLite file
 * shared by three nodes (`<dataDir>/agentbox.db`, the file a single node would use, so the tests
 * that create keys with the CLI on `dataDir` reach every node), an API-only node and two
 * executors. `url` and `port` are the API node's: it owns no sandbox, so every request for one is
 * forwarded to its owner. `opts.env` goes to every node. stop() and crash() end the nodes and
 * Redis and keep the directories, so a server started again with the same dataDir (and port) is
 * the same cluster again (the same node ids on the same data dirs).
 */
/**
 * Waits until `api` lists `count` executors up: its view of the cluster is a heartbeat old, and a
 * create placed before it has seen them is a 503 (asking for the list renews the view).
 */
export async function untilExecutorsUp(api: TestServer, adminKey: string, count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${api.url}/v1/admin/nodes`, { headers: { authorization: `Bearer ${adminKey}` } });
    const body = (await res.json()) as { nodes?: Array<{ roles: string; state: string }> };
    if ((body.nodes ?? []).filter((n) => n.roles !== "api" && n.state === "up").length >= count) return;
    if (Date.now() > deadline) throw new Error(`the API node never saw ${count} executors up: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startClusterServer(opts: ServerOptions): Promise<TestServer> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-test-"));
  const workspaceDir = opts.workspaceDir ?? path.join("/run/agentbox-test", path.basename(dataDir));
  // Generous: every node is meant to answer the stats it is asked for (test/stats.test.ts), also on a loaded machine.
  const env: Record<string, string> = { AGENTBOX_CLUSTER_STATS_TIMEOUT_MS: "10000", ...opts.env };
  // Generous: no node is meant to be lost here, also on a loaded machine.
  const cluster = await startCluster({ leaseMs: 15_000, dir: dataDir, workspaceDir, key: opts.key, adminKey: env.AGENTBOX_ADMIN_KEY });
  let api: TestServer;
  try {
    api = await cluster.node("api", "api", { ...env, AGENTBOX_WARM_POOL: "0" }, opts.port);
    // Both at once (the API node has made the shared database's tables); both settled before a
    // failure stops the cluster, so no node is left starting.
    const executors = await Promise.allSettled([cluster.node("exec-1", "executor", env), cluster.node("exec-2", "executor", env)]);
    for (const e of executors) if (e.status === "rejected") throw e.reason;
    await untilExecutorsUp(api, cluster.adminKey, 2);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  const server: TestServer = {
    url: api.url,
    key: cluster.key,
    adminKey: cluster.adminKey,
    dataDir,
    workspaceDir,
    port: api.port,
    process: api.process,
    apiPid: () => api.apiPid(),
    logs: () => cluster.nodes.map((node) => node.logs()).join(""),
    stop: () => cluster.stop(),
    crash: () => cluster.crash(),
    async dispose() {
      await cluster.dispose();
      removeWorkspaces(workspaceDir);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}
