// Executions at once over the cluster: every node publishes the runs each tenant and API key has in
// flight on it and counts what the other nodes published against the same limits (a tenant's
// `max_concurrent_runs`, a key's), so that those hold over the cluster, within one exchange. The hot
// path reads only this node's memory; the exchange runs beside it.
import type { Redis } from "ioredis";
import type { InFlightCounts } from "../sandbox/gates.js";
import * as K from "./keys.js";

/** How often counts are exchanged: a tenant can pass its limit by what it starts within one interval. */
export const RUN_COUNTS_MS = 250;

/** What the exchange reads and sets: the execution gates (src/sandbox/gates.ts). */
export interface RunCountGates {
  inFlightCounts(): InFlightCounts;
  countElsewhere(counts: InFlightCounts): void;
}

/** Adds `from` into `into` (per id). */
function addInto(into: Record<string, number>, from: Record<string, number> | undefined): void {
  for (const id in from) {
    const n = from[id];
    if (typeof n === "number" && n > 0) into[id] = (into[id] ?? 0) + n;
  }
}

/** The sum of the counts other nodes published (each a JSON InFlightCounts, null when none). */
export function sumCounts(published: ReadonlyArray<string | null>): InFlightCounts {
  const sum: InFlightCounts = { tenants: {}, keys: {} };
  for (const text of published) {
    if (text === null) continue;
    try {
      const c = JSON.parse(text) as Partial<InFlightCounts>;
      addInto(sum.tenants, c.tenants);
      addInto(sum.keys, c.keys);
    } catch {
      // a record this version cannot read counts as none
    }
  }
  return sum;
}

export class RunCounts {
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  /** Whether this node's last published record was empty (then it is not written again until it changes). */
  private publishedEmpty = false;

  constructor(
    private readonly redis: Redis,
    private readonly nodeId: string,
    private readonly gates: RunCountGates,
    /** The other nodes that may run code (their records are read). */
    private readonly peers: () => string[],
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.exchange(), RUN_COUNTS_MS);
    this.timer.unref();
  }

  /** Publishes this node's counts and reads the others'. Redis away: the last counts known stay. */
  async exchange(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const mine = this.gates.inFlightCounts();
      const empty = Object.keys(mine.tenants).length === 0;
      // A record lives three intervals: a node that stops publishing (lost, stopped) stops counting.
      if (!empty) await this.redis.set(K.runCounts(this.nodeId), JSON.stringify(mine), "PX", RUN_COUNTS_MS * 3);
      else if (!this.publishedEmpty) await this.redis.del(K.runCounts(this.nodeId));
      this.publishedEmpty = empty;
      const peers = this.peers();
      const published = peers.length === 0 ? [] : await this.redis.mget(peers.map(K.runCounts));
      this.gates.countElsewhere(sumCounts(published));
    } catch (err) {
      this.onError(err);
    } finally {
      this.busy = false;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.redis.del(K.runCounts(this.nodeId)).catch(() => {});
  }
}
