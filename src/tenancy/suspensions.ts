// Suspended tenants at the door: a key of a suspended tenant is refused (403 tenant_suspended) and
// counts as inactive, so what it holds open ends (open-requests.ts) and the share links it made stop
// working. Applied to the key store the HTTP layer authenticates with; the store itself is unchanged.
import { ApiError } from "../errors.js";
import type { ApiKeys } from "./key-directory.js";
import type { TenantDirectory } from "./tenant-directory.js";

export const TENANT_SUSPENDED = "Your tenant is suspended by the operator";

export function withSuspensions(keys: ApiKeys, tenants: TenantDirectory): ApiKeys {
  // Only the bootstrap key is not stored (and isActive() is false for unknown ids anyway).
  const tenantOf = async (id: string) => (await keys.get(id))?.tenantId ?? keys.bootstrapTenant;
  return {
    create: (input) => keys.create(input),
    async verify(token) {
      const key = await keys.verify(token);
      if (key && tenants.isSuspended(key.tenantId)) throw new ApiError("tenant_suspended", TENANT_SUSPENDED);
      return key;
    },
    list: () => keys.list(),
    get: (id) => keys.get(id),
    revoke: (idOrPrefix) => keys.revoke(idOrPrefix),
    get bootstrapTenant() {
      return keys.bootstrapTenant;
    },
    async isActive(id) {
      if (!(await keys.isActive(id))) return false;
      const tenant = await tenantOf(id);
      return tenant === undefined || !tenants.isSuspended(tenant);
    },
    flush: () => keys.flush(),
  };
}

/** What suspending a tenant acts on. */
export interface SuspendDeps {
  tenants: TenantDirectory;
  openRequests: { endTenant(tenantId: string, why: ApiError): number };
  sandboxes: {
    list(tenantId: string, limit: number, offset: number, filter: { status: "running" }): Promise<{ sandboxes: { id: string }[] }>;
    lifecycle: { pause(tenantId: string, id: string): Promise<unknown> };
  };
}

/**
 * Suspends a tenant: its keys are refused from the next request on, what they hold open (streams,
 * transfers, port tunnels) ends now, and its running sandboxes are paused (frozen: no CPU, memory
 * kept), so a resume of the tenant can let it resume them where they stopped. Returns what it did.
 */
export async function suspendTenant(
  deps: SuspendDeps,
  tenantId: string,
): Promise<{ openRequestsEnded: number; paused: number; failed: number }> {
  await deps.tenants.setSuspended(tenantId, true);
  const why = new ApiError("tenant_suspended", `${TENANT_SUSPENDED}; this stream has ended`);
  const openRequestsEnded = deps.openRequests.endTenant(tenantId, why);
  const running = (await deps.sandboxes.list(tenantId, Number.MAX_SAFE_INTEGER, 0, { status: "running" })).sandboxes;
  const results = await Promise.allSettled(running.map((s) => deps.sandboxes.lifecycle.pause(tenantId, s.id)));
  const failed = results.filter((r) => r.status === "rejected").length;
  return { openRequestsEnded, paused: results.length - failed, failed };
}
