// The overview's numbers: rates between two readings, and readings of the real metrics counters.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Metrics } from "../../src/api/metrics.js";
import { rates, StatsHistory } from "../../src/stats/history.js";

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
