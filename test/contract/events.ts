// The contracts of EventStore and WebhookStore: what any implementation must do.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Attempt, Delivery, WebhookStore } from "../../src/events/store/webhooks.js";
import type { EventStore } from "../../src/events/store/events.js";

/** An event store, and a way to mark a sandbox ended (events are pruned by their sandbox's end). */
export interface EventHarness {
  store: EventStore;
  sandboxEnded(sandboxId: string, endedAt: string): Promise<void>;
}

const at = (s: number) => `2026-01-01T00:00:${String(s).padStart(2, "0")}.000Z`;

export function describeEventStoreContract(name: string, perSandbox: number, make: () => Promise<EventHarness>): void {
  describe(`EventStore contract: ${name} (${perSandbox} per sandbox)`, () => {
    test("not found: no events for an unknown sandbox or another tenant", async () => {
      const { store } = await make();
      assert.deepEqual(await store.list("t1", "nothing"), []);
      await store.add({ type: "created", sandboxId: "s1", tenantId: "t1", at: at(0), detail: { template: "x" } });
      assert.deepEqual(await store.list("t2", "s1"), []);
    });

    test("oldest first; only the newest perSandbox are kept; ended events keep reason and who", async () => {
      const { store } = await make();
      for (let i = 0; i < perSandbox + 3; i++)
        await store.add({ type: "timeout_extended", sandboxId: "s1", tenantId: "t1", at: at(i), detail: { i } });
      await store.add({ type: "ended", sandboxId: "s2", tenantId: "t1", at: at(1), reason: "killed", by: "operator" });
      const kept = await store.list("t1", "s1");
      assert.equal(kept.length, perSandbox);
      assert.deepEqual(
        kept.map((e) => e.detail.i),
        Array.from({ length: perSandbox }, (_, k) => k + 3),
      );
      assert.deepEqual(await store.list("t1", "s2"), [{ type: "ended", at: at(1), reason: "killed", detail: { by: "operator" } }]);
    });

    test("prune removes the events of sandboxes ended before the cutoff, and says how many", async () => {
      const { store, sandboxEnded } = await make();
      await store.add({ type: "created", sandboxId: "old", tenantId: "t1", at: at(0), detail: {} });
      await store.add({ type: "ended", sandboxId: "old", tenantId: "t1", at: at(5), reason: "killed" });
      await store.add({ type: "created", sandboxId: "live", tenantId: "t1", at: at(0), detail: {} });
      await sandboxEnded("old", at(5));
      assert.equal(await store.prune(at(4)), 0);
      assert.equal(await store.prune(at(30)), 2);
      assert.deepEqual(await store.list("t1", "old"), []);
      assert.equal((await store.list("t1", "live")).length, 1);
    });
  });
}

const refusal: Attempt = { at: at(0), status_code: null, error: "too many pending", duration_ms: 0 };
const delivery = (id: string, webhookId: string, createdAt: number) => ({
  id,
  webhookId,
  tenantId: "t1",
  event: "ended" as const,
  payload: `{"id":"${id}"}`,
  createdAt,
});

