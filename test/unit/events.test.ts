// Unit: the deadline queue (order, moves, deletes, one timer), webhook backoff and signatures,
// which destinations count as private, webhook URL rules, the lifecycle bus, end statuses, and the
// stores' bounds (events per sandbox, retention, delivery history).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { LifecycleBus } from "../../src/events/bus.js";
import { DestinationError, isPrivateAddress, parseWebhookUrl } from "../../src/events/destination.js";
import { backoffMs, signature } from "../../src/events/webhooks.js";
import { SqliteWebhookStore } from "../../src/events/store/webhooks.js";
import { DeadlineQueue } from "../../src/sandbox/deadlines.js";
import { openDb } from "../../src/store/db.js";
import { SqliteEventStore } from "../../src/events/store/events.js";
import { endStatus, type SandboxRecord, SqliteSandboxStore } from "../../src/sandbox/store/sandboxes.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("deadline queue: due ids come in deadline order; moved and deleted ones follow their latest state", async () => {
  const fired: string[] = [];
  const q = new DeadlineQueue((id) => fired.push(id));
  const t0 = Date.now();
  q.set("c", t0 + 90);
  q.set("a", t0 + 30);
  q.set("b", t0 + 60);
  q.set("gone", t0 + 40);
  q.delete("gone");
  q.set("moved", t0 + 20);
  q.set("moved", t0 + 120); // later: not at the first time
  q.set("late", t0 + 10_000);
  await sleep(200);
  assert.deepEqual(fired, ["a", "b", "c", "moved"]);
  assert.equal(q.size, 1);
  q.set("late", Date.now() + 10); // earlier: re-arms the timer
  await sleep(60);
  assert.deepEqual(fired.at(-1), "late");
  assert.equal(q.size, 0);
  q.close();
});

test("deadline queue: no id fires before its deadline; a past deadline fires at once", async () => {
  const seen = new Map<string, number>();
  const q = new DeadlineQueue((id) => seen.set(id, Date.now()));
  const t0 = Date.now();
  const at = new Map<string, number>();
  for (let i = 0; i < 200; i++) {
    const when = t0 + ((i * 37) % 150);
    at.set(`s${i}`, when);
    q.set(`s${i}`, when);
  }
  q.set("past", t0 - 1000);
  await sleep(300);
  assert.equal(seen.size, 201);
  for (const [id, when] of at) assert.ok((seen.get(id) ?? 0) >= when, `${id} fired early`);
  // Many moves leave no unbounded heap behind (stale entries are rebuilt away).
  for (let i = 0; i < 10_000; i++) q.set("x", Date.now() + 60_000 + i);
  assert.ok((q as unknown as { heap: unknown[] }).heap.length < 200);
  q.close();
});

test("backoff doubles up to its cap, with bounded jitter", () => {
  const mid = () => 0.5;
  assert.deepEqual(
    [1, 2, 3, 4, 5].map((n) => backoffMs(n, 1000, 10_000, mid)),
    [1000, 2000, 4000, 8000, 10_000],
  );
  for (let i = 0; i < 100; i++) {
    const d = backoffMs(3, 1000, 60_000);
    assert.ok(d >= 3200 && d <= 4800, String(d));
  }
  // The default schedule (5 s base, 10 min cap) keeps retrying past 10 minutes within ~10 attempts.
  let total = 0;
  let n = 0;
  while (total < 10 * 60_000) total += backoffMs(++n, 5000, 600_000, mid);
  assert.ok(n <= 9, String(n));
});

test("signature: v1=<hex HMAC-SHA256 of id.timestamp.body>; the timestamp and the id are covered", () => {
  const body = '{"id":"dlv_1","type":"ended"}';
  const secret = "k".repeat(16);
  const sig = signature(secret, "dlv_1", 1_800_000_000, body);
  assert.equal(sig, `v1=${crypto.createHmac("sha256", secret).update(`dlv_1.1800000000.${body}`).digest("hex")}`);
  assert.notEqual(sig, signature(secret, "dlv_1", 1_800_000_000, `${body} `), "body");
  assert.notEqual(sig, signature(secret, "dlv_1", 1_800_000_001, body), "timestamp");
  assert.notEqual(sig, signature(secret, "dlv_2", 1_800_000_000, body), "delivery id");
});

test("private destinations", () => {
  for (const a of [
    "127.0.0.1",
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "224.0.0.1",
    "not-an-ip",
  ]) {
    assert.equal(isPrivateAddress(a), true, a);
  }
  for (const a of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "203.0.113.5", "2001:4860:4860::8888", "::ffff:8.8.8.8"]) {
    assert.equal(isPrivateAddress(a), false, a);
  }
});

test("webhook URLs: http(s), a host, no credentials, bounded length", () => {
  assert.equal(parseWebhookUrl("https://hooks.example.com/x?y=1").hostname, "hooks.example.com");
  for (const bad of [
    "nope",
    "ftp://example.com/",
    "file:///etc/passwd",
    "http://u:p@example.com/",
    `https://example.com/${"a".repeat(2048)}`,
  ]) {
    assert.throws(() => parseWebhookUrl(bad), DestinationError, bad);
  }
});

