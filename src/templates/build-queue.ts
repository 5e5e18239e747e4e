// The build queue: builds run a few at a time, and the next to start is picked fairly across
// tenants, not in arrival order, so one tenant's waiting builds cannot hold another's back. The
// tenant with the fewest builds running goes first; among equals, the one served longest ago (a
// tenant never served yet first). Each tenant may have at most `perTenant` builds waiting or
// running, and at most `maxWaiting` wait in all. Knows nothing of builds but their ids and owners.

export interface QueuedJob {
  id: string;
  tenantId: string;
  /** Runs the build; the queue starts the next one when it settles. */
  run(): Promise<void>;
}

export type Refusal = { reason: "tenant"; count: number } | { reason: "full"; count: number };

export class FairQueue {
  /** Waiting jobs per tenant, each in arrival order. */
  private readonly waiting = new Map<string, QueuedJob[]>();
  private readonly runningOf = new Map<string, number>();
  /** When each tenant with builds waiting or running last had one started (a tick, not a time). */
  private readonly lastServed = new Map<string, number>();
  private tick = 0;
  private waitingCount = 0;
  private runningCount = 0;

  constructor(
    private readonly o: {
      parallel: number;
      maxWaiting: number;
      perTenant: number;
      /** A job's run() threw (it records its own end: this only logs). */
      onError(err: unknown, job: QueuedJob): void;
    },
  ) {}

  /** Builds of the tenant waiting or running. */
  countOf(tenantId: string): number {
    return (this.waiting.get(tenantId)?.length ?? 0) + (this.runningOf.get(tenantId) ?? 0);
  }

  get waitingTotal(): number {
    return this.waitingCount;
  }

  get runningTotal(): number {
    return this.runningCount;
  }

  /** Why a new build of the tenant would be refused now; undefined when it would be taken. */
  refusal(tenantId: string): Refusal | undefined {
    const mine = this.countOf(tenantId);
    if (mine >= this.o.perTenant) return { reason: "tenant", count: mine };
    // A build that would start at once does not wait: only waiting ones count against the queue.
    if (this.runningCount >= this.o.parallel && this.waitingCount >= this.o.maxWaiting) return { reason: "full", count: this.waitingCount };
    return undefined;
  }

  /** Queues the job (the caller checked refusal() first) and starts what may start. */
  push(job: QueuedJob): void {
    const list = this.waiting.get(job.tenantId);
    if (list) list.push(job);
    else this.waiting.set(job.tenantId, [job]);
    this.waitingCount += 1;
    this.pump();
  }

  /** Takes a waiting job out (a cancel); false when it is not waiting (running, ended or unknown). */
  remove(id: string): boolean {
    for (const [tenantId, list] of this.waiting) {
      const i = list.findIndex((j) => j.id === id);
      if (i < 0) continue;
      list.splice(i, 1);
      this.waitingCount -= 1;
      if (list.length === 0) {
        this.waiting.delete(tenantId);
        this.forgetIdle(tenantId);
      }
      return true;
    }
    return false;
  }

  /** The tenant whose waiting build starts next (see the file comment). */
  private pick(): string | undefined {
    let best: string | undefined;
    let bestKey: [number, number] = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
    for (const tenantId of this.waiting.keys()) {
      const key: [number, number] = [this.runningOf.get(tenantId) ?? 0, this.lastServed.get(tenantId) ?? 0];
      if (key[0] < bestKey[0] || (key[0] === bestKey[0] && key[1] < bestKey[1])) {
        best = tenantId;
        bestKey = key;
      }
    }
    return best;
  }

  private pump(): void {
    while (this.runningCount < this.o.parallel) {
      const tenantId = this.pick();
      if (tenantId === undefined) return;
      const list = this.waiting.get(tenantId) as QueuedJob[];
      const job = list.shift() as QueuedJob;
      if (list.length === 0) this.waiting.delete(tenantId);
      this.waitingCount -= 1;
      this.runningCount += 1;
      this.runningOf.set(tenantId, (this.runningOf.get(tenantId) ?? 0) + 1);
      this.lastServed.set(tenantId, ++this.tick);
      void Promise.resolve()
        .then(() => job.run())
        .catch((err) => this.o.onError(err, job))
        .finally(() => {
          this.runningCount -= 1;
          const left = (this.runningOf.get(tenantId) ?? 1) - 1;
          if (left > 0) this.runningOf.set(tenantId, left);
          else this.runningOf.delete(tenantId);
          this.forgetIdle(tenantId);
          this.pump();
        });
    }
  }

  /** A tenant with nothing waiting or running is forgotten: the maps hold only tenants with builds. */
  private forgetIdle(tenantId: string): void {
    if (!this.waiting.has(tenantId) && !this.runningOf.has(tenantId)) this.lastServed.delete(tenantId);
  }
}
