// A fair scheduler for work on one shared engine (the built-in embedding model): each tenant has its
// own queue of small jobs, batches are taken round-robin across the tenants, a tenant may have only
// so much work waiting or running, and a request's queued jobs are dropped when its client goes
// away or its deadline passes. Knows nothing of models or HTTP.
import { ApiError } from "../errors.js";

/** One piece of a request's work, run in one batch. */
export interface Part<In> {
  input: In;
  /** Counted against the tenant's bound (e.g. inputs). */
  units: number;
  /**
   * Share of one batch it takes, 0..1: a batch takes jobs while their weights add up to at most 1,
   * and a job of more than half a batch only opens one (the small jobs ahead of it would wait for it).
   */
  weight: number;
}

export interface SchedulerOptions {
  /** Units one tenant may have waiting or running at once; a submit past it is refused at once. */
  tenantUnits: number;
  /** Batches running at once. */
  concurrency: number;
  /** Retry-After of the refusals, seconds. */
  retryAfterS: number;
}

/** How jobs ended, for the metrics. */
export type JobOutcome = "done" | "failed" | "cancelled" | "expired";

export interface SchedulerEvents {
  /** Jobs that ended, by how (a cancelled or expired job that was already running counts when it ends). */
  jobs?(outcome: JobOutcome, count: number): void;
  /** A submit refused at once for the tenant's bound. */
  refused?(): void;
}

interface Ticket<Out> {
  tenant: string;
  results: Out[];
  /** Jobs not yet answered. */
  left: number;
  /** Why it ended early; undefined while it is live. */
  ended?: "cancelled" | "expired" | "failed";
  resolve(v: Out[]): void;
  reject(e: Error): void;
  cleanup(): void;
}

interface Job<In, Out> {
  ticket: Ticket<Out>;
  index: number;
  part: Part<In>;
}

interface TenantState<In, Out> {
  queue: Job<In, Out>[];
  /** Units waiting or running. */
  units: number;
}

export class FairScheduler<In, Out> {
  private readonly tenants = new Map<string, TenantState<In, Out>>();
  /** Tenants with queued jobs, in round-robin order; `next` is the one served first. */
  private ring: string[] = [];
  private next = 0;
  private running = 0;

  constructor(
    private readonly run: (inputs: In[]) => Promise<Out[]>,
    private readonly opts: SchedulerOptions,
    private readonly events: SchedulerEvents = {},
  ) {}