export function describeWebhookStoreContract(name: string, makeStore: () => Promise<WebhookStore>): void {
  describe(`WebhookStore contract: ${name}`, () => {
    test("hooks: add, list oldest first, get only the tenant's own, count, delete", async () => {
      const store = await makeStore();
      const a = await store.addHook("t1", "https://a.example/", ["ended"], "s".repeat(16), 10);
      const b = await store.addHook("t1", "https://b.example/", ["created", "ended"], "t".repeat(16), 10);
      assert.ok(a && b);
      assert.notEqual(a.id, b.id);
      assert.deepEqual(await store.hook("t1", a.id), a);
      assert.equal(await store.hook("t2", a.id), undefined, "another tenant's webhook does not exist for it");
      assert.equal(await store.hook("t1", "wh_nothing"), undefined);
      // Oldest first; made in the same millisecond, by id.
      const oldestFirst = [a, b].sort((x, y) =>
        x.createdAt === y.createdAt ? (x.id < y.id ? -1 : 1) : x.createdAt < y.createdAt ? -1 : 1,
      );
      assert.deepEqual(
        (await store.hooksOf("t1")).map((h) => h.id),
        oldestFirst.map((h) => h.id),
      );
      assert.equal(await store.countHooks("t1"), 2);
      assert.equal(await store.countHooks("t2"), 0);
      await store.deleteHook(a.id);
      assert.equal(await store.countHooks("t1"), 1);
    });

    test("the per-tenant limit is checked by the insert: concurrent adds never pass it", async () => {
      const store = await makeStore();
      const made = await Promise.all(
        Array.from({ length: 8 }, (_, i) => store.addHook("t1", `https://h${i}.example/`, ["ended"], "s".repeat(16), 3)),
      );
      assert.equal(made.filter(Boolean).length, 3);
      assert.equal(await store.countHooks("t1"), 3);
      assert.ok(await store.addHook("t2", "https://other.example/", ["ended"], "s".repeat(16), 3), "other tenants are not affected");
    });

    test("enqueue: pending up to the cap (checked atomically), then stored as failed with the refusal", async () => {
      const store = await makeStore();
      const hook = await store.addHook("t1", "https://a.example/", ["ended"], "s".repeat(16), 10);
      assert.ok(hook);
      const states = await Promise.all(Array.from({ length: 5 }, (_, i) => store.enqueue(delivery(`d${i}`, hook.id, 100 + i), 3, refusal)));
      assert.deepEqual(states.filter((s) => s === "pending").length, 3);
      assert.equal(await store.pendingCount(hook.id), 3);
      const failed = (await store.deliveries(hook.id, 10)).filter((d) => d.state === "failed");
      assert.equal(failed.length, 2);
      assert.deepEqual(failed[0]?.log, [refusal]);
    });

    test("due: soonest first, up to the limit, skipping busy webhooks; nextDue; save moves a delivery on", async () => {
      const store = await makeStore();
      const a = await store.addHook("t1", "https://a.example/", ["ended"], "s".repeat(16), 10);
      const b = await store.addHook("t1", "https://b.example/", ["ended"], "s".repeat(16), 10);
      assert.ok(a && b);
      assert.equal(await store.nextDue(), undefined);
      for (let i = 0; i < 4; i++) await store.enqueue(delivery(`a${i}`, a.id, 100 + i), 100, refusal);
      await store.enqueue(delivery("b0", b.id, 200), 100, refusal);
      assert.deepEqual(
        (await store.due(1000, 3)).map((d) => d.id),
        ["a0", "a1", "a2"],
      );
      assert.deepEqual(
        (await store.due(1000, 10, [a.id])).map((d) => d.id),
        ["b0"],
      );
      assert.deepEqual(await store.due(150, 10, [a.id]), []);
      assert.equal(await store.nextDue(), 100);
      const [first] = await store.due(1000, 1);
      assert.ok(first);
      const attempt: Attempt = { at: at(1), status_code: 500, error: "HTTP 500", duration_ms: 12 };
      await store.save({ ...first, attempts: 1, nextAttemptAt: 5000, log: [attempt] });
      assert.equal(await store.nextDue(), 101);
      const saved = (await store.deliveries(a.id, 10)).find((d) => d.id === first.id);
      assert.deepEqual(saved && { attempts: saved.attempts, next: saved.nextAttemptAt, log: saved.log }, {
        attempts: 1,
        next: 5000,
        log: [attempt],
      });
      await store.save({ ...first, state: "delivered", attempts: 2, log: [attempt, attempt] });
      assert.equal(await store.pendingCount(a.id), 3);
    });

    test("claim: each attempt of a pending delivery is taken once, however many dispatchers race for it", async () => {
      const store = await makeStore();
      const hook = await store.addHook("t1", "https://a.example/", ["ended"], "s".repeat(16), 10);
      assert.ok(hook);
      await store.enqueue(delivery("d1", hook.id, 100), 100, refusal);
      const taken = await Promise.all(Array.from({ length: 5 }, () => store.claim("d1", 0, 5000)));
      assert.equal(taken.filter(Boolean).length, 1, "one of five concurrent claims wins");
      const [d] = await store.deliveries(hook.id, 1);
      assert.deepEqual(d && [d.attempts, d.nextAttemptAt], [1, 5000]);
      assert.deepEqual(await store.due(1000, 10), [], "a taken attempt is not due again before its retry time");
      assert.equal(await store.claim("d1", 0, 6000), false, "a stale count takes nothing");
      assert.equal(await store.claim("d1", 1, 6000), true, "the next attempt");
      await store.save({ ...(d as Delivery), state: "delivered", attempts: 2 });
      assert.equal(await store.claim("d1", 2, 7000), false, "a finished delivery is not taken");
      assert.equal(await store.claim("nothing", 0, 7000), false);
    });

    test("a long attempt log is cut to its first and last attempts", async () => {
      const store = await makeStore();
      const hook = await store.addHook("t1", "https://a.example/", ["ended"], "s".repeat(16), 10);
      assert.ok(hook);
      await store.enqueue(delivery("d", hook.id, 1), 10, refusal);
      const [d] = await store.deliveries(hook.id, 1);
      assert.ok(d);
      const log = Array.from({ length: 100 }, (_, i) => ({ ...refusal, duration_ms: i }));
      await store.save({ ...d, log });
      const [saved] = await store.deliveries(hook.id, 1);
      const kept = saved?.log.map((x) => x.duration_ms) ?? [];
      assert.ok(kept.length < 100 && kept.length >= 10);
      assert.deepEqual(kept.slice(0, 5), [0, 1, 2, 3, 4]);
      assert.equal(kept.at(-1), 99);
    });

    test("history: deliveries newest first; trim keeps the newest finished ones and every pending one; delete drops them", async () => {
      const store = await makeStore();
      const hook = await store.addHook("t1", "https://a.example/", ["ended"], "s".repeat(16), 10);
      assert.ok(hook);
      await store.enqueue(delivery("p", hook.id, 50), 100, refusal);
      for (let i = 0; i < 5; i++) {
        await store.enqueue(delivery(`f${i}`, hook.id, 100 + i), 100, refusal);
        const d = (await store.deliveries(hook.id, 100)).find((x) => x.id === `f${i}`);
        assert.ok(d);
        await store.save({ ...d, state: "delivered", attempts: 1 });
      }
      assert.deepEqual(
        (await store.deliveries(hook.id, 3)).map((d) => d.id),
        ["f4", "f3", "f2"],
      );
      await store.trimHistory(2);
      assert.deepEqual(
        (await store.deliveries(hook.id, 100)).map((d) => d.id),
        ["f4", "f3", "p"],
      );
      await store.deleteHook(hook.id);
      assert.deepEqual(await store.deliveries(hook.id, 100), []);
      assert.equal(await store.pendingCount(hook.id), 0);
      assert.deepEqual(await store.due(10_000, 10), []);
    });
  });
}
