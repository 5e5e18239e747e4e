// The API keys as the service uses them, in front of KeyStore: the bootstrap key (AGENTBOX_API_KEY,
// never stored), an in-memory map of the keys already verified (every request is authenticated, so
// a known key costs no database read), and last-use times kept in memory and written once a minute.
// AdminKeys does the same for the operator's admin key. Keys are revoked only through this class
// (the admin API), which forgets them at once (in a cluster, every node's directory forgets them).
import crypto from "node:crypto";
import { type AdminKeyStore, type ApiKeyRecord, hashKey, type KeyStore, type NewKey } from "./store/keys.js";

const sameHash = (a: string, b: string) => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The bootstrap key from AGENTBOX_API_KEY: valid for the default tenant, never stored. */
export const BOOTSTRAP_TENANT = "default";
const BOOTSTRAP_ID = "bootstrap";

/** How often last-used times reach the database: a key used all the time costs one write a minute. */
const LAST_USED_FLUSH_MS = 60_000;

/** The API keys as the HTTP layer uses them (KeyDirectory, or a wrapper of it such as suspensions). */
export interface ApiKeys {
  readonly bootstrapTenant: string | undefined;
  create(input: NewKey): Promise<{ key: string; record: ApiKeyRecord }>;
  verify(key: string): Promise<ApiKeyRecord | undefined>;
  list(): Promise<ApiKeyRecord[]>;
  get(id: string): Promise<ApiKeyRecord | undefined>;
  isActive(id: string): Promise<boolean>;
  revoke(idOrPrefix: string): Promise<boolean>;
  flush(): Promise<void>;
}

export class KeyDirectory implements ApiKeys {
  private readonly bootstrapHash: string | undefined;
  /** Active keys already verified, by hash (never a miss: an unknown token is looked up each time). */
  private readonly known = new Map<string, ApiKeyRecord>();
  /** Last use per key id (ms), kept in memory on the request path and written by the timer. */
  private readonly lastUsed = new Map<string, number>();
  private readonly dirty = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  /** Told of every revocation made here (a cluster tells the other nodes: src/cluster/broadcast.ts). */
  private readonly revoked: ((idOrPrefix: string) => void)[] = [];

  constructor(
    private readonly store: KeyStore,
    bootstrapKey?: string,
  ) {
    this.bootstrapHash = bootstrapKey ? hashKey(bootstrapKey) : undefined;
    this.timer = setInterval(() => void this.flush().catch(() => {}), LAST_USED_FLUSH_MS).unref();
  }

  /** The tenant of the bootstrap key (AGENTBOX_API_KEY), which is never stored, when one is set. */
  get bootstrapTenant(): string | undefined {
    return this.bootstrapHash === undefined ? undefined : BOOTSTRAP_TENANT;
  }

  async create(input: NewKey): Promise<{ key: string; record: ApiKeyRecord }> {
    const key = `abx_${crypto.randomBytes(24).toString("base64url")}`;
    const record: ApiKeyRecord = {
      id: crypto.randomUUID(),
      tenantId: input.tenantId ?? crypto.randomUUID(),
      name: input.name,
      prefix: key.slice(0, 10),
      createdAt: new Date().toISOString(),
      revokedAt: null,
      rateLimitPerMinute: input.rateLimitPerMinute ?? null,
      maxConcurrentRuns: input.maxConcurrentRuns ?? null,
      lastUsedAt: null,
    };
    await this.store.insert(record, hashKey(key));
    return { key, record };
  }

  /** The key's record when it is valid (the bootstrap key, or a stored key not revoked). */
  async verify(key: string): Promise<ApiKeyRecord | undefined> {
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
    let record = this.known.get(hash);
    if (!record) {
      record = await this.store.findActiveByHash(hash);
      if (!record) return undefined;
      this.known.set(hash, record);
    }
    this.lastUsed.set(record.id, Date.now());
    this.dirty.add(record.id);
    return record;
  }

  private withLastUse(record: ApiKeyRecord): ApiKeyRecord {
    const ms = this.lastUsed.get(record.id);
    return ms === undefined ? record : { ...record, lastUsedAt: new Date(ms).toISOString() };
  }

  async list(): Promise<ApiKeyRecord[]> {
    return (await this.store.list()).map((r) => this.withLastUse(r));
  }

  async get(id: string): Promise<ApiKeyRecord | undefined> {
    const record = await this.store.get(id);
    return record && this.withLastUse(record);
  }

  /** The key with this id works now (it exists and is not revoked). */
  async isActive(id: string): Promise<boolean> {
    if (id === BOOTSTRAP_ID) return this.bootstrapHash !== undefined;
    return this.store.isActive(id);
  }

  /** Revokes by id or prefix; true if a key was revoked. It stops verifying at once. */
  async revoke(idOrPrefix: string): Promise<boolean> {
    const done = await this.store.revoke(idOrPrefix, new Date().toISOString());
    // Revocations are rare: the verified keys are simply looked up again.
    if (done) {
      this.known.clear();
      for (const listener of this.revoked) listener(idOrPrefix);
    }
    return done;
  }

  /** Calls `listener` after each revocation made through this directory. */
  onRevoked(listener: (idOrPrefix: string) => void): void {
    this.revoked.push(listener);
  }

  /** Forgets the verified keys (another node revoked one in the shared store): each is looked up again. */
  forget(): void {
    this.known.clear();
  }

  /** Writes the pending last-used times now (they are otherwise written once a minute). */
  async flush(): Promise<void> {
    if (this.dirty.size === 0) return;
    const ids = [...this.dirty];
    this.dirty.clear();
    await this.store.touch(ids.map((id) => [id, new Date(this.lastUsed.get(id) ?? Date.now()).toISOString()]));
  }

  /** Stops the flush timer after writing what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

/**
 * The operator's admin key. From AGENTBOX_ADMIN_KEY when set (then nothing is stored); otherwise one
 * generated at first start, shown once and stored only as its hash. Read from the store on each
 * check: admin requests are rare, and a key rotated with the CLI takes effect at once.
 */
export class AdminKeys {
  private readonly envHash: string | undefined;

  constructor(
    private readonly store: AdminKeyStore,
    envKey?: string,
  ) {
    this.envHash = envKey ? hashKey(envKey) : undefined;
  }

  /** Where the admin key comes from. */
  async source(): Promise<"environment" | "stored" | "none"> {
    if (this.envHash) return "environment";
    return (await this.store.hashes()).length > 0 ? "stored" : "none";
  }

  /** At start: with no key from the environment and none stored, makes one and returns it (to show once). */
  async ensure(): Promise<string | undefined> {
    if ((await this.source()) !== "none") return undefined;
    return this.rotate();
  }

  /** Replaces the stored admin key with a new one and returns it (the old one stops working at once). */
  async rotate(): Promise<string> {
    const key = `abxadm_${crypto.randomBytes(32).toString("base64url")}`;
    await this.store.replace(crypto.randomUUID(), key.slice(0, 12), hashKey(key), new Date().toISOString());
    return key;
  }

  async verify(key: string): Promise<boolean> {
    const hash = hashKey(key);
    if (this.envHash !== undefined) return sameHash(hash, this.envHash);
    return (await this.store.hashes()).some((stored) => sameHash(hash, stored));
  }
}
