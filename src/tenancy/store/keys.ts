// API keys as stored: created by an operator, kept only as SHA-256 hashes (the key itself is shown
// once, at creation). Also the operator's admin key, stored the same way. The caches and the
// bootstrap key in front of these stores are in src/tenancy/key-directory.ts.
import type { ApiKeyRecord } from "../../common/api-key.js";
import crypto from "node:crypto";
import type { Db } from "../../store/db.js";

export type { ApiKeyRecord } from "../../common/api-key.js";

export interface NewKey {
  name: string;
  tenantId?: string;
  rateLimitPerMinute?: number;
  maxConcurrentRuns?: number;
}

/** A key's row as stored (snake_case); the admin API shows the same fields (see KeyJson in the CLI's client). */
export interface KeyRow {
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  rate_limit_per_minute: number | null;
  max_concurrent_runs: number | null;
  last_used_at: string | null;
}

export const toKeyRecord = (r: KeyRow): ApiKeyRecord => ({
  id: r.id,
  tenantId: r.tenant_id,
  name: r.name,
  prefix: r.prefix,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  rateLimitPerMinute: r.rate_limit_per_minute,
  maxConcurrentRuns: r.max_concurrent_runs,
  lastUsedAt: r.last_used_at ?? null,
});

export const hashKey = (key: string) => crypto.createHash("sha256").update(key).digest("hex");

/** The API keys' table (made by the core migrations in db.ts). */
export interface KeyStore {
  /** Stores a new key by its hash; throws when the id or the hash exists already. */
  insert(record: ApiKeyRecord, hash: string): Promise<void>;
  /** The key with this hash, if it exists and is not revoked. */
  findActiveByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  /** Every key, revoked ones too, oldest first. */
  list(): Promise<ApiKeyRecord[]>;
  get(id: string): Promise<ApiKeyRecord | undefined>;
  /** Revokes the active key whose id or prefix this is; false when there is none. */
  revoke(idOrPrefix: string, at: string): Promise<boolean>;
  /** The key with this id exists and is not revoked. */
  isActive(id: string): Promise<boolean>;
  /** Writes last-use times (ISO-8601) of many keys at once. */
  touch(lastUsed: Array<[id: string, at: string]>): Promise<void>;
}

export class SqliteKeyStore implements KeyStore {
  private readonly stmts;
  private readonly touchAll: (lastUsed: Array<[string, string]>) => void;

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, created_at, rate_limit_per_minute, max_concurrent_runs)
         VALUES (@id, @tenant_id, @name, @prefix, @hash, @created_at, @rate_limit_per_minute, @max_concurrent_runs)`,
      ),
      byHash: db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL"),
      activeById: db.prepare<[string], { ok: number }>("SELECT 1 AS ok FROM api_keys WHERE id = ? AND revoked_at IS NULL"),
      list: db.prepare<[], KeyRow>("SELECT * FROM api_keys ORDER BY created_at, id"),
      get: db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE id = ?"),
      revoke: db.prepare("UPDATE api_keys SET revoked_at = ? WHERE (id = ? OR prefix = ?) AND revoked_at IS NULL"),
      touch: db.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?"),
    };
    this.touchAll = db.transaction((lastUsed: Array<[string, string]>) => {
      for (const [id, at] of lastUsed) this.stmts.touch.run(at, id);
    });
  }

  async insert(r: ApiKeyRecord, hash: string): Promise<void> {
    this.stmts.insert.run({
      id: r.id,
      tenant_id: r.tenantId,
      name: r.name,
      prefix: r.prefix,
      hash,
      created_at: r.createdAt,
      rate_limit_per_minute: r.rateLimitPerMinute,
      max_concurrent_runs: r.maxConcurrentRuns,
    });
  }

  async findActiveByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const row = this.stmts.byHash.get(hash);
    return row && toKeyRecord(row);
  }

  async list(): Promise<ApiKeyRecord[]> {
    return this.stmts.list.all().map(toKeyRecord);
  }

  async get(id: string): Promise<ApiKeyRecord | undefined> {
    const row = this.stmts.get.get(id);
    return row && toKeyRecord(row);
  }

  async revoke(idOrPrefix: string, at: string): Promise<boolean> {
    return this.stmts.revoke.run(at, idOrPrefix, idOrPrefix).changes > 0;
  }

  async isActive(id: string): Promise<boolean> {
    return this.stmts.activeById.get(id) !== undefined;
  }

  async touch(lastUsed: Array<[id: string, at: string]>): Promise<void> {
    // The service closing writes what is pending; a database already closed has nothing to take it.
    if (lastUsed.length === 0 || !this.db.open) return;
    this.touchAll(lastUsed);
  }
}

/** The operator's admin key as stored: only its hash (one row; rotation replaces it). */
export interface AdminKeyStore {
  /** The stored hashes (none, or one). */
  hashes(): Promise<string[]>;
  /** Replaces whatever is stored by this key, in one atomic step. */
  replace(id: string, prefix: string, hash: string, createdAt: string): Promise<void>;
}

export class SqliteAdminKeyStore implements AdminKeyStore {
  private readonly replaceTx: (id: string, prefix: string, hash: string, createdAt: string) => void;
  private readonly hashesStmt;

  constructor(db: Db) {
    this.hashesStmt = db.prepare<[], { hash: string }>("SELECT hash FROM admin_keys");
    const clear = db.prepare("DELETE FROM admin_keys");
    const insert = db.prepare("INSERT INTO admin_keys (id, prefix, hash, created_at) VALUES (?, ?, ?, ?)");
    this.replaceTx = db.transaction((id: string, prefix: string, hash: string, createdAt: string) => {
      clear.run();
      insert.run(id, prefix, hash, createdAt);
    });
  }

  async hashes(): Promise<string[]> {
    return this.hashesStmt.all().map((r) => r.hash);
  }

  async replace(id: string, prefix: string, hash: string, createdAt: string): Promise<void> {
    this.replaceTx(id, prefix, hash, createdAt);
  }
}
