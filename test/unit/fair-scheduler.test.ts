// The fair scheduler of the built-in embedding model: batches taken round-robin across tenants
// (one busy tenant cannot make another wait behind all its jobs), small jobs combined into one
// batch, the per-tenant bound refused at once, a cancelled request's queued jobs dropped, and a
// request past its deadline failed with its queued jobs dropped. The engine is a stub whose
// batches the test finishes by hand, so nothing here depends on timing but the deadline's timer.
import assert from "node:assert/strict";
import { test } from "node:test";
import { splitJobs } from "../../src/inference/embeddings-builtin.js";
import { ApiError } from "../../src/errors.js";
import { FairScheduler, type JobOutcome, type Part } from "../../src/inference/fair-scheduler.js";

/** An engine whose batches wait until the test finishes them; it records what each batch held. */
function engine() {
  const batches: string[][] = [];
  const open: Array<() => void> = [];
  const run = (inputs: string[]) => {
    batches.push(inputs);
    return new Promise<string[]>((resolve) => open.push(() => resolve(inputs.map((i) => `done:${i}`))));
  };
  /** Finishes the oldest running batch and lets the scheduler start the next. */
  const finishOne = async () => {
    const f = open.shift();
    assert.ok(f, "a batch is running");
    f();
    await new Promise((r) => setImmediate(r));
  };
  /** Finishes batches until none is left running. */
  const drain = async () => {
    await new Promise((r) => setImmediate(r));
    while (open.length > 0) await finishOne();
  };
  return { run, batches, open, finishOne, drain };
}

const whole = (name: string, n: number): Part<string>[] =>
  Array.from({ length: n }, (_, i) => ({ input: `${name}${i}`, units: 1, weight: 1 }));
const LONG = { deadlineMs: 60_000, deadlineError: () => new Error("deadline") };
const tick = () => new Promise((r) => setImmediate(r));

function scheduler(e: ReturnType<typeof engine>, tenantUnits = 1000) {
  const outcomes: Record<string, number> = {};
  let refused = 0;
  const s = new FairScheduler<string, string>(
    e.run,
    { tenantUnits, concurrency: 1, retryAfterS: 5 },
    {
      jobs: (o: JobOutcome, n: number) => {
        outcomes[o] = (outcomes[o] ?? 0) + n;
      },
      refused: () => {
        refused++;
      },
    },
  );
  return { s, outcomes, refused: () => refused };
}

test("round robin: a tenant that arrives behind another's long request is served after the running job, then in turns", async () => {
  const e = engine();
  const { s, outcomes } = scheduler(e);
  const a = s.submit("a", whole("a", 6), LONG);
  await tick();
  assert.deepEqual(e.batches, [["a0"]]);
  const b = s.submit("b", whole("b", 2), LONG);
  const c = s.submit("c", whole("c", 1), LONG);
  let bDone = false;
  void b.then(() => {
    bDone = true;
  });
  await e.finishOne();
  // b joined first, then c just before the next one to serve: each goes before a's second job.
  await e.finishOne();
  await e.finishOne();
  assert.deepEqual(
    e.batches.map((x) => x.join()),
    ["a0", "c0", "b0", "a1"],
  );
  await e.finishOne();
  await e.finishOne();
  assert.ok(bDone, "b is answered while a still has jobs queued");
  assert.equal(s.queued(), 3);
  await e.drain();
  assert.deepEqual(await a, ["done:a0", "done:a1", "done:a2", "done:a3", "done:a4", "done:a5"]);
  assert.deepEqual(await c, ["done:c0"]);
  assert.deepEqual(
    e.batches.map((x) => x.join()),
    ["a0", "c0", "b0", "a1", "b1", "a2", "a3", "a4", "a5"],
  );
  assert.equal(outcomes.done, 9);
  assert.equal(s.queued(), 0);
  assert.equal(s.tenantUnits("a"), 0);
});

test("small jobs of several tenants share one batch, up to a whole batch's weight", async () => {
  const e = engine();
  const { s } = scheduler(e);
  const first = s.submit("x", [{ input: "x0", units: 1, weight: 1 }], LONG);
  await tick();
  const small = (name: string): Part<string>[] => [
    { input: `${name}0`, units: 1, weight: 0.25 },
    { input: `${name}1`, units: 1, weight: 0.25 },
  ];
  const p = s.submit("p", small("p"), LONG);
  const q = s.submit("q", small("q"), LONG);
  const r = s.submit("r", [{ input: "r0", units: 1, weight: 0.5 }], LONG);
  await e.finishOne();
  // In turns r, q, p (each joined just before the others), until q's second job would pass a whole batch.
  assert.deepEqual(e.batches[1], ["r0", "q0", "p0"]);
  await e.finishOne();
  assert.deepEqual(e.batches[2], ["q1", "p1"]);
  await e.finishOne();
  assert.deepEqual(await p, ["done:p0", "done:p1"]);
  assert.deepEqual(await q, ["done:q0", "done:q1"]);
  assert.deepEqual(await r, ["done:r0"]);
  assert.deepEqual(await first, ["done:x0"]);

  // A heavy job (over half a batch) is not added behind a small one: the small one would wait for it.
  const heavy = s.submit("h", [{ input: "h0", units: 1, weight: 0.75 }], LONG);
  await tick();
  const heavy2 = s.submit("h", [{ input: "h1", units: 1, weight: 0.75 }], LONG);
  const light = s.submit("l", [{ input: "l0", units: 1, weight: 0.1 }], LONG);
  await e.drain();
  assert.deepEqual(e.batches.slice(3), [["h0"], ["l0"], ["h1"]]);
  await Promise.all([heavy, light, heavy2]);
});

