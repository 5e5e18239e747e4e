// A cluster's activity numbers: each node counts the runs and sandboxes it serves, so a tenant's
// (or the service's) report is the sum of every node's own report. Pure: the reports come in, the
// summed one goes out, in the same shape.
import type { StatsReport } from "./schemas.js";

type Tenant = NonNullable<StatsReport["tenants"]>[number];

/** Busiest first: runs, then live sandboxes, then the id. */
export function byActivity(a: Tenant, b: Tenant): number {
  return b.runs - a.runs || b.live_sandboxes - a.live_sandboxes || a.tenant_id.localeCompare(b.tenant_id);
}

const sum = (values: number[]) => values.reduce((s, v) => s + v, 0);

/** Sums keyed rows (`key` names them), adding the numeric fields `fields`. */
function sumRows<R extends object>(rows: R[], key: keyof R, fields: (keyof R)[]): R[] {
  const out = new Map<unknown, R>();
  for (const row of rows) {
    const seen = out.get(row[key]);
    if (!seen) out.set(row[key], { ...row });
    else for (const f of fields) (seen[f] as number) += row[f] as number;
  }
  return [...out.values()];
}

/**
 * `own` (this node's report, whose timestamp and step the result keeps) summed with the other
 * nodes' `others`; `missing` names the nodes left out (the field is absent when none is). The
 * series are added from the newest point back: each node samples every `interval_seconds` on its
 * own clock, so the points of one step are at most that far apart.
 */
export function mergeReports(own: StatsReport, others: readonly StatsReport[], missing: readonly string[]): StatsReport {
  const all = [own, ...others];
  const runsPerSecond = sum(all.map((r) => r.runs_per_second));
  const failedPerSecond = sum(all.map((r) => r.runs_per_second * r.error_rate));
  const longest = all.reduce((a, b) => (b.series.length > a.series.length ? b : a));
  const series = longest.series.map((p) => ({ timestamp: p.timestamp, runs: 0, errors: 0, live_sandboxes: 0 }));
  for (const r of all) {
    const offset = series.length - r.series.length;
    r.series.forEach((p, i) => {
      const q = series[offset + i] as (typeof series)[number];
      q.runs += p.runs;
      q.errors += p.errors;
      q.live_sandboxes += p.live_sandboxes;
    });
  }
  const merged: StatsReport = {
    ...own,
    live_sandboxes: sum(all.map((r) => r.live_sandboxes)),
    runs_per_second: Math.round(runsPerSecond * 1000) / 1000,
    error_rate: runsPerSecond > 0 ? Math.round((failedPerSecond / runsPerSecond) * 10000) / 10000 : 0,
    series,
    runs_by_language: sumRows(
      all.flatMap((r) => r.runs_by_language),
      "language",
      ["runs", "errors"],
    ).sort((a, b) => b.runs - a.runs || a.language.localeCompare(b.language)),
  };
  if (own.tenants) {
    merged.tenants = sumRows(
      all.flatMap((r) => r.tenants ?? []),
      "tenant_id",
      ["live_sandboxes", "runs", "errors"],
    ).sort(byActivity);
  }
  if (missing.length > 0) merged.missing_nodes = [...missing];
  return merged;
}
