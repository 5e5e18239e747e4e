// Execution gates: the key, tenant and machine caps, and the fair share that keeps one tenant from
// taking every slot. Pure counting: no sandbox runs here.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../../src/errors.js";
import { sumCounts } from "../../src/cluster/run-counts.js";
import { defaultShareFloor, ExecutionGates, fairShare, type RejectReason, type SlotRequest } from "../../src/sandbox/gates.js";

const slot = (tenantId: string, over: Partial<SlotRequest> = {}): SlotRequest => ({
  keyId: `key-${tenantId}`,
  tenantId,
  keyMax: 0,
  tenantMax: 0,
  ...over,
});

/** Takes slots for `req` until one is refused; returns how many it got and the refusal. */
function fill(gates: ExecutionGates, req: SlotRequest, max = 10_000): { held: (() => void)[]; refusal: ApiError } {
  const held: (() => void)[] = [];
  for (let i = 0; i < max; i++) {
    try {
      held.push(gates.acquire(req));
    } catch (err) {
      assert.ok(err instanceof ApiError);
      return { held, refusal: err };
    }
  }
  throw new Error("never refused");
}

test("the defect: with the default-sized gate, one tenant cannot take the slots another needs", () => {
  const gates = new ExecutionGates({ global: 64 });
  const a = fill(gates, slot("a", { keyMax: 64, tenantMax: 64 }));
  assert.equal(a.held.length, 48, "a lone tenant gets all but the newcomers' reserve (a quarter)");
  assert.equal(a.refusal.code, "rate_limited");
  assert.equal(a.refusal.status, 429);
  assert.equal(a.refusal.retryAfterS, 1);
  // Another tenant still gets slots at once, and more than one: the whole reserve.
  const b = fill(gates, slot("b", { keyMax: 64, tenantMax: 64 }));
  assert.equal(b.held.length, 16);
  // a is over its share of two now: as its runs end it is not given their slots back...
  for (const r of a.held.splice(0, 24)) r();
  assert.throws(() => gates.acquire(slot("a", { keyMax: 64, tenantMax: 64 })), /fair share/);
  // ...and a third tenant finds room.
  const c = gates.acquire(slot("c"));
  assert.equal(gates.tenantInFlight("c"), 1);
  c();
});

test("below half full a tenant is limited only by its own quotas", () => {
  const gates = new ExecutionGates({ global: 10 });
  const { held, refusal } = fill(gates, slot("a", { tenantMax: 3 }));
  assert.equal(held.length, 3);
  assert.match(refusal.message, /tenant already has 3 executions running/);
  const key = fill(gates, slot("b", { keyId: "k", keyMax: 1 }));
  assert.equal(key.held.length, 1);
  assert.match(key.refusal.message, /API key already has 1 executions/);
});

test("a key's cap is per key; a tenant's cap is over all of its keys", () => {
  const gates = new ExecutionGates({ global: 100 });
  const k1 = fill(gates, slot("t", { keyId: "k1", keyMax: 2, tenantMax: 3 }));
  assert.equal(k1.held.length, 2);
  const k2 = fill(gates, slot("t", { keyId: "k2", keyMax: 2, tenantMax: 3 }));
  assert.equal(k2.held.length, 1, "the tenant's cap of 3 is over both keys");
  assert.equal(k2.refusal.message.includes("tenant"), true);
});

test("in a cluster, the runs other nodes hold count against the key's and the tenant's caps, not the fair share", () => {
  const gates = new ExecutionGates({ global: 100 });
  // What two other nodes published (one unreadable record, one node with nothing running).
  const elsewhere = sumCounts([
    JSON.stringify({ tenants: { t: 2, u: 5 }, keys: { k1: 1, k2: 1 } }),
    JSON.stringify({ tenants: { t: 1 }, keys: { k1: 1 } }),
    "not json",
    null,
  ]);
  assert.deepEqual(elsewhere, { tenants: { t: 3, u: 5 }, keys: { k1: 2, k2: 1 } });
  gates.countElsewhere(elsewhere);
  const k1 = fill(gates, slot("t", { keyId: "k1", keyMax: 3, tenantMax: 10 }));
  assert.equal(k1.held.length, 1, "the key holds 2 of its 3 on other nodes");
  assert.equal(k1.refusal.message.includes("API key"), true);
  const k3 = fill(gates, slot("t", { keyId: "k3", keyMax: 0, tenantMax: 5 }));
  assert.equal(k3.held.length, 1, "the tenant holds 3 elsewhere and 1 here of its 5");
  assert.equal(k3.refusal.message.includes("tenant"), true);
  assert.deepEqual(gates.inFlightCounts(), { tenants: { t: 2 }, keys: { k1: 1, k3: 1 } }, "only this node's own are published");
  // The other nodes' runs end: the caps are this node's alone again.
  gates.countElsewhere(sumCounts([]));
  assert.equal(fill(gates, slot("t", { keyId: "k1", keyMax: 3, tenantMax: 10 })).held.length, 2);
});

