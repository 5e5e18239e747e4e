// This host's own networks, never reachable from a sandbox's egress or a webhook whatever range
// they are in (a host on a public subnet has public neighbours, and a gateway that answers on
// them): the addresses and subnets of its interfaces, and every gateway in its routing tables.
import fs from "node:fs";
import os from "node:os";
import { addressKey, networkOf } from "./policy.js";

/**
 * Subnets wider than these count by their address alone: an interface configured with a /0 (or
 * a very wide prefix) must not make the whole internet unreachable.
 */
const MIN_PREFIX = { 4: 8, 6: 32 } as const;

function read(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** Gateways (next hops) of /proc/net/route: addresses in little-endian hex. */
export function ipv4Gateways(routeTable: string): string[] {
  const out: string[] = [];
  for (const line of routeTable.split("\n").slice(1)) {
    const hex = line.trim().split(/\s+/)[2];
    if (!hex || !/^[0-9A-Fa-f]{8}$/.test(hex) || /^0+$/.test(hex)) continue;
    const n = Number.parseInt(hex, 16);
    out.push([n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24].join("."));
  }
  return out;
}

/** Next hops of /proc/net/ipv6_route (the fifth field, 32 hex digits). */
export function ipv6Gateways(routeTable: string): string[] {
  const out: string[] = [];
  for (const line of routeTable.split("\n")) {
    const hex = line.trim().split(/\s+/)[4];
    if (!hex || !/^[0-9a-fA-F]{32}$/.test(hex) || /^0+$/.test(hex)) continue;
    out.push((hex.match(/.{4}/g) as string[]).join(":"));
  }
  return out;
}

/**
 * CIDRs of the host's own addresses, their subnets and its gateways, without duplicates.
 * The arguments default to this machine's (for tests: any interfaces and routing tables).
 */
export function hostRanges(
  interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]> = os.networkInterfaces(),
  routeTable = read("/proc/net/route"),
  ipv6RouteTable = read("/proc/net/ipv6_route"),
): string[] {
  const out = new Set<string>();
  const add = (address: string, prefix?: number) => {
    const plain = address.replace(/%.*$/, "");
    const key = addressKey(plain);
    if (!key) return;
    const host = networkOf(plain, 128);
    if (host) out.add(host);
    if (prefix === undefined) return;
    // An IPv6 form carrying an IPv4 address counts as that address: its prefix loses the 96 bits before it.
    const bits = key.family === 4 && plain.includes(":") ? prefix - 96 : prefix;
    if (bits >= MIN_PREFIX[key.family]) {
      const subnet = networkOf(plain, bits);
      if (subnet) out.add(subnet);
    }
  };
  for (const infos of Object.values(interfaces)) {
    for (const info of infos ?? []) {
      const prefix = info.cidr ? Number(info.cidr.split("/")[1]) : undefined;
      add(info.address, Number.isInteger(prefix) ? prefix : undefined);
    }
  }
  for (const gw of [...ipv4Gateways(routeTable), ...ipv6Gateways(ipv6RouteTable)]) add(gw);
  return [...out];
}
