// Where a webhook may be sent: URL rules, and the address check done at registration and again at
// every delivery (a name that re-resolves to a private address is caught; the delivery connects to
// the address that was checked, never to a second lookup).
import dns from "node:dns";
import net from "node:net";
import { hostRanges } from "../network/host-ranges.js";
import { addressKey, SPECIAL_RANGES } from "../network/policy.js";
import { Limiter } from "../common/limiter.js";

export const MAX_URL_LENGTH = 2048;
const LOOKUP_TIMEOUT_MS = 5000;
/**
 * Name lookups run on libuv's small thread pool, which file I/O shares: at most two at a time, so a
 * webhook host whose DNS never answers cannot take the pool. A slot is held until the lookup really
 * ends; the caller stops waiting after LOOKUP_TIMEOUT_MS (time in the queue included).
 */
const lookups = new Limiter(2);

function lookupAll(host: string): Promise<dns.LookupAddress[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new DestinationError(`Looking up '${host}' took longer than ${LOOKUP_TIMEOUT_MS} ms`)),
      LOOKUP_TIMEOUT_MS,
    );
    void lookups.run(() =>
      dns.promises
        .lookup(host, { all: true, verbatim: true })
        .then(resolve, (err: NodeJS.ErrnoException) =>
          reject(new DestinationError(`The webhook host '${host}' does not resolve (${err.code ?? "error"})`)),
        )
        .finally(() => clearTimeout(timer)),
    );
  });
}

/** A webhook URL that may not be used; the message says why (it becomes a 400). */
export class DestinationError extends Error {}

/** Parses a webhook URL: http or https, a host, no credentials, at most MAX_URL_LENGTH characters. */
export function parseWebhookUrl(raw: string): URL {
  if (raw.length > MAX_URL_LENGTH) throw new DestinationError(`The webhook URL is longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DestinationError(`'${raw.slice(0, 100)}' is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new DestinationError("A webhook URL must be http:// or https://");
  if (!url.hostname) throw new DestinationError("A webhook URL must name a host");
  if (url.username || url.password) throw new DestinationError("A webhook URL may not carry credentials; sign with the secret instead");
  return url;
}

/** A check for addresses in the never-reachable ranges or in `hostRanges` (this host's own networks and gateways). */
export function privateAddressCheck(hostRanges: string[]): (address: string) => boolean {
  const list = new net.BlockList();
  for (const cidr of [...SPECIAL_RANGES, ...hostRanges]) {
    const [addr, prefix] = cidr.split("/") as [string, string | undefined];
    const family = net.isIPv6(addr) ? "ipv6" : "ipv4";
    if (prefix === undefined) list.addAddress(addr, family);
    else list.addSubnet(addr, Number(prefix), family);
  }
  return (address) => {
    const key = addressKey(address);
    if (!key) return true;
    if (key.family === 4) {
      const b = key.bits;
      const v4 = [(b >> 24n) & 255n, (b >> 16n) & 255n, (b >> 8n) & 255n, b & 255n].join(".");
      return list.check(v4, "ipv4");
    }
    return list.check(address.split("%")[0] as string, "ipv6");
  };
}

let blocked: ((address: string) => boolean) | undefined;

/** True for loopback, link-local, private, and other addresses that are not public unicast, and this host's networks. */
export function isPrivateAddress(address: string): boolean {
  blocked ??= privateAddressCheck(hostRanges());
  return blocked(address);
}

export interface Resolved {
  address: string;
  family: 4 | 6;
}

/**
 * The address to connect to for `url`: its IP, or what its name resolves to. Refused if any
 * resolved address is private (unless `allowPrivate`): a name must not be able to mix in one.
 */
export async function resolveDestination(url: URL, allowPrivate: boolean): Promise<Resolved> {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  let addresses: { address: string; family: number }[];
  if (net.isIP(host) !== 0) addresses = [{ address: host, family: net.isIP(host) }];
  else {
    addresses = await lookupAll(host);
  }
  const first = addresses[0];
  if (!first) throw new DestinationError(`The webhook host '${host}' does not resolve`);
  if (!allowPrivate) {
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) {
      throw new DestinationError(
        `The webhook URL resolves to ${bad.address}, a loopback, link-local or private address; the operator may allow those with AGENTBOX_WEBHOOK_ALLOW_PRIVATE=1`,
      );
    }
  }
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}
