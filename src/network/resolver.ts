// Name resolution for the egress proxy: the proxy resolves every name itself (the sandbox has no
// DNS), once per connection, and connects to exactly the addresses it checked. An operator's
// override (AGENTBOX_EGRESS_HOSTS) maps names to fixed addresses first; only those mapped
// addresses count as trusted (the never-reachable ranges are not applied to them).
import dns from "node:dns";
import net from "node:net";

export interface Resolved {
  addresses: string[];
  /** Addresses the operator mapped this name to. */
  trusted: string[];
  /** A port the override sends every connection to this name to, whatever port was asked for. */
  port?: number;
}

interface Mapping {
  address: string;
  port?: number;
}

const LOOKUP_TIMEOUT_MS = 5000;

/** `name=address`, `name=address:port`, `name=[v6]:port`, comma-separated. */
export function parseHosts(text: string): Map<string, Mapping> {
  const map = new Map<string, Mapping>();
  for (const item of text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = item.indexOf("=");
    const name = item.slice(0, eq).trim().toLowerCase();
    const target = item.slice(eq + 1).trim();
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(target) ?? /^([^:]+)(?::(\d+))?$/.exec(target);
    if (eq <= 0 || !m || net.isIP(m[1] as string) === 0) throw new Error(`AGENTBOX_EGRESS_HOSTS: '${item}' is not name=address[:port]`);
    map.set(name, { address: m[1] as string, port: m[2] === undefined ? undefined : Number(m[2]) });
  }
  return map;
}

export class Resolver {
  private readonly hosts: Map<string, Mapping>;

  constructor(hostsSetting: string) {
    this.hosts = parseHosts(hostsSetting);
  }

  /** The operator fixed this name's address: resolving it asks no DNS server. */
  mapped(host: string): boolean {
    return this.hosts.has(host.toLowerCase().replace(/\.$/, ""));
  }

  async resolve(host: string): Promise<Resolved> {
    const name = host.toLowerCase().replace(/\.$/, "");
    if (net.isIP(name) !== 0) return { addresses: [name], trusted: [] };
    const mapped = this.hosts.get(name);
    if (mapped) return { addresses: [mapped.address], trusted: [mapped.address], port: mapped.port };
    let timer: NodeJS.Timeout | undefined;
    try {
      const found = await Promise.race([
        dns.promises.lookup(name, { all: true, verbatim: true }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("lookup timed out")), LOOKUP_TIMEOUT_MS);
        }),
      ]);
      return { addresses: [...new Set(found.map((a) => a.address))], trusted: [] };
    } catch {
      return { addresses: [], trusted: [] };
    } finally {
      clearTimeout(timer);
    }
  }
}
