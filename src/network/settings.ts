// The operator's network settings (egress defaults and limits, port URLs and share links), read
// from the environment once at start-up; loadConfig() holds them as `config.network`.
import { openFileLimit } from "../fd-limit.js";
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

function list(name: string): string[] {
  return (process.env[name] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got '${raw}'`);
  return n;
}

function checked(name: string, entries: string[], cidrOnly = false): string[] {
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

/** The connection caps: each a setting, by default sized under the open-file limit (budget.ts). */
function connectionLimits(): BudgetLimits {
  const d = defaultBudget(openFileLimit());
  const total = Math.max(1, num("AGENTBOX_EGRESS_MAX_CONNECTIONS_TOTAL", d.total));
  const perTenant = Math.max(1, num("AGENTBOX_EGRESS_MAX_CONNECTIONS_PER_TENANT", Math.min(d.perTenant, total)));
  const perSandbox = Math.max(1, num("AGENTBOX_EGRESS_MAX_CONNECTIONS", Math.min(d.perSandbox, perTenant)));
  return { total, perTenant, perSandbox };
}

export function networkSettings(): NetworkSettings {
  let defaultPolicy: NetworkPolicy;
  try {
    const raw = process.env.AGENTBOX_NETWORK_DEFAULT;
    defaultPolicy = parsePolicy(raw ? (JSON.parse(raw) as PolicyInput) : {});
  } catch (err) {
    throw new Error(
      `AGENTBOX_NETWORK_DEFAULT must be JSON like {"internet_access":false,"allow_out":[],"deny_out":[]}: ${(err as Error).message}`,
    );
  }
  return {
    defaultPolicy,
    denyOut: checked("AGENTBOX_EGRESS_DENY", list("AGENTBOX_EGRESS_DENY")),
    allowPrivate: checked("AGENTBOX_EGRESS_ALLOW_PRIVATE", list("AGENTBOX_EGRESS_ALLOW_PRIVATE"), true),
    hosts: process.env.AGENTBOX_EGRESS_HOSTS ?? "",
    logEntries: Math.max(1, num("AGENTBOX_EGRESS_LOG_ENTRIES", 1000)),
    connections: connectionLimits(),
    relayPort: num("AGENTBOX_EGRESS_RELAY_PORT", 3128),
    publicUrl: process.env.AGENTBOX_PUBLIC_URL?.replace(/\/+$/, "") || undefined,
    shareSecret: process.env.AGENTBOX_SHARE_SECRET || undefined,
    shareMaxS: Math.max(1, num("AGENTBOX_SHARE_MAX_S", 7 * 24 * 3600)),
  };
}
