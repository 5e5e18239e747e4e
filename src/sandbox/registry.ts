// The live sandboxes of this service (and the hibernated ones waiting for a resume): lookup by id
// and tenant, counts per tenant, the creates counted before their record exists, each one's
// deadline, who is told when one leaves, and the caps a new one must fit under.
import { ApiError, sandboxNotFound, sandboxPaused } from "../errors.js";
import type { ListFilter, SandboxRecord, SandboxStore } from "./store/sandboxes.js";
import type { EffectiveQuotas } from "../tenancy/store/tenants.js";
import type { Box } from "./box.js";
import { DeadlineQueue } from "./deadlines.js";
import type { Hibernated, Live, OnTimeout, RegistryDoor, ServiceState } from "./doors.js";

/** 429: `count` more sandboxes would take the tenant past its max_sandboxes (`max`). */
export function tenantQuotaExceeded(max: number, count: number): ApiError {
  return new ApiError(
    "quota_exceeded",
    count === 1
      ? `Your tenant already has ${max} live sandboxes, its quota`
      : `${count} more sandboxes would take your tenant over its quota of ${max} live sandboxes`,
    10,
  );
}

export class Registry implements RegistryDoor {
  private readonly live = new Map<string, Live>();
  /** Live sandboxes per tenant (the tenant quota counts them without a query). */
  private readonly liveByTenant = new Map<string, number>();
  private readonly sleeping = new Map<string, Hibernated>();
  /** Sandboxes being created right now: counted against capacity before their record exists. */
  private pending = 0;
  /** The same per tenant, so that concurrent creates cannot overshoot a tenant's quota. */
  private readonly pendingByTenant = new Map<string, number>();
  private readonly endedListeners = new Set<(id: string) => void>();
  /**
   * One timer for the earliest deadline: a sandbox's life ends at its deadline, not at the next
   * sweep. A deadline moved later without telling the queue is re-armed when it comes due.
   */
  private readonly deadlines: DeadlineQueue;

  constructor(
    private readonly store: SandboxStore,
    private readonly maxSandboxes: number,
    private readonly state: ServiceState,
    /** The tenant's quotas now. */
    private readonly quotaOf: (tenantId: string) => EffectiveQuotas,
    /** A deadline came due: the expired sandboxes are to be dealt with. */
    onDue: () => void,
    /** This node's name (AGENTBOX_NODE_ID): a live sandbox whose record names another node runs there. */
    private readonly nodeId?: string,
  ) {
    this.deadlines = new DeadlineQueue((id) => {
      const at = Date.parse(this.live.get(id)?.record.timeoutAt ?? "");
      if (at > Date.now()) this.deadlines.set(id, at);
      else onDue();
    });
  }

  get(id: string): Live | undefined {
    return this.live.get(id);
  }

  all(): IterableIterator<Live> {
    return this.live.values();
  }

  get size(): number {
    return this.live.size;
  }

  /** Live sandboxes per tenant (tenants with none are absent). */
  byTenant(): ReadonlyMap<string, number> {
    return this.liveByTenant;
  }

  /** Live sandboxes and the creates under way: the room the service's cap leaves is counted from it. */
  occupied(): number {
    return this.live.size + this.pending;
  }

  /** The caller's sandbox if it is live or hibernated (running or paused), from memory alone. */
  current(tenantId: string, id: string): SandboxRecord | undefined {
    const record = this.live.get(id)?.record ?? this.sleeping.get(id)?.record;
    return record && record.tenantId === tenantId ? record : undefined;
  }

  async record(tenantId: string, id: string): Promise<SandboxRecord> {
    const record = this.live.get(id)?.record ?? this.sleeping.get(id)?.record ?? (await this.store.get(id));
    if (!record || record.tenantId !== tenantId) throw sandboxNotFound(id);
    return record;
  }

  liveBox(tenantId: string, id: string): Box | undefined {
    const live = this.live.get(id);
    if (!live) {
      const sleeping = this.sleeping.get(id);
      if (!sleeping) return undefined;
      if (sleeping.record.tenantId !== tenantId) throw sandboxNotFound(id);
      throw sandboxPaused(id);
    }
    if (live.record.tenantId !== tenantId) throw sandboxNotFound(id);
    if (live.record.status === "paused") throw sandboxPaused(id);
    return live.box;
  }

