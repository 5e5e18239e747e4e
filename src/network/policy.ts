// Egress policy: parsing and strict validation of allow/deny entries (domain names, `*.` wildcards,
// IPs and CIDRs, v4 and v6), and the one decision every outgoing connection goes through.
import net from "node:net";

/** What a caller asks for (the create body's `internet_access` and `network`, or PUT /network). */
export interface PolicyInput {
  internet_access?: boolean;
  allow_out?: string[];
  deny_out?: string[];
}

/** A sandbox's policy as stored and shown (entries normalised: lower case, canonical CIDRs). */
export interface NetworkPolicy {
  internetAccess: boolean;
  allowOut: string[];
  denyOut: string[];
}

export const MAX_RULES = 256;
const MAX_ENTRY = 260;

type Rule = { kind: "domain"; name: string; wildcard: boolean } | { kind: "cidr"; family: 4 | 6; bits: bigint; prefix: number };

/** Thrown for a malformed entry; the caller turns it into a 400 naming the entry. */
export class PolicyError extends Error {}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** `pypi.org`, `*.github.com` (any subdomain, not the apex), or an IP / CIDR. */
export function parseRule(entry: string): Rule {
  if (typeof entry !== "string" || entry.length === 0 || entry.length > MAX_ENTRY) {
    throw new PolicyError(`'${String(entry).slice(0, 80)}' is not a domain name, IP address or CIDR`);
  }
  const text = entry.trim().toLowerCase();
  const slash = text.indexOf("/");
  const addr = slash >= 0 ? text.slice(0, slash) : text;
  const family = net.isIP(addr);
  if (family !== 0) {
    const max = family === 4 ? 32 : 128;
    let prefix = max;
    if (slash >= 0) {
      const p = text.slice(slash + 1);
      if (!/^\d{1,3}$/.test(p) || Number(p) > max) throw new PolicyError(`'${entry}': prefix length must be 0..${max}`);
      prefix = Number(p);
    }
    const bits = toBits(addr, family as 4 | 6);
    if (bits === undefined) throw new PolicyError(`'${entry}' is not a valid address`);
    const hostMask = (1n << BigInt(max - prefix)) - 1n;
    if ((bits & hostMask) !== 0n) {
      throw new PolicyError(`'${entry}' has host bits set; did you mean ${fromBits(bits & ~hostMask, family as 4 | 6)}/${prefix}?`);
    }
    return { kind: "cidr", family: family as 4 | 6, bits, prefix };
  }
  if (slash >= 0) throw new PolicyError(`'${entry}' is not a valid CIDR`);
  let name = text.endsWith(".") ? text.slice(0, -1) : text;
  const wildcard = name.startsWith("*.");
  if (wildcard) name = name.slice(2);
  const labels = name.split(".");
  if (name.length > 253 || labels.length < (wildcard ? 2 : 1) || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1) ?? "")) {
    throw new PolicyError(`'${entry}' is not a domain name (letters, digits, '-', dots; '*.' only as the first label), IP address or CIDR`);
  }
  return { kind: "domain", name, wildcard };
}

function ruleText(r: Rule): string {
  if (r.kind === "domain") return r.wildcard ? `*.${r.name}` : r.name;
  return `${fromBits(r.bits, r.family)}/${r.prefix}`;
}

function parseList(list: unknown, field: string): string[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new PolicyError(`'${field}' must be an array of domain names or CIDRs`);
  if (list.length > MAX_RULES) throw new PolicyError(`'${field}' has ${list.length} entries; at most ${MAX_RULES}`);
  const out: string[] = [];
  for (const entry of list) {
    let text: string;
    try {
      text = ruleText(parseRule(entry as string));
    } catch (err) {
      throw new PolicyError(`${field}: ${(err as Error).message}`);
    }
    if (!out.includes(text)) out.push(text);
  }
  return out;
}

/** Validates and normalises a policy; throws PolicyError with a message fit for a 400. */
export function parsePolicy(input: PolicyInput, base?: NetworkPolicy): NetworkPolicy {
  if (input.internet_access !== undefined && typeof input.internet_access !== "boolean") {
    throw new PolicyError("'internet_access' must be a boolean");
  }
  return {
    internetAccess: input.internet_access ?? base?.internetAccess ?? false,
    allowOut: input.allow_out !== undefined ? parseList(input.allow_out, "allow_out") : (base?.allowOut ?? []),
    denyOut: input.deny_out !== undefined ? parseList(input.deny_out, "deny_out") : (base?.denyOut ?? []),
  };
}

/** Egress is possible at all: internet access on, or an allow list to reach. */
export function egressEnabled(p: NetworkPolicy): boolean {
  return p.internetAccess || p.allowOut.length > 0;
}

export function policyJson(p: NetworkPolicy) {
  return { internet_access: p.internetAccess, allow_out: p.allowOut, deny_out: p.denyOut };
}

