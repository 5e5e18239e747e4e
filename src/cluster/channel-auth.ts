// The internal channel's authentication: a forwarded request carries the sending node, the time and
// an HMAC-SHA256 (keyed by AGENTBOX_CLUSTER_SECRET) of those with the method and the path, so the
// owner knows it came from a node of the cluster and must not be forwarded again. The client's own
// key still travels in its Authorization header and is checked by the owner as usual.
import crypto from "node:crypto";

export const FORWARDED_BY = "x-agentbox-node";
export const FORWARDED_AT = "x-agentbox-node-time";
export const FORWARDED_SIG = "x-agentbox-node-sig";

/** How far a forwarded request's time may be from the owner's clock. */
export const MAX_SKEW_MS = 60_000;

type Secret = string | crypto.KeyObject;

function mac(secret: Secret, node: string, at: string, method: string, url: string): string {
  return crypto.createHmac("sha256", secret).update(`${node}\n${at}\n${method}\n${url}`).digest("base64url");
}

/** The headers a node adds to a request it forwards. */
export function sign(secret: Secret, node: string, method: string, url: string, now = Date.now()): Record<string, string> {
  const at = String(now);
  return { [FORWARDED_BY]: node, [FORWARDED_AT]: at, [FORWARDED_SIG]: mac(secret, node, at, method, url) };
}

/** A request's forwarding headers: none, malformed or out of time (`invalid`), or the claim to check. */
function claimOf(
  headers: Record<string, string | string[] | undefined>,
  now: number,
): "none" | "invalid" | { node: string; at: string; sig: string } {
  const node = headers[FORWARDED_BY];
  const at = headers[FORWARDED_AT];
  const sig = headers[FORWARDED_SIG];
  if (node === undefined && sig === undefined) return "none";
  if (typeof node !== "string" || typeof at !== "string" || typeof sig !== "string") return "invalid";
  if (!(Math.abs(now - Number(at)) <= MAX_SKEW_MS)) return "invalid";
  return { node, at, sig };
}

/**
 * `none`: not a forwarded request; `valid`: forwarded by a node holding the secret, recently;
 * `invalid`: it claims to be forwarded but the signature or the time is wrong.
 */
export function verify(
  secret: Secret,
  headers: Record<string, string | string[] | undefined>,
  method: string,
  url: string,
  now = Date.now(),
): "none" | "valid" | "invalid" {
  const c = claimOf(headers, now);
  if (typeof c === "string") return c;
  const want = Buffer.from(mac(secret, c.node, c.at, method, url));
  const got = Buffer.from(c.sig);
  return want.length === got.length && crypto.timingSafeEqual(want, got) ? "valid" : "invalid";
}

/** How long a node reuses the signature of one request line (well inside MAX_SKEW_MS). */
const REUSE_MS = 1000;
const CACHE_MAX = 10_000;

/**
 * One node's side of the channel, with the per-request HMACs taken off the hot path: the secret
 * is imported once, a request line sent again within a second (a client's runs in one sandbox)
 * reuses its signature, and a receiver that has checked a signature for a request line does not
 * check it again while its time is in the window. What is accepted is exactly what verify()
 * accepts; only the repeated work goes.
 */
export class ChannelAuth {
  private readonly key: crypto.KeyObject;
  private readonly signed = new Map<string, { at: number; headers: Record<string, string> }>();
  private readonly verified = new Set<string>();

  constructor(
    secret: string,
    private readonly node: string,
  ) {
    this.key = crypto.createSecretKey(Buffer.from(secret));
  }

  sign(method: string, url: string, now = Date.now()): Record<string, string> {
    const line = `${method} ${url}`;
    const hit = this.signed.get(line);
    if (hit && now - hit.at < REUSE_MS) return hit.headers;
    const headers = sign(this.key, this.node, method, url, now);
    if (this.signed.size >= CACHE_MAX) this.signed.clear();
    this.signed.set(line, { at: now, headers });
    return headers;
  }

  verify(
    headers: Record<string, string | string[] | undefined>,
    method: string,
    url: string,
    now = Date.now(),
  ): "none" | "valid" | "invalid" {
    const c = claimOf(headers, now);
    if (typeof c === "string") return c;
    const seen = `${c.node}\n${c.at}\n${method}\n${url}\n${c.sig}`;
    if (this.verified.has(seen)) return "valid";
    const result = verify(this.key, headers, method, url, now);
    if (result === "valid") {
      if (this.verified.size >= CACHE_MAX) this.verified.clear();
      this.verified.add(seen);
    }
    return result;
  }
}
