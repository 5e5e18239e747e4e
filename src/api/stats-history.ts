// The last hour of the service's activity for the dashboard's overview: every 10 s a sample of the
// run counters the metrics already keep (agentbox_executions_total) and of the live sandboxes, in
// a fixed ring. Nothing is added to the run path: the sampler only reads the counters.
import type { Metrics } from "./metrics.js";

export interface StatsSample {
  /** ms since the epoch */
  at: number;
  /** Runs and failed runs since the service started (cumulative). */
  runs: number;
  errors: number;
  live: number;
}

export interface LanguageTotals {
  language: string;
  runs: number;
  errors: number;
}

export const SAMPLE_MS = 10_000;
export const WINDOW_MS = 3_600_000;
const CAPACITY = WINDOW_MS / SAMPLE_MS + 1;

export class StatsHistory {
  private readonly ring: StatsSample[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly metrics: Metrics,
    private readonly liveCount: () => number,
  ) {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  /** A reading of the counters now, and the totals per language. */
  async read(): Promise<{ sample: StatsSample; languages: LanguageTotals[] }> {
    const byLanguage = new Map<string, LanguageTotals>();
    for (const v of (await this.metrics.executions.get()).values) {
      const language = String(v.labels.language ?? "unknown");
      const t = byLanguage.get(language) ?? { language, runs: 0, errors: 0 };
      t.runs += v.value;
      if (v.labels.outcome !== "ok") t.errors += v.value;
      byLanguage.set(language, t);
    }
    const languages = [...byLanguage.values()].sort((a, b) => b.runs - a.runs);
    const runs = languages.reduce((n, l) => n + l.runs, 0);
    const errors = languages.reduce((n, l) => n + l.errors, 0);
    return { sample: { at: Date.now(), runs, errors, live: this.liveCount() }, languages };
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

/** Runs per second and the failed fraction between two readings (0 when nothing ran). */
export function rates(from: StatsSample, to: StatsSample): { runsPerSecond: number; errorRate: number } {
  const runs = to.runs - from.runs;
  const seconds = Math.max(1, (to.at - from.at) / 1000);
  return { runsPerSecond: runs / seconds, errorRate: runs > 0 ? (to.errors - from.errors) / runs : 0 };
}