// ---- addresses ----

function toBits(addr: string, family: 4 | 6): bigint | undefined {
  if (family === 4) {
    const parts = addr.split(".").map(Number);
    if (parts.length !== 4 || parts.some((n) => !Number.isInteger(n) || n < 0 || n > 255)) return undefined;
    return parts.reduce((acc, n) => (acc << 8n) | BigInt(n), 0n);
  }
  let text = addr;
  // A trailing dotted quad (::ffff:1.2.3.4) becomes two groups.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const v4 = toBits(quad[1] as string, 4);
    if (v4 === undefined) return undefined;
    text = `${text.slice(0, quad.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? (halves[0] as string).split(":") : [];
  const tail = halves.length === 2 && halves[1] ? (halves[1] as string).split(":") : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  let bits = 0n;
  for (const g of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(g)) return undefined;
    bits = (bits << 16n) | BigInt(Number.parseInt(g, 16));
  }
  return bits;
}

function fromBits(bits: bigint, family: 4 | 6): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((bits >> s) & 255n)).join(".");
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((s) => ((bits >> s) & 0xffffn).toString(16));
  // Canonical form: the longest run of zero groups (2 or more) becomes "::".
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  if (best < 0) return groups.join(":");
  return `${groups.slice(0, best).join(":")}::${groups.slice(best + bestLen).join(":")}`;
}

/**
 * The /96 prefixes of IPv6 forms that carry an IPv4 address in their last 32 bits, whatever their
 * spelling (`::ffff:127.0.0.1`, `::ffff:7f00:1`, `[::127.0.0.1]`, `::ffff:0:7f00:1`): IPv4-mapped
 * (::ffff:0:0/96), IPv4-compatible (::/96, deprecated but still routed by some stacks) and
 * IPv4-translated (::ffff:0:0:0/96, SIIT). Each is the IPv4 address it carries, for every rule.
 */
const EMBEDS_IPV4 = [0xffffn, 0n, 0xffff0000n];

/** An address as (family, bits); an IPv6 form that carries an IPv4 address (EMBEDS_IPV4) counts as that IPv4 one. */
export function addressKey(address: string): { family: 4 | 6; bits: bigint } | undefined {
  const family = net.isIP(address);
  if (family === 0) return undefined;
  const bits = toBits(address.toLowerCase(), family as 4 | 6);
  if (bits === undefined) return undefined;
  // `::` and `::1` stay IPv6 (unspecified and loopback, special either way).
  if (family === 6 && bits > 1n && EMBEDS_IPV4.includes(bits >> 32n)) return { family: 4, bits: bits & 0xffffffffn };
  return { family: family as 4 | 6, bits };
}

/** The network `address`/`prefix` lies in, as canonical CIDR text (host bits cleared); undefined if not an address. */
export function networkOf(address: string, prefix: number): string | undefined {
  const key = addressKey(address);
  if (!key) return undefined;
  const max = key.family === 4 ? 32 : 128;
  const p = Math.min(max, Math.max(0, Math.trunc(prefix)));
  const hostMask = (1n << BigInt(max - p)) - 1n;
  return `${fromBits(key.bits & ~hostMask, key.family)}/${p}`;
}

function inCidr(a: { family: 4 | 6; bits: bigint }, r: Extract<Rule, { kind: "cidr" }>): boolean {
  if (a.family !== r.family) return false;
  const shift = BigInt((r.family === 4 ? 32 : 128) - r.prefix);
  return a.bits >> shift === r.bits >> shift;
}

function nameMatches(host: string, r: Extract<Rule, { kind: "domain" }>): boolean {
  return r.wildcard ? host.endsWith(`.${r.name}`) : host === r.name;
}

/**
 * Addresses never reached unless the operator allows them: this host and its neighbours, cloud
 * metadata, and what is not a unicast internet address.
 */
export const SPECIAL_RANGES = [
  "0.0.0.0/8", // "this network"
  "10.0.0.0/8",
  "100.64.0.0/10", // carrier-grade NAT
  "127.0.0.0/8",
  "169.254.0.0/16", // link-local, cloud metadata (169.254.169.254)
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15", // benchmarking
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, broadcast
  "::/128",
  "::1/128",
  "64:ff9b::/96", // NAT64: may embed any of the above
  "64:ff9b:1::/48", // local-use NAT64 (RFC 8215): the same
  "fc00::/7", // unique local
  "fe80::/10", // link-local
  "ff00::/8", // multicast
];

function isCidr(text: string): boolean {
  try {
    return parseRule(text).kind === "cidr";
  } catch {
    return false;
  }
}

export interface Decision {
  allowed: boolean;
  /** Why, in words the sandbox's code gets back (and the log keeps). */
  reason: string;
}

/** A compiled policy: the rules parsed once, checked per connection. */
export class PolicyMatcher {
  private readonly allow: Rule[];
  private readonly deny: Rule[];
  private readonly special: Extract<Rule, { kind: "cidr" }>[];
  private readonly operatorAllowed: Extract<Rule, { kind: "cidr" }>[];

  /**
   * `operatorDeny`: the operator's deny list, added to every sandbox's. `operatorAllowPrivate`:
   * CIDRs inside the special ranges the operator lets sandboxes reach (still subject to each
   * sandbox's own lists). `hostRanges`: this machine's own addresses and networks, and its
   * gateways (host-ranges.ts), as addresses or CIDRs: refused like loopback.
   */
  constructor(
    readonly policy: NetworkPolicy,
    operatorDeny: string[] = [],
    operatorAllowPrivate: string[] = [],
    hostRanges: string[] = [],
  ) {
    this.allow = policy.allowOut.map(parseRule);
    this.deny = [...policy.denyOut, ...operatorDeny].map(parseRule);
    const cidrs = (list: string[]) => list.map(parseRule).filter((r): r is Extract<Rule, { kind: "cidr" }> => r.kind === "cidr");
    this.special = cidrs([...SPECIAL_RANGES, ...hostRanges.filter(isCidr)]);
    this.operatorAllowed = cidrs(operatorAllowPrivate);
  }

  /**
   * One connection to `host` (a name, or an IP literal) at `addresses` (what the proxy resolved and
   * will connect to). Deny wins: a denied name or any denied address refuses the connection; so
   * does any special address the operator did not allow (`trusted` addresses excepted: those the
   * operator mapped a name to explicitly). Then, with an allow list, the name must match it or every
   * address must be in an allowed CIDR; without one, internet access must be on.
   */
  /**
   * The decision when the name alone settles it (egress off, a denied name, a name outside an
   * allow list): the proxy then does not look the name up at all. A DNS lookup is itself a way
   * out (the name's labels reach whoever answers for its domain), so with an allow list only the
   * names it lists are looked up; its address ranges admit IP literals, and names whose address
   * the operator fixed (`mapped`: AGENTBOX_EGRESS_HOSTS, answered without DNS). See design.md.
   */
  decideByName(host: string, mapped = false): Decision | undefined {
    const name = host.toLowerCase().replace(/\.$/, "");
    if (!egressEnabled(this.policy)) return { allowed: false, reason: "internet access is off for this sandbox" };
    if (net.isIP(name) !== 0) return undefined;
    if (this.deny.some((r) => r.kind === "domain" && nameMatches(name, r))) return { allowed: false, reason: "denied by policy" };
    if (this.allow.length === 0 || this.allow.some((r) => r.kind === "domain" && nameMatches(name, r))) return undefined;
    if (!this.allow.some((r) => r.kind === "cidr")) return { allowed: false, reason: "not in allow_out" };
    if (mapped) return undefined;
    return { allowed: false, reason: "not in allow_out (its address ranges admit IP addresses; names are looked up only if listed)" };
  }

  decide(host: string, addresses: string[], trusted: readonly string[] = []): Decision {
    const name = host.toLowerCase().replace(/\.$/, "");
    const isIp = net.isIP(name) !== 0;
    if (!egressEnabled(this.policy)) return { allowed: false, reason: "internet access is off for this sandbox" };
    if (!isIp && this.deny.some((r) => r.kind === "domain" && nameMatches(name, r))) return { allowed: false, reason: "denied by policy" };
    if (addresses.length === 0) return { allowed: false, reason: "the name did not resolve" };
    const keys = addresses.map((a) => ({ a, k: addressKey(a) }));
    for (const { a, k } of keys) {
      if (!k) return { allowed: false, reason: `unusable address ${a}` };
      if (this.deny.some((r) => r.kind === "cidr" && inCidr(k, r))) return { allowed: false, reason: `address ${a} denied by policy` };
      if (trusted.includes(a)) continue;
      if (this.special.some((r) => inCidr(k, r)) && !this.operatorAllowed.some((r) => inCidr(k, r))) {
        return { allowed: false, reason: `address ${a} is loopback, link-local, private or this host's, and is never reachable` };
      }
    }
    if (this.allow.length === 0) {
      return this.policy.internetAccess ? { allowed: true, reason: "internet access" } : { allowed: false, reason: "not in allow_out" };
    }
    if (!isIp && this.allow.some((r) => r.kind === "domain" && nameMatches(name, r))) return { allowed: true, reason: "allow_out name" };
    const cidrs = this.allow.filter((r): r is Extract<Rule, { kind: "cidr" }> => r.kind === "cidr");
    if (cidrs.length > 0 && keys.every(({ k }) => k && cidrs.some((r) => inCidr(k, r))))
      return { allowed: true, reason: "allow_out address" };
    return { allowed: false, reason: "not in allow_out" };
  }
}
