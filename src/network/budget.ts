// Caps on the connections the service holds for sandboxes' network plumbing (egress proxy
// connections, and port-relay connections until they say what they are): per sandbox, per tenant
// and for the whole node, so that one sandbox, or one tenant's many, cannot take the descriptors
// everyone else needs. Each admitted connection holds a slot until it closes.
export interface BudgetLimits {
  perSandbox: number;
  perTenant: number;
  total: number;
}

export type BudgetScope = "sandbox" | "tenant" | "node";

/** An admitted connection's slot: `release` may be called any number of times (the first counts). */
export interface Slot {
  release(): void;
}

export class ConnectionBudget {
  private readonly bySandbox = new Map<string, number>();
  private readonly byTenant = new Map<string, number>();
  private open = 0;

  constructor(readonly limits: BudgetLimits) {}

  /** A slot for one more connection of the sandbox, or the cap that refuses it. */
  take(tenantId: string, sandboxId: string): Slot | { refused: BudgetScope; limit: number } {
    const s = this.bySandbox.get(sandboxId) ?? 0;
    const t = this.byTenant.get(tenantId) ?? 0;
    if (s >= this.limits.perSandbox) return { refused: "sandbox", limit: this.limits.perSandbox };
    if (t >= this.limits.perTenant) return { refused: "tenant", limit: this.limits.perTenant };
    if (this.open >= this.limits.total) return { refused: "node", limit: this.limits.total };
    this.bySandbox.set(sandboxId, s + 1);
    this.byTenant.set(tenantId, t + 1);
    this.open += 1;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.open -= 1;
        decrement(this.bySandbox, sandboxId);
        decrement(this.byTenant, tenantId);
      },
    };
  }

  /** Connections open now: the sandbox's, the tenant's, the node's. */
  count(tenantId: string, sandboxId: string): { sandbox: number; tenant: number; node: number } {
    return { sandbox: this.bySandbox.get(sandboxId) ?? 0, tenant: this.byTenant.get(tenantId) ?? 0, node: this.open };
  }
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 1) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

/**
 * Default caps under the process's open-file limit: sandbox plumbing may take about a quarter of it
 * (an egress connection is two descriptors: the sandbox's and the upstream one), a tenant a quarter
 * of that, a sandbox 128 at most.
 */
export function defaultBudget(fdLimit: number): BudgetLimits {
  const total = Math.max(64, Math.floor(fdLimit / 8));
  const perTenant = Math.max(16, Math.floor(total / 4));
  return { total, perTenant, perSandbox: Math.min(128, perTenant) };
}
