// API keys: created by an operator, stored only as SHA-256 hashes, shown once at creation.
import crypto from "node:crypto";
import type { Db } from "./db.js";

export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  rateLimitPerMinute: number | null;
  maxConcurrentRuns: number | null;
}

export interface KeyStore {
  create(input: { name: string; tenantId?: string; rateLimitPerMinute?: number; maxConcurrentRuns?: number }): {
    key: string;
    record: ApiKeyRecord;
  };
  verify(key: string): ApiKeyRecord | undefined;
  list(): ApiKeyRecord[];
  revoke(idOrPrefix: string): boolean;
}

interface Row {
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  rate_limit_per_minute: number | null;
  max_concurrent_runs: number | null;
}

const toRecord = (r: Row): ApiKeyRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  name: r.name,
  prefix: r.prefix,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  rateLimitPerMinute: r.rate_limit_per_minute,
  maxConcurrentRuns: r.max_concurrent_runs,
});

export const hashKey = (key: string) => crypto.createHash("sha256").update(key).digest("hex");

/** The bootstrap key from AGENTBOX_API_KEY: valid for the default tenant, never stored. */
export const BOOTSTRAP_TENANT = "default";

export class SqliteKeyStore implements KeyStore {
  private readonly byHash;
  private readonly bootstrapHash: string | undefined;

  constructor(
    private readonly db: Db,
    bootstrapKey?: string,
  ) {
    this.byHash = db.prepare<[string], Row>("SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL");
    this.bootstrapHash = bootstrapKey ? hashKey(bootstrapKey) : undefined;
  }

  create(input: { name: string; tenantId?: string; rateLimitPerMinute?: number; maxConcurrentRuns?: number }) {
    const key = `abx_${crypto.randomBytes(24).toString("base64url")}`;
    const row: Row = {
      id: crypto.randomUUID(),
      tenant_id: input.tenantId ?? crypto.randomUUID(),
      name: input.name,
      prefix: key.slice(0, 10),
      created_at: new Date().toISOString(),
      revoked_at: null,
      rate_limit_per_minute: input.rateLimitPerMinute ?? null,
      max_concurrent_runs: input.maxConcurrentRuns ?? null,
    };
    this.db
      .prepare(
        `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, created_at, rate_limit_per_minute, max_concurrent_runs)
         VALUES (@id, @tenant_id, @name, @prefix, @hash, @created_at, @rate_limit_per_minute, @max_concurrent_runs)`,
      )
      .run({ ...row, hash: hashKey(key) });
    return { key, record: toRecord(row) };
  }

  verify(key: string): ApiKeyRecord | undefined {
    const hash = hashKey(key);
    if (this.bootstrapHash !== undefined && crypto.timingSafeEqual(Buffer.from(hash), Buffer.from(this.bootstrapHash))) {
      return {
        id: "bootstrap",
        tenantId: BOOTSTRAP_TENANT,
        name: "bootstrap",
        prefix: key.slice(0, 10),
        createdAt: new Date(0).toISOString(),
        revokedAt: null,
        rateLimitPerMinute: null,
        maxConcurrentRuns: null,
      };
    }
    const row = this.byHash.get(hash);
    return row ? toRecord(row) : undefined;
  }

  list(): ApiKeyRecord[] {
    return this.db.prepare<[], Row>("SELECT * FROM api_keys ORDER BY created_at").all().map(toRecord);
  }

  revoke(idOrPrefix: string): boolean {
    const res = this.db
      .prepare("UPDATE api_keys SET revoked_at = ? WHERE (id = ? OR prefix = ?) AND revoked_at IS NULL")
      .run(new Date().toISOString(), idOrPrefix, idOrPrefix);
    return res.changes > 0;
  }
}
