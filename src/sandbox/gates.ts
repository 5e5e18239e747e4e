// Execution gates: how many runs and commands execute at once — on the whole machine, per API key,
// per tenant — and the fair share that keeps one tenant from taking the slots every other tenant
// needs. A run takes a slot before it starts and gives it back when it ends; a refusal is
// immediate (429 for the caller's own limits and share, 503 when the machine is full), never a wait.
import { ApiError } from "../errors.js";

/** Why a slot was refused (the label of the rejection counter). */
export type RejectReason = "concurrent_runs" | "tenant_concurrent_runs" | "fair_share" | "at_capacity";

/** Who asks for a slot and the limits that apply to them (0: no limit of that kind). */
export interface SlotRequest {
  keyId: string;
  tenantId: string;
  keyMax: number;
  tenantMax: number;
}

export interface GateOptions {
  /** Executions at once on this service. */
  global: number;
  /** Fewest slots the fair share ever shrinks a tenant to (default: see defaultShareFloor). */
  shareFloor?: number;
  onReject?: (reason: RejectReason) => void;
}

/** Seconds a refused caller is told to wait: slots free up as soon as any run ends. */
const RETRY_AFTER_S = 1;

/** The fair share's floor: 1/16 of the machine, at least 2 slots. */
export function defaultShareFloor(global: number): number {
  return Math.max(2, Math.floor(global / 16));
}

/**
 * The most slots one tenant may hold once the gate is at least half full, with `activeTenants`
 * tenants (the asking one included) running: an equal split among them of all but a reserve (a
 * quarter of the gate, at least the floor) kept for tenants that have nothing running yet. Runs
 * cannot be taken back, so a newcomer's room must be kept, not made. A lone tenant may so hold
 * three quarters of the slots (far more than it needs to keep every core busy: the CPU itself is
 * shared by cgroup weights, which give an idle tenant's part to the busy ones), and its share
 * shrinks only as other tenants run. Below half full a tenant is limited only by its own quota.
 */
export function fairShare(global: number, activeTenants: number, floor: number): number {
  const reserve = Math.max(floor, Math.floor(global / 4));
  return Math.max(floor, Math.floor((global - reserve) / Math.max(1, activeTenants)));
}

function bump(map: Map<string, number>, id: string, by: number): void {
  const n = (map.get(id) ?? 0) + by;
  if (n <= 0) map.delete(id);
  else map.set(id, n);
}

/** Executions in flight, by tenant and by API key (what a node tells the others in a cluster). */
export interface InFlightCounts {
  tenants: Record<string, number>;
  keys: Record<string, number>;
}

export class ExecutionGates {
  private running = 0;
  private readonly byKey = new Map<string, number>();
  private readonly byTenant = new Map<string, number>();
  /**
   * In a cluster, the runs the other nodes hold for each key and tenant (src/cluster/run-counts.ts),
   * counted against the same per-key and per-tenant limits, so that they hold over the cluster.
   * Empty on one node: two lookups in empty maps are all it costs a run.
   */
  private elsewhereByKey = new Map<string, number>();
  private elsewhereByTenant = new Map<string, number>();
  readonly global: number;
  readonly shareFloor: number;

  constructor(private readonly opts: GateOptions) {
    this.global = opts.global;
    this.shareFloor = opts.shareFloor ?? defaultShareFloor(opts.global);
  }

  /** Takes a slot or throws (429 rate_limited, 503 at_capacity); the returned function gives it back, once. */
  acquire(req: SlotRequest): () => void {
    const keyNow = this.byKey.get(req.keyId) ?? 0;
    if (req.keyMax > 0 && keyNow + (this.elsewhereByKey.get(req.keyId) ?? 0) >= req.keyMax) {
      throw this.reject(
        "concurrent_runs",
        new ApiError(
          "rate_limited",
          `This API key already has ${req.keyMax} executions running, its limit; retry when one finishes`,
          RETRY_AFTER_S,
        ),
      );
    }
    const tenantNow = this.byTenant.get(req.tenantId) ?? 0;
    if (req.tenantMax > 0 && tenantNow + (this.elsewhereByTenant.get(req.tenantId) ?? 0) >= req.tenantMax) {
      throw this.reject(
        "tenant_concurrent_runs",
        new ApiError(
          "rate_limited",
          `Your tenant already has ${req.tenantMax} executions running, its quota; retry when one finishes`,
          RETRY_AFTER_S,
        ),
      );
    }
    if (this.global > 0 && this.running * 2 >= this.global) {
      const share = this.shareOf(req.tenantId);
      if (tenantNow >= share) {
        throw this.reject(
          "fair_share",
          new ApiError(
            "rate_limited",
            `The service is busy and your tenant already has ${tenantNow} executions running, its fair share now; retry when one finishes`,
            RETRY_AFTER_S,
          ),
        );
      }
    }
    if (this.global > 0 && this.running >= this.global) {
      throw this.reject(
        "at_capacity",
        new ApiError("at_capacity", `The service is running its limit of ${this.global} executions; retry shortly`, RETRY_AFTER_S),
      );
    }
    this.running += 1;
    bump(this.byKey, req.keyId, 1);
    bump(this.byTenant, req.tenantId, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
      bump(this.byKey, req.keyId, -1);
      bump(this.byTenant, req.tenantId, -1);
    };
  }

  /** Runs `task` holding a slot. */
  async run<T>(req: SlotRequest, task: () => Promise<T>): Promise<T> {
    const release = this.acquire(req);
    try {
      return await task();
    } finally {
      release();
    }
  }

  /** The fair share of `tenantId` right now (what it may hold once the gate is half full). */
  shareOf(tenantId: string): number {
    const active = this.byTenant.size + (this.byTenant.has(tenantId) ? 0 : 1);
    return fairShare(this.global, active, this.shareFloor);
  }

  inFlight(): number {
    return this.running;
  }

  /** This node's runs in flight by tenant and key (keys and tenants with none are left out). */
  inFlightCounts(): InFlightCounts {
    return { tenants: Object.fromEntries(this.byTenant), keys: Object.fromEntries(this.byKey) };
  }

  /** The runs other nodes hold (replaces what was known before; the fair share stays this node's own). */
  countElsewhere(counts: InFlightCounts): void {
    this.elsewhereByTenant = new Map(Object.entries(counts.tenants));
    this.elsewhereByKey = new Map(Object.entries(counts.keys));
  }

  keyInFlight(keyId: string): number {
    return this.byKey.get(keyId) ?? 0;
  }

  tenantInFlight(tenantId: string): number {
    return this.byTenant.get(tenantId) ?? 0;
  }

  private reject(reason: RejectReason, err: ApiError): ApiError {
    this.opts.onReject?.(reason);
    return err;
  }
}
