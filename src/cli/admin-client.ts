// The admin API as the CLI calls it: one method per route, errors as thrown messages.
import type { KeyRow } from "../tenancy/store/keys.js";

/** A key as the admin API shows it: its stored fields (last_used_at only in listings). */
export type KeyJson = Omit<KeyRow, "last_used_at"> & { last_used_at?: string | null };

type Quotas<T> = {
  max_sandboxes: T;
  max_concurrent_runs: T;
  memory_mb: T;
  max_processes: T;
  storage_mb: T;
  max_vector_indexes: T;
  max_vectors: T;
  vector_storage_mb: T;
};

export interface TenantJson {
  tenant_id: string;
  quotas: Quotas<number | null>;
  effective: Quotas<number>;
  active_keys: number;
  suspended_at: string | null;
  created_at: string | null;
  updated_at: string | null;
}

export class AdminClient {
  private readonly base: string;

  constructor(
    url: string,
    private readonly adminKey: string,
  ) {
    this.base = `${url.replace(/\/+$/, "")}/v1/admin`;
  }

  /** The answer's JSON; `missing` (e.g. 404) gives undefined instead of throwing. */
  private async call<T>(method: string, path: string, body?: unknown, missing?: number): Promise<T | undefined> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.adminKey}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message;
      throw new Error(`cannot reach the service at ${this.base}: ${cause ?? (err as Error).message}`);
    }
    const text = await res.text();
    if (res.status === missing) return undefined;
    if (!res.ok) {
      let detail = text.slice(0, 500);
      try {
        const e = (JSON.parse(text) as { error: { code: string; message: string } }).error;
        detail = `${e.code}: ${e.message}`;
      } catch {
        // not the envelope: show the text
      }
      throw new Error(`${method} /v1/admin${path} failed (${res.status}): ${detail}`);
    }
    return JSON.parse(text) as T;
  }

  async createKey(body: Record<string, unknown>): Promise<KeyJson & { key: string }> {
    return (await this.call<KeyJson & { key: string }>("POST", "/keys", body)) as KeyJson & { key: string };
  }

  async listKeys(tenantId?: string): Promise<KeyJson[]> {
    const query = tenantId === undefined ? "" : `?tenant_id=${encodeURIComponent(tenantId)}`;
    return ((await this.call<{ keys: KeyJson[] }>("GET", `/keys${query}`)) as { keys: KeyJson[] }).keys;
  }

  /** False if no active key has this id. */
  async revokeKey(id: string): Promise<boolean> {
    return (await this.call("DELETE", `/keys/${encodeURIComponent(id)}`, undefined, 404)) !== undefined;
  }

  async listTenants(): Promise<TenantJson[]> {
    return ((await this.call<{ tenants: TenantJson[] }>("GET", "/tenants")) as { tenants: TenantJson[] }).tenants;
  }

  async getTenant(id: string): Promise<TenantJson> {
    return (await this.call<TenantJson>("GET", `/tenants/${encodeURIComponent(id)}`)) as TenantJson;
  }

  async setTenant(id: string, quotas: Record<string, number | null>): Promise<TenantJson> {
    return (await this.call<TenantJson>("PUT", `/tenants/${encodeURIComponent(id)}`, quotas)) as TenantJson;
  }

  /** Suspends (its keys refused, its open requests ended, its sandboxes paused) or resumes a tenant. */
  async suspendTenant(id: string, suspend: boolean): Promise<TenantJson> {
    return (await this.call<TenantJson>("POST", `/tenants/${encodeURIComponent(id)}/${suspend ? "suspend" : "resume"}`)) as TenantJson;
  }
}
