// A cluster on this machine for tests and benchmarks: one private Redis and nodes that share one
// SQLite database file, or a PostgreSQL database (so one set of keys and records), each with its own
// data dir and workspaces.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { PrivateNetwork } from "./netns.js";
import { startRedis, type TestRedis } from "./redis.js";
import { startServer, type TestServer } from "./server.js";

export interface TestCluster {
  redis: TestRedis;
  key: string;
  adminKey: string;
  /** AGENTBOX_CLUSTER_SECRET of every node (a test signs a request as a node would, see src/cluster/channel-auth.ts). */
  secret: string;
  /** Starts a node (one after the other: the first one creates the shared database's tables). */
  node(id: string, roles: "api" | "executor" | "both", env?: Record<string, string>): Promise<TestServer>;
  /** Stops every node and Redis, removes what they kept. */
  dispose(): Promise<void>;
}

/**
 * `network`: each node in its own network namespace of this private network (in the order they
 * are started), Redis on its bridge; without it, every node on loopback. `databaseUrl`: the nodes
 * share that PostgreSQL database instead of one SQLite file.
 */
export async function startCluster(opts: { leaseMs: number; network?: PrivateNetwork; databaseUrl?: string }): Promise<TestCluster> {
  const { network } = opts;
  const redis = await startRedis(network?.gateway);
  const dbDir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-cluster-db-"));
  const key = `test_${crypto.randomBytes(12).toString("hex")}`;
  const adminKey = `testadmin_${crypto.randomBytes(16).toString("hex")}`;
  const secret = crypto.randomBytes(24).toString("hex");
  const nodes: TestServer[] = [];
  return {
    redis,
    key,
    adminKey,
    secret,
    async node(id, roles, env = {}) {
      const slot = nodes.length;
      const place = network ? { host: network.nodes[slot]?.address as string, wrap: network.enter(slot) } : {};
      const node = await startServer({
        key,
        ...place,
        env: {
          AGENTBOX_ADMIN_KEY: adminKey,
          ...(opts.databaseUrl ? { AGENTBOX_DATABASE_URL: opts.databaseUrl } : { AGENTBOX_DATABASE_FILE: path.join(dbDir, "agentbox.db") }),
          AGENTBOX_REDIS_URL: redis.url,
          AGENTBOX_CLUSTER_SECRET: secret,
          AGENTBOX_NODE_ID: id,
          AGENTBOX_NODE_ROLES: roles,
          AGENTBOX_NODE_LEASE_MS: String(opts.leaseMs),
          AGENTBOX_WARM_POOL: roles === "api" ? "0" : "1",
          ...env,
        },
      });
      nodes.push(node);
      return node;
    },
    async dispose() {
      for (const node of nodes) {
        // A frozen node cannot stop: let it run again first.
        node.process.kill("SIGCONT");
        await node.dispose();
      }
      await redis.stop();
      fs.rmSync(dbDir, { recursive: true, force: true });
    },
  };
}