test("a tenant over its bound is refused at once with 429 and Retry-After; other tenants are not", async () => {
  const e = engine();
  const { s, refused } = scheduler(e, 10);
  const a = s.submit("a", whole("a", 8), LONG);
  assert.throws(
    () => s.submit("a", whole("a", 3), LONG),
    (err: unknown) => err instanceof ApiError && err.status === 429 && err.code === "rate_limited" && err.retryAfterS === 5,
  );
  assert.equal(refused(), 1);
  const b = s.submit("b", whole("b", 10), LONG);
  assert.equal(s.tenantUnits("a"), 8);
  // What fits beside a's 8 is accepted; finished work frees the bound.
  const a2 = s.submit("a", whole("a", 2), LONG);
  await e.drain();
  await Promise.all([a, a2, b]);
  assert.equal(s.tenantUnits("a"), 0);
  const again = s.submit("a", whole("z", 10), LONG);
  await e.drain();
  assert.equal((await again).length, 10);
});

test("cancellation: a request whose signal aborts fails at once and its queued jobs are dropped", async () => {
  const e = engine();
  const { s, outcomes } = scheduler(e);
  const abort = new AbortController();
  const a = s.submit("a", whole("a", 50), { ...LONG, signal: abort.signal });
  const b = s.submit("b", whole("b", 2), LONG);
  await tick();
  assert.equal(e.batches.length, 1);
  abort.abort(new Error("client went away"));
  await assert.rejects(a, /client went away/);
  assert.equal(outcomes.cancelled, 49, "the 49 queued jobs are dropped at once");
  // The running job still holds its unit until the engine gives it back.
  assert.equal(s.tenantUnits("a"), 1);
  await e.drain();
  assert.deepEqual(await b, ["done:b0", "done:b1"]);
  assert.equal(outcomes.cancelled, 50);
  assert.equal(outcomes.done, 2);
  assert.deepEqual(e.batches.flat(), ["a0", "b0", "b1"], "nothing of a's ran after the abort");
  assert.equal(s.tenantUnits("a"), 0);
  // An already aborted signal never queues anything.
  await assert.rejects(s.submit("a", whole("a", 1), { ...LONG, signal: abort.signal }), /client went away/);
  assert.equal(s.queued(), 0);
});

test("deadline: a request not finished in time fails with the deadline error and its queued jobs are dropped", async () => {
  const e = engine();
  const { s, outcomes } = scheduler(e);
  // The deadline's timer does not hold the process open (a server's listener does): this one does.
  const alive = setTimeout(() => {}, 30_000);
  const started = Date.now();
  const slow = s.submit("a", whole("a", 5), { deadlineMs: 50, deadlineError: () => new ApiError("at_capacity", "too slow", 5) });
  await assert.rejects(slow, (err: unknown) => err instanceof ApiError && err.status === 503 && err.retryAfterS === 5);
  assert.ok(Date.now() - started < 10_000);
  assert.equal(outcomes.expired, 4);
  assert.equal(s.queued(), 0);
  // The batch that was running ends unanswered; the next tenant's work then runs.
  const b = s.submit("b", whole("b", 1), LONG);
  await e.finishOne();
  await e.finishOne();
  assert.deepEqual(await b, ["done:b0"]);
  assert.equal(outcomes.expired, 5);
  clearTimeout(alive);
});

test("a failing batch fails the requests in it; the scheduler goes on with the others", async () => {
  let calls = 0;
  const s = new FairScheduler<string, string>(
    async (inputs) => {
      calls++;
      if (inputs.includes("bad0")) throw new Error("model failed");
      return inputs;
    },
    { tenantUnits: 100, concurrency: 1, retryAfterS: 1 },
  );
  const bad = s.submit("a", whole("bad", 3), LONG);
  const good = s.submit("b", whole("good", 2), LONG);
  await assert.rejects(bad, /model failed/);
  assert.deepEqual(await good, ["good0", "good1"]);
  assert.equal(calls, 3, "a's two other jobs were dropped with it");
});

test("splitJobs: at most N inputs and C characters a job; a longer input goes alone", () => {
  const texts = ["aaaa", "bb", "cccccccccc", "d", "e", "f"];
  const parts = splitJobs(texts, 3, 8);
  assert.deepEqual(
    parts.map((p) => p.input),
    [["aaaa", "bb"], ["cccccccccc"], ["d", "e", "f"]],
  );
  assert.deepEqual(
    parts.map((p) => p.units),
    [2, 1, 3],
  );
  assert.deepEqual(
    parts.map((p) => p.weight),
    [0.75, 1, 1],
  );
  assert.equal(splitJobs(["x"], 32, 16_384)[0]?.weight, 1 / 32);
});
