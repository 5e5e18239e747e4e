// The warm pool: sandboxes started ahead of the creates that take them, grown and shrunk with
// demand, and the admission of creates that find it empty (they wait for the next start only
// when the measured start speed says it comes soon enough; otherwise 503 at once).
import crypto from "node:crypto";
import type { Logger } from "pino";
import type { SandboxConfig } from "./settings.js";
import { ApiError } from "../errors.js";
import type { Box } from "./box.js";
import type { HostDoor, PoolDoor, ServiceState } from "./doors.js";
import { PoolDemand, StartMeter } from "./pool.js";

interface Waiter {
  tenantId: string;
  resolve(box: Box): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

const atCapacity = (what: string, retryAfterS = 1) =>
  new ApiError("at_capacity", `No sandbox can be started right now (${what}); retry in a moment`, retryAfterS);
/**
 * The refusal of a create when the start queue is full: the answer to a flood of creates, made
 * once (an error's stack trace costs ~50 us to capture, and nothing reads it for a 503).
 */
const QUEUE_FULL = atCapacity("sandbox starts are queued");
/** The same for a create that had a place in the queue and gave it to another tenant's. */
const DISPLACED = atCapacity("another tenant's create took this place in the start queue");
/** Pool sandboxes pre-import the data stack only after creates have been quiet this long (see preImport()). */
const PRE_IMPORT_QUIET_MS = 1000;
/** An accepted create waits for a start at most this many AGENTBOX_CREATE_WAIT_MS (2 less a tenth for the reply). */
const ACCEPTED_WAIT_FACTOR = 1.8;

export type PoolConfig = Pick<
  SandboxConfig,
  "warmPool" | "warmPoolMax" | "maxSandboxes" | "maxParallelStarts" | "createWaitMs" | "startQueue" | "poolPreImport"
>;

export class Pool implements PoolDoor {
  private readonly warm: Box[] = [];
  /** Pool sandboxes already asked to pre-import the data stack (see preImport()). */
  private readonly preImported = new WeakSet<Box>();
  /** When the last create was asked for (served or refused), performance.now(): see preImport(). */
  private lastCreateAt = Number.NEGATIVE_INFINITY;
  /** Sandboxes starting now. */
  private warming = 0;
  /** Creates waiting for the next sandbox to finish starting (the pool was empty). */
  private readonly waiters: Waiter[] = [];
  /** Recent creates: the pool grows to what they ask for. */
  private readonly demand: PoolDemand;
  /** How fast sandboxes start here and now: how many creates may wait for one (see take()). */
  private readonly starts: StartMeter;

  constructor(
    private readonly config: PoolConfig,
    private readonly log: Logger,
    private readonly state: ServiceState,
    private readonly host: Pick<HostDoor, "allocateUid" | "freeUid" | "start" | "release" | "track">,
    /** Live sandboxes plus creates under way (the service's cap leaves room for the rest). */
    private readonly occupied: () => number,
  ) {
    this.demand = new PoolDemand(config.warmPool, config.warmPoolMax);
    this.starts = new StartMeter(Math.max(1, config.maxParallelStarts));
  }

  /**
   * Starts sandboxes until the pool (plus the creates waiting for one) is at its target, up to
   * AGENTBOX_MAX_PARALLEL_STARTS at a time. Every start happens here, off the request path.
   */
  fill(): void {
    if (this.state.closing || this.state.lowMemory) return;
    const room = this.config.maxSandboxes - this.occupied() + this.waiters.length;
    const want = Math.min(this.demand.target() + this.waiters.length, room);
    while (this.warm.length + this.warming < want && this.warming < this.config.maxParallelStarts) {
      this.warming += 1;
      const uid = this.host.allocateUid();
      const ended = this.starts.begin();
      this.host
        .start(crypto.randomUUID(), uid)
        .then(
          (box) => {
            ended(true);
            if (this.state.closing) return void this.host.track(this.host.release(box));
            const waiter = this.waiters.shift();
            if (waiter) {
              clearTimeout(waiter.timer);
              waiter.resolve(box);
            } else {
              this.warm.push(box);
              this.preImport();
            }
          },
          (err) => {
            ended(false);
            this.host.freeUid(uid);
            this.log.error({ err }, "warm pool: sandbox failed to start");
          },
        )
        .finally(() => {
          this.warming -= 1;
          setImmediate(() => this.fill());
        });
    }
  }

  /** Sandboxes the pool holds, warm or starting (the template pools leave room for them). */
  held(): number {
    return this.warm.length + this.warming;
  }

  /** A create is asked for (served or refused, it holds back pre-imports: see preImport()). */
  asked(): void {
    this.lastCreateAt = performance.now();
  }

  /** A create got its sandbox: demand, which the pool's size follows. */
  served(): void {
    this.demand.record();
  }