test("the machine's cap is a 503 at_capacity when the caller is within its share", () => {
  const gates = new ExecutionGates({ global: 8, shareFloor: 2 });
  const tenants = ["a", "b", "c", "d", "e", "f", "g", "h"];
  const releases = tenants.map((t) => gates.acquire(slot(t)));
  assert.equal(gates.inFlight(), 8);
  const err = (() => {
    try {
      gates.acquire(slot("a"));
    } catch (e) {
      return e as ApiError;
    }
    throw new Error("not refused");
  })();
  assert.equal(err.code, "at_capacity");
  assert.equal(err.status, 503);
  assert.equal(err.retryAfterS, 1);
  for (const r of releases) r();
  assert.equal(gates.inFlight(), 0);
});

test("a release is given back once, however often it is called", () => {
  const gates = new ExecutionGates({ global: 4 });
  const release = gates.acquire(slot("a"));
  release();
  release();
  assert.equal(gates.inFlight(), 0);
  assert.equal(gates.tenantInFlight("a"), 0);
  assert.equal(gates.keyInFlight("key-a"), 0);
  const again = gates.acquire(slot("a"));
  assert.equal(gates.inFlight(), 1);
  again();
});

test("run() frees the slot when the task throws", async () => {
  const gates = new ExecutionGates({ global: 4 });
  await assert.rejects(
    gates.run(slot("a"), async () => {
      throw new Error("boom");
    }),
    /boom/,
  );
  assert.equal(gates.inFlight(), 0);
  assert.equal(await gates.run(slot("a"), async () => 7), 7);
});

test("every refusal is reported with its reason", () => {
  const reasons: RejectReason[] = [];
  const gates = new ExecutionGates({ global: 4, shareFloor: 1, onReject: (r) => reasons.push(r) });
  gates.acquire(slot("a", { keyMax: 1 }));
  assert.throws(() => gates.acquire(slot("a", { keyMax: 1 })));
  assert.throws(() => gates.acquire(slot("a", { keyId: "other", tenantMax: 1 })));
  gates.acquire(slot("b"));
  // 2 of 4 held: half full. a's share with a and b running: max(1, 4/3) = 1, and a holds 1.
  assert.throws(() => gates.acquire(slot("a", { keyId: "third" })));
  gates.acquire(slot("c"));
  gates.acquire(slot("d"));
  assert.throws(() => gates.acquire(slot("e")));
  assert.deepEqual(reasons, ["concurrent_runs", "tenant_concurrent_runs", "fair_share", "at_capacity"]);
});

test("fair share: an equal split among the running tenants of all but a newcomers' quarter, never under the floor", () => {
  assert.equal(fairShare(64, 1, 4), 48);
  assert.equal(fairShare(64, 2, 4), 24);
  assert.equal(fairShare(64, 3, 4), 16);
  assert.equal(fairShare(64, 100, 4), 4);
  assert.equal(fairShare(8, 1, 2), 6);
  assert.equal(defaultShareFloor(64), 4);
  assert.equal(defaultShareFloor(8), 2);
});

test("the share shrinks as tenants arrive and grows back as they leave", () => {
  const gates = new ExecutionGates({ global: 64 });
  const a = fill(gates, slot("a"));
  assert.equal(a.held.length, 48);
  const b = gates.acquire(slot("b"));
  assert.equal(gates.shareOf("a"), 24);
  // a holds more than its share now: refused until it is back under it.
  assert.throws(() => gates.acquire(slot("a")), /fair share/);
  b();
  for (const r of a.held.slice(0, 2)) r();
  // Alone again (46 of 64): its share is the lone one again, and it may take slots.
  const more = gates.acquire(slot("a"));
  assert.equal(gates.tenantInFlight("a"), 47);
  more();
});

test("a gate of 0 is no machine cap", () => {
  const gates = new ExecutionGates({ global: 0 });
  assert.equal(fill(gates, slot("a", { tenantMax: 100 })).held.length, 100);
});
