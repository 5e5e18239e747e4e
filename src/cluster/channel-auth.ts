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

function mac(secret: string, node: string, at: string, method: string, url: string): string {
  return crypto.createHmac("sha256", secret).update(`${node}\n${at}\n${method}\n${url}`).digest("base64url");
}

/** The headers a node adds to a request it forwards. */
export function sign(secret: string, node: string, method: string, url: string, now = Date.now()): Record<string, string> {
  const at = String(now);
  return { [FORWARDED_BY]: node, [FORWARDED_AT]: at, [FORWARDED_SIG]: mac(secret, node, at, method, url) };
}

/**
 * `none`: not a forwarded request; `valid`: forwarded by a node holding the secret, recently;
 * `invalid`: it claims to be forwarded but the signature or the time is wrong.
 */
export function verify(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  method: string,
  url: string,
  now = Date.now(),
): "none" | "valid" | "invalid" {
  const node = headers[FORWARDED_BY];
  const at = headers[FORWARDED_AT];
  const sig = headers[FORWARDED_SIG];
  if (node === undefined && sig === undefined) return "none";
  if (typeof node !== "string" || typeof at !== "string" || typeof sig !== "string") return "invalid";
  if (!(Math.abs(now - Number(at)) <= MAX_SKEW_MS)) return "invalid";
  const want = Buffer.from(mac(secret, node, at, method, url));
  const got = Buffer.from(sig);
  return want.length === got.length && crypto.timingSafeEqual(want, got) ? "valid" : "invalid";
}
