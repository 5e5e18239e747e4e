// The cluster's settings: where Redis is (unset: one node, and no cluster code runs at all), this
// node's name, address and roles, the secret and listener of the internal channel, the lease time and how a drain moves sandboxes.
import { defineSettings, readSettings, type Settings, settingsOf } from "../settings/kernel.js";

const setting = settingsOf("cluster");

export const NODE_ROLES = ["both", "api", "executor"] as const;
export type NodeRoles = (typeof NODE_ROLES)[number];

export const clusterSettingsSchema = defineSettings({
  redisUrl: setting.custom<string | undefined>("AGENTBOX_REDIS_URL", {
    default: undefined,
    defaultDoc: "unset: one node",
    doc: "Redis 7 (`redis://[:password@]host:port[/db]` or `rediss://`): the nodes' membership, the sandbox→node map, cluster-wide rate limits and the messages every node must get. Set: this service is a node of a cluster (see [cluster.md](cluster.md)).",
    parse: (raw) => {
      const url = new URL(raw);
      if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new Error(`must be a redis:// or rediss:// URL, got '${raw}'`);
      return raw;
    },
  }),
  nodeUrl: setting.url("AGENTBOX_NODE_URL", {
    defaultDoc: "`http://<AGENTBOX_HOST>:<AGENTBOX_PORT>` (the host name when listening on all addresses)",
    doc: "Where the other nodes reach this one (requests for its sandboxes are forwarded there).",
  }),
  internalHost: setting.string("AGENTBOX_INTERNAL_HOST", {
    defaultDoc: "`AGENTBOX_HOST`",
    doc: "Where this node's internal listener listens: the nodes' own routes (`/v1/internal/*`: template copies, a drain's hand-over) are answered there only, never on the public port (which answers them 404). Bind it to the nodes' private network.",
  }),
  internalPort: setting.integer("AGENTBOX_INTERNAL_PORT", {
    default: 0,
    defaultDoc: "`0` (a free port, advertised to the other nodes through Redis)",
    maximum: 65535,
    doc: "The internal listener's port. Set a fixed one to let a firewall keep it to the nodes.",
  }),
  internalUrl: setting.url("AGENTBOX_INTERNAL_URL", {
    defaultDoc: "`http://<AGENTBOX_INTERNAL_HOST>:<its port>` (the host name when listening on all addresses)",
    doc: "Where the other nodes reach this node's internal listener (advertised in the node's record).",
  }),
  roles: setting.enum("AGENTBOX_NODE_ROLES", NODE_ROLES, {
    default: "both",
    doc: "`api`: answers requests, forwards the sandboxes' to their nodes and places creates on executors; `executor`: runs sandboxes; `both`.",
  }),
  secret: setting.string("AGENTBOX_CLUSTER_SECRET", {
    doc: "Authenticates the internal channel between nodes (every forwarded request carries an HMAC of it); the same on every node. Required with `AGENTBOX_REDIS_URL`, at least 32 random bytes (`openssl rand -base64 32`): a shorter or example value is refused at start.",
  }),
  leaseMs: setting.integer("AGENTBOX_NODE_LEASE_MS", {
    default: 5000,
    minimum: 500,
    doc: "A node that has not renewed its lease for this long is lost: its sandboxes end with reason `node_lost` within this plus 2 s. Renewed every third of it (at most every second), when lost nodes are also looked for.",
  }),
  placementSample: setting.integer("AGENTBOX_PLACEMENT_SAMPLE", {
    default: 3,
    minimum: 1,
    doc: "Executors sampled at random for each create; the one with the most free memory per live sandbox gets it.",
  }),
  drainConcurrency: setting.integer("AGENTBOX_DRAIN_CONCURRENCY", {
    default: (m) => Math.max(2, m.cores),
    defaultDoc: "`max(2, cores)` [2]",
    minimum: 1,
    doc: "Sandboxes a draining node moves to other executors at once (each one's files archived into S3, then started on its new node).",
  }),
  drainRunGraceS: setting.integer("AGENTBOX_DRAIN_RUN_GRACE_S", {
    default: 10,
    doc: "How long a drain waits for a run or command under way in a sandbox before moving it; one still running then is not cut: the sandbox stays for now and is tried again at the next heartbeat.",
  }),
  statsTimeoutMs: setting.integer("AGENTBOX_CLUSTER_STATS_TIMEOUT_MS", {
    default: 1000,
    minimum: 50,
    doc: "How long a node waits for each other node's numbers when it answers `GET /v1/agents/stats` or `/v1/admin/stats` (summed over the nodes; a node slower than this is left out and named in `missing_nodes`), and for each other node's models when it answers `GET /v1/inference/models` or looks for the node that serves a model it does not (a node slower than this is left out).",
  }),
});

export type ClusterSettings = Settings<typeof clusterSettingsSchema>;

/** How to make a good secret, for the messages below. */
const MAKE_ONE =
  "make one with `openssl rand -base64 32` (or `node -e \"console.log(require('crypto').randomBytes(32).toString('base64'))\"`) and set the same on every node";

/**
 * Bits of entropy `secret` can hold at most, read from its length and the smallest alphabet it is
 * written in (hex, base64, any printable character): a guess from above, so what it refuses is
 * surely too weak.
 */
export function secretBits(secret: string): number {
  const perChar = /^[0-9a-f]*$/i.test(secret) ? 4 : /^[A-Za-z0-9+/_=-]*$/.test(secret) ? 6 : Math.log2(95);
  // A value of few distinct characters ("aaaa…", "abab…") is not random whatever its length.
  if (new Set(secret).size < 8) return 0;
  return Math.floor(secret.replace(/=+$/, "").length * perChar);
}

/** The internal channel's key must be at least 32 random bytes: anyone who guesses it is a node of the cluster. */
export function checkClusterSecret(secret: string | undefined): void {
  if (!secret) throw new Error(`AGENTBOX_CLUSTER_SECRET must be set with AGENTBOX_REDIS_URL: ${MAKE_ONE}`);
  if (/change.?me/i.test(secret) || secretBits(secret) < 256)
    throw new Error(
      `AGENTBOX_CLUSTER_SECRET is too weak (${secret.length} characters; it must hold at least 32 random bytes, e.g. 44 characters of base64 or 64 of hex): ${MAKE_ONE}`,
    );
}

export function clusterSettings(env: NodeJS.ProcessEnv = process.env): ClusterSettings {
  const s = readSettings(clusterSettingsSchema, env);
  if (s.redisUrl !== undefined) checkClusterSecret(s.secret);
  return s;
}
