// Share links of sandbox ports: a token that names one port of one sandbox of one tenant until an
// expiry, and the API key that made it (the link works only while that key does), signed with
// HMAC-SHA256 under a key only the service holds. Nothing is stored per token.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

export interface ShareClaim {
  tenantId: string;
  /** The id of the API key that made the link. */
  keyId: string;
  sandboxId: string;
  port: number;
  /** Unix seconds. */
  expiresAt: number;
}

/** The operator's key, else a random one made once and kept (0600) in the data dir so links survive a restart. */
export function shareKey(dataDir: string, configured: string | undefined): Buffer {
  if (configured) return Buffer.from(configured);
  const file = path.join(dataDir, "share-link.key");
  try {
    return fs.readFileSync(file);
  } catch {
    const key = crypto.randomBytes(32);
    fs.writeFileSync(file, key, { mode: 0o600, flag: "wx" });
    return fs.readFileSync(file);
  }
}

export class ShareTokens {
  constructor(private readonly key: Buffer) {}

  private sign(payload: string): string {
    return crypto.createHmac("sha256", this.key).update(payload).digest("base64url");
  }

  make(claim: ShareClaim): string {
    const payload = Buffer.from(JSON.stringify([claim.tenantId, claim.sandboxId, claim.port, claim.expiresAt, claim.keyId])).toString(
      "base64url",
    );
    return `${payload}.${this.sign(payload)}`;
  }

  /** The claim of a valid, unexpired token for exactly this sandbox and port; undefined otherwise. */
  verify(token: string, sandboxId: string, port: number, now = Date.now() / 1000): ShareClaim | undefined {
    const m = /^([A-Za-z0-9_-]{1,2000})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!m) return undefined;
    const expected = Buffer.from(this.sign(m[1] as string));
    const given = Buffer.from(m[2] as string);
    if (!crypto.timingSafeEqual(expected, given)) return undefined;
    let parts: unknown;
    try {
      parts = JSON.parse(Buffer.from(m[1] as string, "base64url").toString());
    } catch {
      return undefined;
    }
    // Links of the earlier four-field form name no key, so could outlive a revoked one: refused.
    if (!Array.isArray(parts) || parts.length !== 5) return undefined;
    const [tenantId, sid, p, exp, keyId] = parts as [string, string, number, number, string];
    if (sid !== sandboxId || p !== port || typeof exp !== "number" || exp <= now || typeof tenantId !== "string") return undefined;
    if (typeof keyId !== "string") return undefined;
    return { tenantId, keyId, sandboxId: sid, port: p, expiresAt: exp };
  }
}
