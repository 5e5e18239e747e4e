// Warm-pool sizing and the start/teardown limiter (src/sandbox/pool.ts): pure logic, no sandboxes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Limiter, PoolDemand, StartMeter } from "../../src/sandbox/pool.js";

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

test("the start queue is sized from the measured start speed: what starts serve within the wait", () => {
  const meter = new StartMeter(4, 1000);
  assert.equal(meter.queueFor(1000), 4, "unmeasured: a start is assumed to take a second, four at a time");
  for (let i = 0; i < 50; i++) meter.record(200);
  assert.ok(Math.abs(meter.msPerStart() - 50) < 0.1, "200 ms starts, four at a time: one every 50 ms");
  assert.equal(meter.queueFor(1001), 20);
  // The host gets crowded: starts take 2 s, and within a few of them the queue is small.
  for (let i = 0; i < 20; i++) meter.record(2000);
  assert.equal(meter.queueFor(1000), 2);
  assert.equal(new StartMeter(1, 5000).queueFor(1000), 1, "a start slower than the wait: one create waits for the next");
});