  async notLive(tenantId: string, id: string): Promise<never> {
    const record = await this.record(tenantId, id);
    if (record.status === "paused") throw sandboxPaused(id);
    // In a cluster: another node runs it, and this one could not route the request there (its route
    // is not in Redis now, e.g. just after a Redis restart): not an ended sandbox, a retry.
    if (record.status === "running" && this.nodeId !== undefined && record.nodeId !== this.nodeId)
      throw new ApiError(
        "node_unavailable",
        `Sandbox '${id}' runs on node '${record.nodeId}', which cannot be reached now; retry shortly`,
        1,
      );
    throw new ApiError("invalid_state", `Sandbox '${id}' is ${record.status}; create a new one`);
  }

  async list(tenantId: string, limit: number, offset: number, filter: ListFilter = {}) {
    const current = (r: SandboxRecord) => this.live.get(r.id)?.record ?? this.sleeping.get(r.id)?.record ?? r;
    if (filter.status === "running" || filter.status === "paused") {
      // The store's status filter says running for both (its records mark the paused ones, which
      // this node's memory overrides for its own): the live ones are few (capped by
      // AGENTBOX_MAX_SANDBOXES), so they are filtered and paged here.
      const live = await this.store.listByTenant(tenantId, this.maxSandboxes + 1000, 0, { ...filter, status: "running" });
      const matching = live.sandboxes.map(current).filter((r) => r.status === filter.status);
      return { sandboxes: matching.slice(offset, offset + limit), total: matching.length };
    }
    const page = await this.store.listByTenant(tenantId, limit, offset, filter);
    return { sandboxes: page.sandboxes.map(current), total: page.total };
  }

  join(record: SandboxRecord, box: Box, lifeS: number, onTimeout: OnTimeout): void {
    this.live.set(record.id, { record, box, lifeS, onTimeout });
    this.deadlines.set(record.id, Date.parse(record.timeoutAt));
    this.liveByTenant.set(record.tenantId, (this.liveByTenant.get(record.tenantId) ?? 0) + 1);
  }

  setDeadline(id: string, at: number): void {
    this.deadlines.set(id, at);
  }

  leave(id: string): Live | undefined {
    const live = this.live.get(id);
    if (!live) return undefined;
    this.live.delete(id);
    this.deadlines.delete(id);
    const tenantLeft = (this.liveByTenant.get(live.record.tenantId) ?? 1) - 1;
    if (tenantLeft > 0) this.liveByTenant.set(live.record.tenantId, tenantLeft);
    else this.liveByTenant.delete(live.record.tenantId);
    for (const listener of this.endedListeners) listener(id);
    return live;
  }

  /** Calls `listener` with the id of every sandbox that leaves (ended, or hibernated). */
  onLeave(listener: (id: string) => void): void {
    this.endedListeners.add(listener);
  }

  checkRoom(tenantId: string, count: number): EffectiveQuotas {
    if (this.state.closing) throw new ApiError("at_capacity", "The service is shutting down", 5);
    if (this.live.size + this.pending + count > this.maxSandboxes) {
      throw new ApiError("at_capacity", `The service is at its limit of ${this.maxSandboxes} live sandboxes`, 5);
    }
    if (this.state.lowMemory) throw new ApiError("at_capacity", "The host is low on memory; no sandbox can be started now", 5);
    const quota = this.quotaOf(tenantId);
    const tenantPending = this.pendingByTenant.get(tenantId) ?? 0;
    if ((this.liveByTenant.get(tenantId) ?? 0) + tenantPending + count > quota.maxSandboxes)
      throw tenantQuotaExceeded(quota.maxSandboxes, count);
    return quota;
  }

  /** A create of the tenant's is under way: it counts against the caps until unreserve(). */
  reserve(tenantId: string): void {
    this.pending += 1;
    this.pendingByTenant.set(tenantId, (this.pendingByTenant.get(tenantId) ?? 0) + 1);
  }

  unreserve(tenantId: string): void {
    this.pending -= 1;
    const left = (this.pendingByTenant.get(tenantId) ?? 1) - 1;
    if (left > 0) this.pendingByTenant.set(tenantId, left);
    else this.pendingByTenant.delete(tenantId);
  }

  hibernated(id: string): Hibernated | undefined {
    return this.sleeping.get(id);
  }

  /** The hibernated sandboxes waiting here for their resume. */
  allHibernated(): IterableIterator<Hibernated> {
    return this.sleeping.values();
  }

  addHibernated(h: Hibernated): void {
    this.sleeping.set(h.record.id, h);
  }

  removeHibernated(id: string): void {
    this.sleeping.delete(id);
  }

  /** Stops the deadline timer (the service is stopping). */
  close(): void {
    this.deadlines.close();
  }
}