  /**
   * The pool sandboxes next in line (the oldest AGENTBOX_POOL_PREIMPORT: the pool hands out the
   * oldest first) pre-import the data stack while they wait, so a new sandbox's first
   * `import pandas` costs nothing. Only those few: a pre-import costs ~0.6 s of CPU and ~60 MiB
   * while held, which a pool of dozens would pay for nothing and the hot path would feel. And only
   * once creates have been quiet for PRE_IMPORT_QUIET_MS: under a stream of creates each pool
   * sandbox is taken within a second or two, so a pre-import would be paid again for every create
   * (measured: it doubled the CPU a create costs), and the import's SCHED_IDLE does not keep it
   * off a contended CPU, since the pool's cgroup competes with the tenants' by its weight.
   * Called every tick too.
   */
  preImport(): void {
    if (performance.now() - this.lastCreateAt < PRE_IMPORT_QUIET_MS) return;
    for (const box of this.warm.slice(0, this.config.poolPreImport)) {
      if (this.preImported.has(box)) continue;
      this.preImported.add(box);
      box.preImport().catch((err) => this.log.warn({ err, sandbox_id: box.spec.name }, "warm pool: pre-import not started"));
    }
  }

  /**
   * A started sandbox: from the pool now, or the next one to finish starting if it is expected
   * within AGENTBOX_CREATE_WAIT_MS (from the measured start time and the starts running now; the
   * first create waiting is let in however slow starts are, and waits one start). Otherwise 503
   * at once: a client is better served by a quick "retry in a second" than by a request that
   * hangs while starts pile up. AGENTBOX_START_QUEUE, when set, caps the queue too. A tenant alone
   * may take the whole queue; when several want it, one below its equal part of the queue takes
   * the place of the newest create of the tenant holding the most.
   */
  take(tenantId: string): Promise<Box> {
    const box = this.warm.shift();
    if (box) {
      this.preImport();
      return Promise.resolve(box);
    }
    const waitMs = this.starts.expectedWaitMs(this.waiters.length + 1);
    // Let in only what the starts running now are expected to serve within the bound. Except when
    // nothing is starting at all: then the first create is let in whatever one start takes here
    // (a slow or crowded host), since it is what sets a start going; it too is answered 503 at the
    // bound below if its start is slower, and the start goes on for the next create.
    const lone = this.waiters.length === 0 && this.warming === 0;
    const fits = waitMs <= this.config.createWaitMs || lone;
    const capped = this.config.startQueue > 0 && this.waiters.length >= this.config.startQueue;
    if ((!fits || capped) && !this.displaceFor(tenantId)) {
      const retryS = Math.ceil(this.starts.msPerStart() / 1000);
      return Promise.reject(retryS <= 1 ? QUEUE_FULL : atCapacity("sandbox starts are queued", retryS));
    }
    return new Promise<Box>((resolve, reject) => {
      const waiter: Waiter = {
        tenantId,
        resolve,
        reject,
        // What is accepted is served within a bounded time: a create not served within twice the
        // bound (starts slower than measured) is answered 503, and the sandbox it waited for goes
        // to the pool, where the client's retry finds it. The wait ends a tenth early, so that
        // the work after it (record, events, the reply) still fits within twice the bound.
        timer: setTimeout(() => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(atCapacity("sandboxes are starting as fast as this machine allows"));
        }, ACCEPTED_WAIT_FACTOR * this.config.createWaitMs),
      };
      this.waiters.push(waiter);
      this.fill();
    });
  }

  /**
   * The queue is full: if `tenantId` holds less than its equal part of it, the newest create of
   * the tenant holding the most is refused (503, as if it had come too late) and true is returned.
   */
  private displaceFor(tenantId: string): boolean {
    const held = new Map<string, number>([[tenantId, 0]]);
    for (const w of this.waiters) held.set(w.tenantId, (held.get(w.tenantId) ?? 0) + 1);
    const part = Math.max(1, Math.floor(this.waiters.length / held.size));
    if ((held.get(tenantId) ?? 0) >= part) return false;
    let top = tenantId;
    for (const [t, n] of held) if (n > (held.get(top) ?? 0)) top = t;
    if ((held.get(top) ?? 0) <= part) return false;
    let i = this.waiters.length - 1;
    while (i >= 0 && this.waiters[i]?.tenantId !== top) i--;
    const [out] = this.waiters.splice(i, 1);
    if (!out) return false;
    clearTimeout(out.timer);
    out.reject(DISPLACED);
    return true;
  }

  /** A pool larger than recent demand gives one sandbox back (called every tick). */
  trim(): void {
    if (this.warm.length > this.demand.target() && this.warming === 0) {
      const extra = this.warm.pop();
      if (extra) this.host.track(this.host.release(extra));
    }
  }

  /**
   * Waits (bounded: a slow host starts serving within `boundMs`) until `count` sandboxes are in
   * the pool or no start is running.
   */
  async warmUp(count: number, boundMs: number): Promise<void> {
    for (const deadline = Date.now() + boundMs; this.warm.length < count && this.warming > 0 && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Refuses the creates waiting, waits for the starts running, and removes the pool's sandboxes. */
  async close(): Promise<void> {
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(new ApiError("at_capacity", "The service is shutting down", 5));
    }
    while (this.warming > 0) await new Promise((r) => setTimeout(r, 10));
    await Promise.all(this.warm.splice(0).map((box) => this.host.release(box)));
  }
}
