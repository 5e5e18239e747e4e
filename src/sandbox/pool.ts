// Warm-pool sizing and the measured speed of sandbox starts (what admission to the start queue
// reads): pure logic, kept apart from the pool itself (./warm-pool.ts) so it can be tested without sandboxes.

/** The pool keeps this many seconds of recent demand started ahead. */
const DEMAND_S = 1;
/** Creates of the last this many milliseconds are the measure of demand. */
const WINDOW_MS = 5000;

/**
 * How many started sandboxes the pool should hold: the creates served in the last second (averaged
 * over five), at least `min` (what a quiet service keeps) and at most `max`.
 */
export class PoolDemand {
  private readonly creates: number[] = [];

  constructor(
    private readonly min: number,
    private readonly max: number,
  ) {}

  /**
   * Records a create that got a sandbox. Refused ones are not counted: under a flood of retries
   * they would grow the pool far past what starts can deliver, and every pool sandbox left idle
   * costs memory and the supervisor's idle-time work.
   */
  record(now = Date.now()): void {
    this.creates.push(now);
  }

  target(now = Date.now()): number {
    while ((this.creates[0] ?? now) < now - WINDOW_MS) this.creates.shift();
    const demand = Math.ceil((this.creates.length / (WINDOW_MS / 1000)) * DEMAND_S);
    return Math.min(Math.max(this.min, demand), Math.max(this.min, this.max));
  }
}

/** How much one start counts in the running average of start times (the rest is the history). */
const START_WEIGHT = 0.2;

/**
 * The measured speed of sandbox starts: a running average of how long one takes (start to the
 * supervisor's `ready`), and the starts running now. On a crowded host starts take longer, and
 * the average follows within a few starts.
 */
export class StartMeter {
  private avgMs: number;
  /** When each start running now began (performance.now()). */
  private readonly running = new Set<number>();

  constructor(
    private readonly parallel: number,
    /** What a start is assumed to take before one has been measured. */
    initialMs = 1000,
  ) {
    this.avgMs = initialMs;
  }

  /** A start begins; the returned function ends it (`ok`: it succeeded, and its time is recorded). */
  begin(now = performance.now()): (ok: boolean, end?: number) => void {
    let at = now;
    while (this.running.has(at)) at += 1e-6;
    this.running.add(at);
    return (ok, end = performance.now()) => {
      if (!this.running.delete(at)) return;
      if (ok) this.record(end - at);
    };
  }

  record(ms: number): void {
    this.avgMs = this.avgMs * (1 - START_WEIGHT) + ms * START_WEIGHT;
  }

  /** How long one start takes now, ms. */
  startMs(): number {
    return this.avgMs;
  }

  /** Milliseconds between two finished starts while they run back to back. */
  msPerStart(): number {
    return this.avgMs / Math.max(1, this.parallel);
  }

  /**
   * How long the `position`-th create waiting (1: the first) is expected to wait for its sandbox:
   * the starts running now end one average start after they began, free start slots begin one
   * now, and later places come one start-interval after the last of those.
   */
  expectedWaitMs(position: number, now = performance.now()): number {
    const ends = [...this.running].map((at) => Math.max(0, at + this.avgMs - now));
    for (let free = this.parallel - this.running.size; free > 0; free--) ends.push(this.avgMs);
    ends.sort((x, y) => x - y);
    if (position <= ends.length) return ends[position - 1] as number;
    return (ends[ends.length - 1] ?? 0) + (position - ends.length) * this.msPerStart();
  }
}
