// The overview's numbers: rates between two readings, readings of the real metrics counters, and
// a cluster's report summed from its nodes' reports.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Metrics } from "../../src/api/metrics.js";
import { rates, StatsHistory } from "../../src/stats/history.js";
import { mergeReports } from "../../src/stats/merge.js";

test("rates: runs per second and the failed fraction between two readings", () => {
  const from = { at: 0, runs: 10, errors: 1, live: 0 };
  assert.deepEqual(rates(from, { at: 60_000, runs: 70, errors: 16, live: 3 }), { runsPerSecond: 1, errorRate: 0.25 });
  // Nothing ran: no division by zero, no error rate.
  assert.deepEqual(rates(from, { at: 60_000, runs: 10, errors: 1, live: 0 }), { runsPerSecond: 0, errorRate: 0 });
  // Readings closer than a second are taken over one second, not blown up.
  assert.equal(rates(from, { at: 10, runs: 12, errors: 1, live: 0 }).runsPerSecond, 2);
});

test("a reading sums the executions counter: every outcome but ok is a failure, per language and per tenant", async () => {
  let live = 2;
  const metrics = new Metrics(() => live);
  metrics.tenantExecutions.inc({ tenant: "a", language: "python", outcome: "ok" }, 3);
  metrics.tenantExecutions.inc({ tenant: "a", language: "python", outcome: "timeout" });
  metrics.tenantExecutions.inc({ tenant: "b", language: "bash", outcome: "error" }, 2);
  metrics.tenantExecutions.inc({ tenant: "a", language: "javascript", outcome: "ok" });
  const history = new StatsHistory(
    metrics,
    () =>
      new Map([
        ["a", live - 1],
        ["c", 1],
      ]),
  );
  try {
    const { sample, languages } = await history.read();
    assert.equal(sample.runs, 7);
    assert.equal(sample.errors, 3);
    assert.equal(sample.live, 2);
    assert.deepEqual(languages, [
      { language: "python", runs: 4, errors: 1 },
      { language: "bash", runs: 2, errors: 2 },
      { language: "javascript", runs: 1, errors: 0 },
    ]);
    assert.deepEqual(Object.fromEntries(sample.tenants), {
      a: { runs: 5, errors: 1, live: 1 },
      b: { runs: 2, errors: 2, live: 0 },
      c: { runs: 0, errors: 0, live: 1 },
    });
    // One tenant's languages are its own runs only.
    assert.deepEqual((await history.read("b")).languages, [{ language: "bash", runs: 2, errors: 2 }]);
    live = 5;
    assert.equal((await history.read()).sample.live, 5);
    // The first sample is taken at construction.
    await new Promise((r) => setImmediate(r));
    assert.equal(history.samples().length, 1);
  } finally {
    history.close();
  }
});

test("a cluster's report sums the nodes' reports: series from the newest point back, the failed fraction of all runs", () => {
  const point = (timestamp: string, runs: number, errors: number, live_sandboxes: number) => ({ timestamp, runs, errors, live_sandboxes });
  const own = {
    timestamp: "2026-01-01T00:00:30.000Z",
    live_sandboxes: 1,
    runs_per_second: 1,
    error_rate: 0,
    interval_seconds: 10,
    series: [point("2026-01-01T00:00:20.000Z", 1, 0, 1), point("2026-01-01T00:00:30.000Z", 2, 0, 1)],
    runs_by_language: [{ language: "python", runs: 3, errors: 0 }],
    tenants: [{ tenant_id: "a", live_sandboxes: 1, runs: 3, errors: 0 }],
  };
  const other = {
    ...own,
    timestamp: "2026-01-01T00:00:34.000Z",
    live_sandboxes: 2,
    runs_per_second: 3,
    error_rate: 0.5,
    // Started earlier: one point more, the oldest.
    series: [
      point("2026-01-01T00:00:14.000Z", 5, 1, 2),
      point("2026-01-01T00:00:24.000Z", 1, 1, 2),
      point("2026-01-01T00:00:34.000Z", 4, 2, 2),
    ],
    runs_by_language: [
      { language: "bash", runs: 4, errors: 1 },
      { language: "python", runs: 6, errors: 3 },
    ],
    tenants: [
      { tenant_id: "b", live_sandboxes: 2, runs: 1, errors: 0 },
      { tenant_id: "a", live_sandboxes: 0, runs: 9, errors: 4 },
    ],
  };
  const merged = mergeReports(own, [other], ["exec-3"]);
  assert.equal(merged.timestamp, own.timestamp);
  assert.equal(merged.live_sandboxes, 3);
  assert.equal(merged.runs_per_second, 4);
  assert.equal(merged.error_rate, 0.375);
  assert.deepEqual(merged.series, [
    point("2026-01-01T00:00:14.000Z", 5, 1, 2),
    point("2026-01-01T00:00:24.000Z", 2, 1, 3),
    point("2026-01-01T00:00:34.000Z", 6, 2, 3),
  ]);
  assert.deepEqual(merged.runs_by_language, [
    { language: "python", runs: 9, errors: 3 },
    { language: "bash", runs: 4, errors: 1 },
  ]);
  assert.deepEqual(merged.tenants, [
    { tenant_id: "a", live_sandboxes: 1, runs: 12, errors: 4 },
    { tenant_id: "b", live_sandboxes: 2, runs: 1, errors: 0 },
  ]);
  assert.deepEqual(merged.missing_nodes, ["exec-3"]);
  assert.equal(mergeReports(own, [], []).missing_nodes, undefined);
  // The inputs are left as they were.
  assert.equal(own.series[1]?.runs, 2);
});