  /**
   * Queues a request's parts under its tenant; resolves with one result per part, in order.
   * Refused at once (429 rate_limited) when the tenant's units would pass its bound. The request
   * fails with `deadlineError()` when its last job has not finished by `deadlineMs` from now, and
   * with the signal's reason when the signal aborts; either way its queued jobs are dropped.
   */
  submit(
    tenant: string,
    parts: Part<In>[],
    opts: { deadlineMs: number; signal?: AbortSignal; deadlineError: () => Error },
  ): Promise<Out[]> {
    if (parts.length === 0) return Promise.resolve([]);
    if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
    const units = parts.reduce((n, p) => n + p.units, 0);
    const state = this.tenants.get(tenant) ?? { queue: [], units: 0 };
    if (state.units + units > this.opts.tenantUnits) {
      this.events.refused?.();
      const queued = state.units > 0 ? `; ${state.units} are waiting or being worked on` : "";
      throw new ApiError(
        "rate_limited",
        `This tenant may have ${this.opts.tenantUnits} embedding inputs waiting or being embedded at once; this request has ${units}${queued}. Retry when earlier requests have finished, or send fewer inputs`,
        this.opts.retryAfterS,
      );
    }
    return new Promise<Out[]>((resolve, reject) => {
      const ticket: Ticket<Out> = {
        tenant,
        results: new Array(parts.length),
        left: parts.length,
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(timer);
          opts.signal?.removeEventListener("abort", onAbort);
        },
      };
      const onAbort = () => this.end(ticket, "cancelled", opts.signal?.reason ?? new Error("cancelled"));
      const timer = setTimeout(() => this.end(ticket, "expired", opts.deadlineError()), opts.deadlineMs);
      timer.unref();
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      if (!this.tenants.has(tenant)) this.tenants.set(tenant, state);
      state.units += units;
      for (let i = 0; i < parts.length; i++) state.queue.push({ ticket, index: i, part: parts[i] as Part<In> });
      // A tenant with nothing queued joins the round just before the next one to be served: a small
      // request waits for the batch running now, not for a round of every busy tenant's jobs.
      if (!this.ring.includes(tenant)) {
        const at = this.ring.length === 0 ? 0 : this.next % this.ring.length;
        this.ring.splice(at, 0, tenant);
        this.next = at;
      }
      this.pump();
    });
  }

  /** Jobs waiting (not yet in a batch), over all tenants. */
  queued(): number {
    let n = 0;
    for (const s of this.tenants.values()) n += s.queue.length;
    return n;
  }

  /** Units a tenant has waiting or running. */
  tenantUnits(tenant: string): number {
    return this.tenants.get(tenant)?.units ?? 0;
  }

  /** Takes the next batch: one job per tenant in turn, from where the last batch stopped. */
  private take(): Job<In, Out>[] {
    const batch: Job<In, Out>[] = [];
    let weight = 0;
    while (this.ring.length > 0) {
      const at = this.next % this.ring.length;
      const tenant = this.ring[at] as string;
      const state = this.tenants.get(tenant) as TenantState<In, Out>;
      const job = state.queue[0] as Job<In, Out>;
      // A job that does not fit closes the batch, and its tenant is served first in the next one.
      if (batch.length > 0 && (weight + job.part.weight > 1 || job.part.weight > 0.5)) {
        this.next = at;
        break;
      }
      state.queue.shift();
      batch.push(job);
      weight += job.part.weight;
      if (state.queue.length === 0) this.ring.splice(at, 1);
      this.next = state.queue.length === 0 ? at : at + 1;
    }
    return batch;
  }

  private pump(): void {
    while (this.running < this.opts.concurrency && this.ring.length > 0) {
      const batch = this.take();
      this.running++;
      const inputs = batch.map((j) => j.part.input);
      Promise.resolve()
        .then(() => this.run(inputs))
        .then(
          (out) => this.finish(batch, out, undefined),
          (err: unknown) => this.finish(batch, undefined, err instanceof Error ? err : new Error(String(err))),
        );
    }
  }

  private finish(batch: Job<In, Out>[], out: Out[] | undefined, err: Error | undefined): void {
    this.running--;
    const counts: Partial<Record<JobOutcome, number>> = {};
    for (const [i, job] of batch.entries()) {
      const t = job.ticket;
      const state = this.tenants.get(t.tenant);
      if (state) this.release(t.tenant, state, job.part.units);
      const outcome: JobOutcome = t.ended ?? (err ? "failed" : "done");
      counts[outcome] = (counts[outcome] ?? 0) + 1;
      if (t.ended) continue;
      if (err) {
        this.end(t, "failed", err);
        continue;
      }
      t.results[job.index] = (out as Out[])[i] as Out;
      if (--t.left === 0) {
        t.cleanup();
        t.resolve(t.results);
      }
    }
    for (const [outcome, n] of Object.entries(counts)) this.events.jobs?.(outcome as JobOutcome, n);
    this.pump();
  }

  /** Ends a request early: its queued jobs are dropped (its running ones finish unanswered). */
  private end(ticket: Ticket<Out>, why: "cancelled" | "expired" | "failed", err: Error): void {
    if (ticket.ended) return;
    ticket.ended = why;
    ticket.cleanup();
    const state = this.tenants.get(ticket.tenant);
    if (state) {
      const keep = state.queue.filter((j) => j.ticket !== ticket);
      const dropped = state.queue.length - keep.length;
      const units = state.queue.reduce((n, j) => n + (j.ticket === ticket ? j.part.units : 0), 0);
      state.queue = keep;
      if (keep.length === 0) {
        const at = this.ring.indexOf(ticket.tenant);
        if (at >= 0) {
          this.ring.splice(at, 1);
          if (at < this.next) this.next--;
        }
      }
      this.release(ticket.tenant, state, units);
      if (dropped > 0) this.events.jobs?.(why, dropped);
    }
    ticket.reject(err);
  }

  private release(tenant: string, state: TenantState<In, Out>, units: number): void {
    state.units -= units;
    if (state.units <= 0 && state.queue.length === 0) this.tenants.delete(tenant);
  }
}
