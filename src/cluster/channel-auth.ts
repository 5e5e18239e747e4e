// The internal channel's authentication: a forwarded request carries the sending node, the time, a
// nonce and an HMAC-SHA256 (keyed by AGENTBOX_CLUSTER_SECRET) of those with the method, the path and
// the client's Host, so the owner knows it came from a node of the cluster, must not be forwarded
// again, and takes it once (a replayed request is refused). The client's own
// key still travels in its Authorization header and is checked by the owner as usual.
import crypto from "node:crypto";

export const FORWARDED_BY = "x-agentbox-node";
export const FORWARDED_AT = "x-agentbox-node-time";
export const FORWARDED_SIG = "x-agentbox-node-sig";
/** A random value, new for every signed request: an owner refuses one it has seen (a replay). */
export const FORWARDED_NONCE = "x-agentbox-node-nonce";
/**
 * The Host the client sent to the node that forwards its request: the owner answers with it, as
 * that node would (a port's URL, a share link, the X-Forwarded-Host a sandbox's server sees), not
 * with its own internal address. Covered by the signature; honoured only on a request a node signed.
 */
export const ORIGIN_HOST = "x-agentbox-origin-host";

// Every header of the internal channel begins with x-agentbox- (src/common/internal-headers.ts):
// none reaches a sandbox, and none a client sends is believed. Keep new ones under that prefix.

/** How far a forwarded request's time may be from the owner's clock (nodes keep their clocks by NTP). */
export const MAX_SKEW_MS = 10_000;

/** A nonce as a node makes it (16 random bytes, base64url) or near: anything else is refused. */
const NONCE = /^[A-Za-z0-9_-]{16,64}$/;

type Secret = string | crypto.KeyObject;
type Headers = Record<string, string | string[] | undefined>;

function mac(secret: Secret, node: string, at: string, nonce: string, method: string, url: string, origin: string): string {
  return crypto.createHmac("sha256", secret).update(`${node}\n${at}\n${nonce}\n${method}\n${url}\n${origin}`).digest("base64url");
}

/**
 * The headers a node adds to a request it forwards: its name, the time, a new nonce, the client's
 * Host (`origin`, when it sent one) and the signature of all of them with the method and the path.
 */
export function sign(secret: Secret, node: string, method: string, url: string, now = Date.now(), origin?: string): Record<string, string> {
  const at = String(now);
  const nonce = crypto.randomBytes(16).toString("base64url");
  const headers: Record<string, string> = {
    [FORWARDED_BY]: node,
    [FORWARDED_AT]: at,
    [FORWARDED_NONCE]: nonce,
    [FORWARDED_SIG]: mac(secret, node, at, nonce, method, url, origin ?? ""),
  };
  if (origin !== undefined) headers[ORIGIN_HOST] = origin;
  return headers;
}

/** A request's forwarding headers: none, malformed or out of time (`invalid`), or the claim to check. */
function claimOf(
  headers: Headers,
  now: number,
): "none" | "invalid" | { node: string; at: string; nonce: string; sig: string; origin: string } {
  const node = headers[FORWARDED_BY];
  const at = headers[FORWARDED_AT];
  const sig = headers[FORWARDED_SIG];
  const nonce = headers[FORWARDED_NONCE];
  const origin = headers[ORIGIN_HOST];
  if (node === undefined && sig === undefined && nonce === undefined) return "none";
  if (typeof node !== "string" || typeof at !== "string" || typeof sig !== "string" || typeof nonce !== "string") return "invalid";
  if (origin !== undefined && typeof origin !== "string") return "invalid";
  if (!NONCE.test(nonce) || !(Math.abs(now - Number(at)) <= MAX_SKEW_MS)) return "invalid";
  return { node, at, nonce, sig, origin: origin ?? "" };
}

function macMatches(
  secret: Secret,
  c: { node: string; at: string; nonce: string; sig: string; origin: string },
  method: string,
  url: string,
): boolean {
  const want = Buffer.from(mac(secret, c.node, c.at, c.nonce, method, url, c.origin));
  const got = Buffer.from(c.sig);
  return want.length === got.length && crypto.timingSafeEqual(want, got);
}

/**
 * The signature alone (no memory of nonces: ChannelAuth refuses replays). `none`: not a forwarded
 * request; `valid`: signed by a node holding the secret, recently; `invalid`: it claims to be
 * forwarded but the signature or the time is wrong.
 */
export function verify(secret: Secret, headers: Headers, method: string, url: string, now = Date.now()): "none" | "valid" | "invalid" {
  const c = claimOf(headers, now);
  if (typeof c === "string") return c;
  return macMatches(secret, c, method, url) ? "valid" : "invalid";
}

/**
 * Nonces seen within the window, in two generations swapped every 2 × MAX_SKEW_MS: a nonce is
 * remembered at least as long as a request carrying it can be in time. Bounded: past `max` nonces
 * in one generation, new signed requests are refused until the next swap (a flood only a holder
 * of the secret can send).
 */
class SeenNonces {
  private current = new Set<string>();
  private previous = new Set<string>();
  /** When the generations were last swapped (the first nonce's time, at first). */
  private swappedAt = Number.NaN;

  constructor(private readonly max: number) {}

  /** Records `nonce`: false when it was seen already in the window, or when no more fit. */
  add(nonce: string, now: number): boolean {
    if (Number.isNaN(this.swappedAt)) this.swappedAt = now;
    if (now - this.swappedAt >= 2 * MAX_SKEW_MS) {
      // Long idle: both generations are past the window.
      this.previous = now - this.swappedAt >= 4 * MAX_SKEW_MS ? new Set() : this.current;
      this.current = new Set();
      this.swappedAt = now;
    }
    if (this.current.has(nonce) || this.previous.has(nonce)) return false;
    if (this.current.size >= this.max) return false;
    this.current.add(nonce);
    return true;
  }
}

/** Nonces one node remembers per generation (about 60 bytes each). */
const MAX_NONCES = 1_000_000;

/**
 * One node's side of the channel: the secret imported once, and the nonces of the requests it
 * accepted remembered for the window, so that a signed request is taken once only. A request's
 * own headers may be checked more than once on its way (the relay, then Fastify's hook): the
 * answer for one headers object is kept with it, so the second check is not a replay.
 */
export class ChannelAuth {
  private readonly key: crypto.KeyObject;
  private readonly seen: SeenNonces;
  private readonly checked = new WeakMap<object, "valid" | "invalid">();

  constructor(
    secret: string,
    private readonly node: string,
    maxNonces = MAX_NONCES,
  ) {
    this.key = crypto.createSecretKey(Buffer.from(secret));
    this.seen = new SeenNonces(maxNonces);
  }

  /** The headers for one request (a new nonce each time: never send them twice); `origin`: the client's Host. */
  sign(method: string, url: string, now = Date.now(), origin?: string): Record<string, string> {
    return sign(this.key, this.node, method, url, now, origin);
  }

  verify(headers: Headers, method: string, url: string, now = Date.now()): "none" | "valid" | "invalid" {
    const known = this.checked.get(headers);
    if (known) return known;
    const c = claimOf(headers, now);
    if (c === "none") return c;
    const result =
      c !== "invalid" && macMatches(this.key, c, method, url) && this.seen.add(`${c.node} ${c.nonce}`, now) ? "valid" : "invalid";
    this.checked.set(headers, result);
    return result;
  }
}
