// The last hour of the service's activity for the dashboard's overview: every 10 s a sample of the
// run counters the metrics already keep (agentbox_tenant_executions_total) and of the live
// sandboxes, service-wide and per tenant, in a fixed ring. Nothing is added to the run path: the
// sampler only reads the counters.
import type { Metrics } from "../api/metrics.js";

/** Runs and failed runs since the service started (cumulative), and sandboxes live now. */
export interface Activity {
  runs: number;
  errors: number;
  live: number;
}

export interface StatsSample extends Activity {
  /** ms since the epoch */
  at: number;
  /** The same per tenant (tenants with no run and no live sandbox are absent). */
  tenants: Map<string, Activity>;
}

export interface LanguageTotals {
  language: string;
  runs: number;
  errors: number;
}

export const SAMPLE_MS = 10_000;
export const WINDOW_MS = 3_600_000;
const CAPACITY = WINDOW_MS / SAMPLE_MS + 1;
const NONE: Activity = { runs: 0, errors: 0, live: 0 };

export class StatsHistory {
  private readonly ring: StatsSample[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly metrics: Metrics,
    private readonly liveByTenant: () => ReadonlyMap<string, number>,
  ) {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  /** A reading of the counters now, and the totals per language (of one tenant, or of all). */
  async read(tenant?: string): Promise<{ sample: StatsSample; languages: LanguageTotals[] }> {
    const byLanguage = new Map<string, LanguageTotals>();
    const tenants = new Map<string, Activity>();
    for (const [id, live] of this.liveByTenant()) tenants.set(id, { ...NONE, live });
    for (const v of (await this.metrics.tenantExecutions.get()).values) {
      const id = String(v.labels.tenant ?? "");
      const failed = v.labels.outcome !== "ok";
      const t = tenants.get(id) ?? { ...NONE };
      t.runs += v.value;
      if (failed) t.errors += v.value;
      tenants.set(id, t);
      if (tenant !== undefined && id !== tenant) continue;
      const language = String(v.labels.language ?? "unknown");
      const l = byLanguage.get(language) ?? { language, runs: 0, errors: 0 };
      l.runs += v.value;
      if (failed) l.errors += v.value;
      byLanguage.set(language, l);
    }
    const languages = [...byLanguage.values()].sort((a, b) => b.runs - a.runs);
    const all = [...tenants.values()].reduce(
      (s, t) => ({ runs: s.runs + t.runs, errors: s.errors + t.errors, live: s.live + t.live }),
      NONE,
    );
    return { sample: { at: Date.now(), ...all, tenants }, languages };
  }

  /** The samples of the last hour, oldest first. */
  samples(): readonly StatsSample[] {
    return this.ring;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private async sample(): Promise<void> {
    const { sample } = await this.read();
    this.ring.push(sample);
    if (this.ring.length > CAPACITY) this.ring.shift();
  }
}

/** One tenant's view of a sample (its own numbers only), or the service-wide one. */
export function activityOf(sample: StatsSample, tenant?: string): Activity & { at: number } {
  if (tenant === undefined) return { at: sample.at, runs: sample.runs, errors: sample.errors, live: sample.live };
  return { at: sample.at, ...(sample.tenants.get(tenant) ?? NONE) };
}

/** Runs per second and the failed fraction between two readings (0 when nothing ran). */
export function rates(from: Activity & { at: number }, to: Activity & { at: number }): { runsPerSecond: number; errorRate: number } {
  const runs = to.runs - from.runs;
  const seconds = Math.max(1, (to.at - from.at) / 1000);
  return { runsPerSecond: runs / seconds, errorRate: runs > 0 ? (to.errors - from.errors) / runs : 0 };
}
