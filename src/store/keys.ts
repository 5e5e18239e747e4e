// API keys: created by an operator, stored only as SHA-256 hashes, shown once at creation. Also the
// operator's admin key (AdminKeys), which manages keys and tenants and is never a tenant's key.
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
  /** The last request with the key; kept in memory, written to the database at most once a minute. */
  lastUsedAt: string | null;
}

export interface NewKey {
  name: string;
  tenantId?: string;
  rateLimitPerMinute?: number;
  maxConcurrentRuns?: number;
}

export interface KeyStore {
  create(input: NewKey): { key: string; record: ApiKeyRecord };
  verify(key: string): ApiKeyRecord | undefined;
  list(): ApiKeyRecord[];
  get(id: string): ApiKeyRecord | undefined;
  revoke(idOrPrefix: string): boolean;
  /** The tenant of the bootstrap key (AGENTBOX_API_KEY), which is never stored, when one is set. */
  readonly bootstrapTenant: string | undefined;
  /** The key with this id works now (it exists and is not revoked). */
  isActive(id: string): boolean;
  /** Writes the pending last-used times now (they are otherwise written once a minute). */
  flush(): void;
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

const toRecord = (r: KeyRow): ApiKeyRecord => ({
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

const sameHash = (a: string, b: string) => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The bootstrap key from AGENTBOX_API_KEY: valid for the default tenant, never stored. */
export const BOOTSTRAP_TENANT = "default";
const BOOTSTRAP_ID = "bootstrap";

/** How often last-used times reach the database: a key used all the time costs one write a minute. */
const LAST_USED_FLUSH_MS = 60_000;

export class SqliteKeyStore implements KeyStore {
  private readonly byHash;
  private readonly activeById;
  private readonly bootstrapHash: string | undefined;
  /** Last use per key id (ms), kept in memory on the request path and written by the timer. */
  private readonly lastUsed = new Map<string, number>();
  private readonly dirty = new Set<string>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Db,
    bootstrapKey?: string,
  ) {
    this.byHash = db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL");
    this.activeById = db.prepare<[string], { ok: number }>("SELECT 1 AS ok FROM api_keys WHERE id = ? AND revoked_at IS NULL");
    this.bootstrapHash = bootstrapKey ? hashKey(bootstrapKey) : undefined;
    this.timer = setInterval(() => this.flush(), LAST_USED_FLUSH_MS).unref();
  }

  get bootstrapTenant(): string | undefined {
    return this.bootstrapHash === undefined ? undefined : BOOTSTRAP_TENANT;
  }

  create(input: NewKey) {
    const key = `abx_${crypto.randomBytes(24).toString("base64url")}`;
    const row: KeyRow = {
      id: crypto.randomUUID(),
      tenant_id: input.tenantId ?? crypto.randomUUID(),
      name: input.name,
      prefix: key.slice(0, 10),
      created_at: new Date().toISOString(),
      revoked_at: null,
      rate_limit_per_minute: input.rateLimitPerMinute ?? null,
      max_concurrent_runs: input.maxConcurrentRuns ?? null,
      last_used_at: null,
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
    if (this.bootstrapHash !== undefined && sameHash(hash, this.bootstrapHash)) {
      return {
        id: BOOTSTRAP_ID,
        tenantId: BOOTSTRAP_TENANT,
        name: "bootstrap",
        prefix: key.slice(0, 10),
        createdAt: new Date(0).toISOString(),
        revokedAt: null,
        rateLimitPerMinute: null,
        maxConcurrentRuns: null,
        lastUsedAt: null,
      };
    }
    const row = this.byHash.get(hash);
    if (!row) return undefined;
    this.lastUsed.set(row.id, Date.now());
    this.dirty.add(row.id);
    return toRecord(row);
  }

  private withLastUse(record: ApiKeyRecord): ApiKeyRecord {
    const ms = this.lastUsed.get(record.id);
    return ms === undefined ? record : { ...record, lastUsedAt: new Date(ms).toISOString() };
  }

  list(): ApiKeyRecord[] {
    return this.db
      .prepare<[], KeyRow>("SELECT * FROM api_keys ORDER BY created_at, id")
      .all()
      .map((r) => this.withLastUse(toRecord(r)));
  }

  get(id: string): ApiKeyRecord | undefined {
    const row = this.db.prepare<[string], KeyRow>("SELECT * FROM api_keys WHERE id = ?").get(id);
    return row ? this.withLastUse(toRecord(row)) : undefined;
  }

  isActive(id: string): boolean {
    if (id === BOOTSTRAP_ID) return this.bootstrapHash !== undefined;
    return this.activeById.get(id) !== undefined;
  }

  revoke(idOrPrefix: string): boolean {
    const res = this.db
      .prepare("UPDATE api_keys SET revoked_at = ? WHERE (id = ? OR prefix = ?) AND revoked_at IS NULL")
      .run(new Date().toISOString(), idOrPrefix, idOrPrefix);
    return res.changes > 0;
  }

  flush(): void {
    if (this.dirty.size === 0 || !this.db.open) return;
    const update = this.db.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?");
    const ids = [...this.dirty];
    this.dirty.clear();
    this.db.transaction(() => {
      for (const id of ids) update.run(new Date(this.lastUsed.get(id) ?? Date.now()).toISOString(), id);
    })();
  }

  /** Stops the flush timer after writing what is pending. */
  close(): void {
    clearInterval(this.timer);
    this.flush();
  }
}

/**
 * The operator's admin key. From AGENTBOX_ADMIN_KEY when set (then nothing is stored); otherwise one
 * generated at first start, shown once and stored only as its hash. Read from the database on each
 * check: admin requests are rare, and a key rotated with the CLI takes effect at once.
 */
export class AdminKeys {
  private readonly envHash: string | undefined;

  constructor(
    private readonly db: Db,
    envKey?: string,
  ) {
    this.envHash = envKey ? hashKey(envKey) : undefined;
  }

  /** Where the admin key comes from. */
  get source(): "environment" | "stored" | "none" {
    if (this.envHash) return "environment";
    return this.db.prepare("SELECT 1 FROM admin_keys LIMIT 1").get() ? "stored" : "none";
  }

  /** At start: with no key from the environment and none stored, makes one and returns it (to show once). */
  ensure(): string | undefined {
    if (this.source !== "none") return undefined;
    return this.rotate();
  }

  /** Replaces the stored admin key with a new one and returns it (the old one stops working at once). */
  rotate(): string {
    const key = `abxadm_${crypto.randomBytes(32).toString("base64url")}`;
    this.db.transaction(() => {
      this.db.prepare("DELETE FROM admin_keys").run();
      this.db
        .prepare("INSERT INTO admin_keys (id, prefix, hash, created_at) VALUES (?, ?, ?, ?)")
        .run(crypto.randomUUID(), key.slice(0, 12), hashKey(key), new Date().toISOString());
    })();
    return key;
  }

  verify(key: string): boolean {
    const hash = hashKey(key);
    if (this.envHash !== undefined) return sameHash(hash, this.envHash);
    const stored = this.db.prepare<[], { hash: string }>("SELECT hash FROM admin_keys").all();
    return stored.some((row) => sameHash(hash, row.hash));
  }
}
