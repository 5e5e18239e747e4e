// Warm-pool sizing and start meter (src/sandbox/pool.ts) and the limiter (src/common/limiter.ts): pure logic, no sandboxes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Limiter } from "../../src/common/limiter.js";
import { PoolDemand, StartMeter } from "../../src/sandbox/pool.js";

test("the pool target follows the creates of the last seconds, between its minimum and maximum", () => {
  const demand = new PoolDemand(4, 50);
  const t0 = 1_000_000;
  assert.equal(demand.target(t0), 4, "quiet: the minimum");
  for (let i = 0; i < 100; i++) demand.record(t0 + i * 10); // 100 creates in one second
  assert.equal(demand.target(t0 + 1000), 20, "100 creates over the 5 s window: 20 a second");
  for (let i = 0; i < 1000; i++) demand.record(t0 + 1000 + i);
  assert.equal(demand.target(t0 + 2000), 50, "capped at the maximum");
  assert.equal(demand.target(t0 + 7001), 4, "demand older than the window is forgotten");
});

test("a maximum below the minimum keeps the minimum", () => {
  const demand = new PoolDemand(8, 2);
  for (let i = 0; i < 100; i++) demand.record(0);
  assert.equal(demand.target(0), 8);
});

test("the limiter runs at most its limit at once, the rest in order", async () => {
  const limiter = new Limiter(2);
  let running = 0;
  let peak = 0;
  const order: number[] = [];
  const releases: (() => void)[] = [];
  const tasks = Array.from({ length: 5 }, (_, i) =>
    limiter.run(async () => {
      running += 1;
      peak = Math.max(peak, running);
      order.push(i);
      await new Promise<void>((resolve) => releases.push(resolve));
      running -= 1;
      return i;
    }),
  );
  await new Promise((r) => setImmediate(r));
  assert.equal(limiter.active, 2);
  assert.equal(limiter.waiting, 3);
  while (releases.length) {
    releases.shift()?.();
    await new Promise((r) => setImmediate(r));
  }
  assert.deepEqual(await Promise.all(tasks), [0, 1, 2, 3, 4]);
  assert.equal(peak, 2);
  assert.deepEqual(order, [0, 1, 2, 3, 4]);
  assert.equal(limiter.active, 0);
});

test("a failing task frees its place", async () => {
  const limiter = new Limiter(1);
  await assert.rejects(
    limiter.run(async () => Promise.reject(new Error("boom"))),
    /boom/,
  );
  assert.equal(await limiter.run(async () => 7), 7);
});

test("a waiting create's expected wait: the starts running now, free start slots, then one start-interval a place", () => {
  const meter = new StartMeter(4, 1000);
  assert.equal(meter.expectedWaitMs(1, 0), 1000, "unmeasured and nothing running: one start, assumed a second");
  for (let i = 0; i < 60; i++) meter.record(200);
  assert.ok(Math.abs(meter.startMs() - 200) < 0.01);
  // Two starts running, begun 150 ms and 50 ms ago; two free slots would begin now.
  const now = 10_000;
  const a = meter.begin(now - 150);
  const b = meter.begin(now - 50);
  assert.ok(Math.abs(meter.expectedWaitMs(1, now) - 50) < 0.01, "the older start ends in 50 ms");
  assert.ok(Math.abs(meter.expectedWaitMs(2, now) - 150) < 0.01);
  assert.ok(Math.abs(meter.expectedWaitMs(4, now) - 200) < 0.01, "the free slots' starts end in one start");
  assert.ok(Math.abs(meter.expectedWaitMs(8, now) - 400) < 0.01, "then one every 50 ms (200 ms, four at a time)");
  // A start that ends is recorded; a failed one is not.
  a(true, now + 850);
  assert.ok(meter.startMs() > 300, "a 1 s start raises the average");
  const before = meter.startMs();
  b(false, now);
  assert.equal(meter.startMs(), before);
  // The host gets crowded: starts take 5 s, and a create expects to wait longer than a second.
  for (let i = 0; i < 30; i++) meter.record(5000);
  assert.ok(meter.expectedWaitMs(1, now) > 4000);
});
