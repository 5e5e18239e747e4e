// The template build queue's fairness: the next build is another tenant's when one waits behind a
// busy tenant's, each tenant is held to its cap of waiting and running builds, the queue's total
// to its own, and a waiting build can be taken out. Jobs are finished by hand: nothing here is timed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { FairQueue } from "../../src/templates/build-queue.js";

function harness(o: { parallel: number; maxWaiting: number; perTenant: number }) {
  const started: string[] = [];
  const finishers = new Map<string, () => void>();
  const q = new FairQueue({ ...o, onError: (err) => assert.fail(String(err)) });
  const push = (tenantId: string, id: string) => {
    assert.equal(q.refusal(tenantId), undefined, `${id} is taken`);
    q.push({
      id,
      tenantId,
      run: () =>
        new Promise<void>((resolve) => {
          started.push(id);
          finishers.set(id, resolve);
        }),
    });
  };
  const settle = () => new Promise((r) => setImmediate(r));
  const finish = async (id: string) => {
    const f = finishers.get(id);
    assert.ok(f, `${id} is running`);
    finishers.delete(id);
    f();
    await settle();
  };
  return { q, started, push, finish, settle };
}

test("another tenant's build starts next, before the busy tenant's waiting ones", async () => {
  const h = harness({ parallel: 1, maxWaiting: 100, perTenant: 100 });
  for (let i = 1; i <= 5; i++) h.push("a", `a${i}`);
  await h.settle();
  h.push("b", "b1");
  h.push("b", "b2");
  await h.settle();
  assert.deepEqual(h.started, ["a1"]);
  await h.finish("a1");
  assert.deepEqual(h.started, ["a1", "b1"], "b's first build goes before a's second");
  await h.finish("b1");
  await h.finish("a2");
  await h.finish("b2");
  assert.deepEqual(h.started, ["a1", "b1", "a2", "b2", "a3"], "then in turn");
  await h.finish("a3");
  await h.finish("a4");
  await h.finish("a5");
  assert.equal(h.q.waitingTotal + h.q.runningTotal, 0);
});

test("with several running at once, the tenant with fewer running goes first", async () => {
  const h = harness({ parallel: 2, maxWaiting: 100, perTenant: 100 });
  for (let i = 1; i <= 4; i++) h.push("a", `a${i}`);
  await h.settle();
  assert.deepEqual(h.started, ["a1", "a2"]);
  h.push("b", "b1");
  h.push("c", "c1");
  await h.finish("a1");
  await h.finish("b1");
  assert.deepEqual(h.started, ["a1", "a2", "b1", "c1"]);
});

test("a tenant is held to its cap of waiting and running builds; the queue to its total", async () => {
  const h = harness({ parallel: 1, maxWaiting: 3, perTenant: 2 });
  h.push("a", "a1");
  h.push("a", "a2");
  await h.settle();
  assert.deepEqual(h.q.refusal("a"), { reason: "tenant", count: 2 });
  h.push("b", "b1");
  h.push("c", "c1");
  assert.deepEqual(h.q.refusal("d"), { reason: "full", count: 3 });
  await h.finish("a1");
  assert.equal(h.q.refusal("a"), undefined, "a's running build ended: room for one more");
  assert.equal(h.q.countOf("a"), 1);
});

test("a waiting build is taken out; a running one is not", async () => {
  const h = harness({ parallel: 1, maxWaiting: 10, perTenant: 10 });
  h.push("a", "a1");
  h.push("a", "a2");
  h.push("b", "b1");
  await h.settle();
  assert.equal(h.q.remove("a1"), false, "running");
  assert.equal(h.q.remove("b1"), true);
  assert.equal(h.q.remove("b1"), false);
  assert.equal(h.q.countOf("b"), 0);
  await h.finish("a1");
  assert.deepEqual(h.started, ["a1", "a2"]);
  await h.finish("a2");
  assert.equal(h.q.waitingTotal + h.q.runningTotal, 0);
});