test("lifecycle bus: listeners get stamped events; a failing listener breaks neither the emitter nor the others", () => {
  const bus = new LifecycleBus();
  const got: string[] = [];
  const errors: unknown[] = [];
  bus.onListenerError((err) => errors.push(err));
  bus.on(() => {
    throw new Error("boom");
  });
  const off = bus.on((e) => got.push(`${e.type}@${typeof e.at}`));
  bus.emit({ type: "ended", sandboxId: "s", tenantId: "t", reason: "oom" });
  off();
  bus.emit({ type: "created", sandboxId: "s", tenantId: "t" });
  assert.deepEqual(got, ["ended@string"]);
  assert.equal(errors.length, 2);
});

test("end reasons map to the public statuses", () => {
  assert.equal(endStatus("killed"), "terminated");
  assert.equal(endStatus("host_restart"), "terminated");
  assert.equal(endStatus("timed_out"), "timed_out");
  assert.equal(endStatus("oom"), "failed");
  assert.equal(endStatus("error"), "failed");
});

function tempDb() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-events-unit-"));
  const db = openDb(dir);
  const done = () => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { db, done };
}

const record = (id: string, endedAt: string | null): SandboxRecord => ({
  id,
  tenantId: "t1",
  template: "python-base-v1",
  status: endedAt ? "terminated" : "running",
  metadata: {},
  envVars: {},
  cpuCount: 1,
  memoryMb: 1024,
  hostUid: 1,
  startedAt: "2026-01-01T00:00:00.000Z",
  timeoutAt: "2026-01-01T00:05:00.000Z",
  endedAt,
  nodeId: "n1",
});

test("event store: the newest N per sandbox, tenant-scoped, pruned after the retention of ended sandboxes", async () => {
  const { db, done } = tempDb();
  try {
    const sandboxes = new SqliteSandboxStore(db, "n1");
    sandboxes.insert(record("old", "2026-01-01T00:01:00.000Z"));
    sandboxes.insert(record("live", null));
    const store = new SqliteEventStore(db, 10);
    for (let i = 0; i < 15; i++)
      await store.add({
        type: "timeout_extended",
        sandboxId: "live",
        tenantId: "t1",
        at: `2026-01-01T00:00:${String(i).padStart(2, "0")}.000Z`,
        detail: { i },
      });
    await store.add({ type: "ended", sandboxId: "old", tenantId: "t1", at: "2026-01-01T00:01:00.000Z", reason: "killed", by: "operator" });
    const live = await store.list("t1", "live");
    assert.equal(live.length, 10);
    assert.deepEqual(
      live.map((e) => e.detail.i),
      [5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
    );
    assert.deepEqual(await store.list("t2", "live"), []);
    assert.deepEqual(await store.list("t1", "old"), [
      { type: "ended", at: "2026-01-01T00:01:00.000Z", reason: "killed", detail: { by: "operator" } },
    ]);
    assert.equal(await store.prune("2026-01-01T00:00:30.000Z"), 0);
    assert.equal(await store.prune("2026-01-02T00:00:00.000Z"), 1);
    assert.deepEqual(await store.list("t1", "old"), []);
    assert.equal((await store.list("t1", "live")).length, 10);
  } finally {
    done();
  }
});

test("webhook store: tenant-scoped webhooks, due deliveries skip busy webhooks, history trimmed, delete drops deliveries", async () => {
  const { db, done } = tempDb();
  try {
    const store = new SqliteWebhookStore(db);
    const a = await store.addHook("t1", "https://a.example/", ["ended"], "s".repeat(16), 10);
    assert.ok(a);
    const b = await store.addHook("t1", "https://b.example/", ["created"], "s".repeat(16), 10);
    assert.ok(b);
    assert.equal(await store.hook("t2", a.id), undefined);
    assert.equal(await store.countHooks("t1"), 2);
    const refusal = { at: "2026-01-01T00:00:00.000Z", status_code: null, error: "full", duration_ms: 0 };
    const add = async (id: string, hook: string, at: number, state: "pending" | "delivered" = "pending") => {
      await store.enqueue({ id, webhookId: hook, tenantId: "t1", event: "ended", payload: "{}", createdAt: at }, 100, refusal);
      if (state === "delivered") {
        const [d] = (await store.deliveries(hook, 100)).filter((x) => x.id === id);
        assert.ok(d);
        await store.save({ ...d, state });
      }
    };
    for (let i = 0; i < 5; i++) await add(`a${i}`, a.id, 100 + i);
    await add("b0", b.id, 200);
    assert.deepEqual(
      (await store.due(1000, 3)).map((d) => d.id),
      ["a0", "a1", "a2"],
    );
    assert.deepEqual(
      (await store.due(1000, 3, [a.id])).map((d) => d.id),
      ["b0"],
    );
    assert.deepEqual(await store.due(150, 10, [a.id]), []);
    assert.equal(await store.nextDue(), 100);
    for (let i = 0; i < 6; i++) await add(`done${i}`, b.id, 300 + i, "delivered");
    await store.trimHistory(2);
    assert.deepEqual(
      (await store.deliveries(b.id, 100)).map((d) => d.id),
      ["done5", "done4", "b0"],
    );
    await store.deleteHook(a.id);
    assert.equal(await store.pendingCount(a.id), 0);
    assert.deepEqual(
      (await store.due(1000, 10)).map((d) => d.id),
      ["b0"],
    );
  } finally {
    done();
  }
});
