// The operator's network settings (egress defaults and limits, port URLs and share links), declared
// once and read when the network service opens (src/main.ts hands them to NetworkService).
import { defineSettings, readSettings, settingsOf } from "../settings/kernel.js";
import { type BudgetLimits, defaultBudget } from "./budget.js";
import { type NetworkPolicy, PolicyError, parsePolicy, parseRule, type PolicyInput } from "./policy.js";

export interface NetworkSettings {
  /** The policy of a sandbox whose create says nothing about its network. */
  defaultPolicy: NetworkPolicy;
  /** Entries denied to every sandbox, whatever its own policy says. */
  denyOut: string[];
  /** CIDRs inside the never-reachable ranges (private, loopback...) that sandboxes may reach after all. */
  allowPrivate: string[];
  /** Resolver override `name=address[:port],...` (test setups, local mirrors); empty unless set. */
  hosts: string;
  /** Egress log entries kept per sandbox. */
  logEntries: number;
  /** Connections the service holds for sandboxes' egress and port relays: per sandbox, per tenant, in all. */
  connections: BudgetLimits;
  /** Port the sandbox's egress relay listens on, in the sandbox's own network namespace. */
  relayPort: number;
  /** Base of port URLs (e.g. https://agentbox.example.com); by default the address the request came to. */
  publicUrl: string | undefined;
  /** HMAC key of share links; by default a random key kept in the data dir. */
  shareSecret: string | undefined;
  /** Longest life of a share link, seconds. */
  shareMaxS: number;
}

function parseDefaultPolicy(raw: string): NetworkPolicy {
  try {
    return parsePolicy(JSON.parse(raw) as PolicyInput);
  } catch (err) {
    throw new Error(
      `AGENTBOX_NETWORK_DEFAULT must be JSON like {"internet_access":false,"allow_out":[],"deny_out":[]}: ${(err as Error).message}`,
    );
  }
}

/** A comma-separated list of egress rules (names, CIDRs; CIDRs only with `cidrOnly`). */
function rules(name: string, raw: string, cidrOnly = false): string[] {
  const entries = raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const e of entries) {
    try {
      const rule = parseRule(e);
      if (cidrOnly && rule.kind !== "cidr") throw new PolicyError(`'${e}' is not a CIDR`);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}`);
    }
  }
  return entries;
}

const setting = settingsOf("network");

export const networkSettingsSchema = defineSettings({
  defaultPolicy: setting.custom("AGENTBOX_NETWORK_DEFAULT", {
    default: () => parsePolicy({}),
    defaultDoc: '`{"internet_access":false}`',
    parse: parseDefaultPolicy,
    doc: "JSON policy (`internet_access`, `allow_out`, `deny_out`) of sandboxes whose create says nothing about the network.",
  }),
  denyOut: setting.custom("AGENTBOX_EGRESS_DENY", {
    default: [] as string[],
    defaultDoc: "(none)",
    parse: (raw) => rules("AGENTBOX_EGRESS_DENY", raw),
    doc: "Comma-separated names/CIDRs denied to every sandbox, whatever its policy.",
  }),
  allowPrivate: setting.custom("AGENTBOX_EGRESS_ALLOW_PRIVATE", {
    default: [] as string[],
    defaultDoc: "(none)",
    parse: (raw) => rules("AGENTBOX_EGRESS_ALLOW_PRIVATE", raw, true),
    doc: "Comma-separated CIDRs inside the never-reachable ranges (private, loopback, link-local, the host's own addresses, subnets and gateways) that sandboxes may reach if their policy allows (e.g. a package mirror on `10.0.5.0/24`).",
  }),
  hosts: setting.string("AGENTBOX_EGRESS_HOSTS", {
    default: "",
    defaultDoc: "(none)",
    doc: "Resolver override `name=addr[:port],...`, looked up before DNS; its addresses are exempt from the never-reachable ranges. For tests and local mirrors; leave unset in production.",
  }),
  logEntries: setting.integer("AGENTBOX_EGRESS_LOG_ENTRIES", {
    default: 1000,
    atLeast: 1,
    doc: "Egress log entries kept per sandbox (`GET /sandboxes/{id}/network/log`), in memory.",
  }),
  // The connection caps, by default sized under the open-file limit (budget.ts).
  maxConnections: setting.integer("AGENTBOX_EGRESS_MAX_CONNECTIONS", {
    default: (m, get) => Math.min(defaultBudget(m.openFiles).perSandbox, get("maxConnectionsPerTenant") as number),
    defaultDoc: "`128`, or `AGENTBOX_EGRESS_MAX_CONNECTIONS_PER_TENANT` if lower",
    atLeast: 1,
    doc: "Connections the service holds for one sandbox's network at once: its egress proxy connections, and port-relay connections that have not yet said what they are. A connection over the cap is destroyed at once (the sandbox sees it closed or reset, with a `503` status line if it was read in time).",
  }),
  maxConnectionsPerTenant: setting.integer("AGENTBOX_EGRESS_MAX_CONNECTIONS_PER_TENANT", {
    default: (m, get) => Math.min(defaultBudget(m.openFiles).perTenant, get("maxConnectionsTotal") as number),
    defaultDoc: "a quarter of `AGENTBOX_EGRESS_MAX_CONNECTIONS_TOTAL` (at least 16)",
    atLeast: 1,
    doc: "The same, for all of one tenant's sandboxes together.",
  }),
  maxConnectionsTotal: setting.integer("AGENTBOX_EGRESS_MAX_CONNECTIONS_TOTAL", {
    default: (m) => defaultBudget(m.openFiles).total,
    defaultDoc: "an eighth of the process's open-file limit (soft `RLIMIT_NOFILE`; at least 64)",
    atLeast: 1,
    doc: "The same, for all sandboxes on the node. An egress connection costs the service up to two descriptors (the sandbox's end and the upstream one), so the default keeps sandboxes' network to about a quarter of the descriptors, next to the half the [client connections](#connections) may take.",
  }),
  relayPort: setting.integer("AGENTBOX_EGRESS_RELAY_PORT", {
    default: 3128,
    doc: "Port of the proxy inside each sandbox's own network namespace (`HTTP_PROXY=http://127.0.0.1:<port>`).",
  }),
  publicUrl: setting.url("AGENTBOX_PUBLIC_URL", {
    defaultDoc: "the request's own address",
    doc: "Base of port URLs and share links (e.g. `https://agentbox.example.com`).",
  }),
  shareSecret: setting.string("AGENTBOX_SHARE_SECRET", {
    defaultDoc: "random, kept in `<data dir>/share-link.key`",
    doc: "HMAC key of share links; changing it (or deleting the file) invalidates every link.",
  }),
  shareMaxS: setting.integer("AGENTBOX_SHARE_MAX_S", {
    default: 7 * 24 * 3600,
    atLeast: 1,
    doc: "Longest life of a share link (`expires_in`), seconds.",
  }),
});

export function networkSettings(env: NodeJS.ProcessEnv = process.env): NetworkSettings {
  const s = readSettings(networkSettingsSchema, env);
  return {
    defaultPolicy: s.defaultPolicy,
    denyOut: s.denyOut,
    allowPrivate: s.allowPrivate,
    hosts: s.hosts,
    logEntries: s.logEntries,
    connections: { total: s.maxConnectionsTotal, perTenant: s.maxConnectionsPerTenant, perSandbox: s.maxConnections },
    relayPort: s.relayPort,
    publicUrl: s.publicUrl,
    shareSecret: s.shareSecret,
    shareMaxS: s.shareMaxS,
  };
}
