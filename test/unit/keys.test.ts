// The key stores on a real SQLite database in a temporary directory (no service): the admin key
// from the environment or generated once and stored hashed, rotation, last-use times written in
// batches, and the per-address connection counter.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { ConnectionCounter } from "../../src/api/connections.js";
import { type Db, openDb } from "../../src/store/db.js";
import { AdminKeys, SqliteKeyStore } from "../../src/store/keys.js";

let dir: string;
let db: Db;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-keys-"));
  db = openDb(dir);
});

afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("without an environment key: one is generated once, stored as its hash, and verifies", () => {
  const admin = new AdminKeys(db);
  assert.equal(admin.source, "none");
  const key = admin.ensure();
  assert.match(key ?? "", /^abxadm_[A-Za-z0-9_-]{40,}$/);
  assert.equal(admin.source, "stored");
  assert.equal(admin.ensure(), undefined, "not again");
  assert.equal(new AdminKeys(db).ensure(), undefined, "not at the next start either");
  assert.ok(admin.verify(key as string));
  assert.ok(!admin.verify(`${key}x`));
  assert.ok(!admin.verify(""));
  const stored = db.prepare("SELECT hash FROM admin_keys").all() as { hash: string }[];
  assert.deepEqual(
    stored.map((r) => r.hash),
    [
      crypto
        .createHash("sha256")
        .update(key as string)
        .digest("hex"),
    ],
  );
});

test("rotation replaces the stored key at once", () => {
  const admin = new AdminKeys(db);
  const first = admin.ensure() as string;
  const second = new AdminKeys(db).rotate();
  assert.notEqual(first, second);
  assert.ok(!admin.verify(first));
  assert.ok(admin.verify(second));
});

test("an environment key is the only admin key: nothing is generated, a stored one does not count", () => {
  const stored = new AdminKeys(db).rotate();
  const admin = new AdminKeys(db, "my-operator-key");
  assert.equal(admin.source, "environment");
  assert.equal(admin.ensure(), undefined);
  assert.ok(admin.verify("my-operator-key"));
  assert.ok(!admin.verify(stored));
});

test("the admin key is no tenant key, and a tenant key no admin key", () => {
  const admin = new AdminKeys(db);
  const adminKey = admin.ensure() as string;
  const keys = new SqliteKeyStore(db);
  const { key } = keys.create({ name: "t" });
  assert.equal(keys.verify(adminKey), undefined);
  assert.ok(!admin.verify(key));
  keys.close();
});

test("last use: kept in memory on each request, written on flush, once per key", () => {
  const keys = new SqliteKeyStore(db);
  const { key, record } = keys.create({ name: "used", tenantId: "t1" });
  assert.equal(keys.get(record.id)?.lastUsedAt, null);
  const before = Date.now();
  for (let i = 0; i < 100; i++) assert.ok(keys.verify(key));
  const seen = keys.get(record.id)?.lastUsedAt;
  assert.ok(seen && Date.parse(seen) >= before - 1, "visible before it is written");
  const raw = () =>
    (db.prepare("SELECT last_used_at FROM api_keys WHERE id = ?").get(record.id) as { last_used_at: string | null }).last_used_at;
  assert.equal(raw(), null, "nothing written on the request path");
  keys.flush();
  assert.equal(raw(), seen);
  keys.close();
  // A new store (a restart) reads it back.
  assert.equal(new SqliteKeyStore(db).get(record.id)?.lastUsedAt, seen);
});

test("revoke by id or prefix; a revoked key no longer verifies; get still shows it", () => {
  const keys = new SqliteKeyStore(db);
  const a = keys.create({ name: "a" });
  const b = keys.create({ name: "b" });
  assert.ok(keys.revoke(a.record.id));
  assert.ok(!keys.revoke(a.record.id), "only once");
  assert.ok(keys.revoke(b.record.prefix));
  assert.equal(keys.verify(a.key), undefined);
  assert.equal(keys.verify(b.key), undefined);
  assert.ok(keys.get(a.record.id)?.revokedAt);
  keys.close();
});

test("connection counter: an address gets its share, slots come back on release", () => {
  const counter = new ConnectionCounter(2);
  assert.ok(counter.admit("10.0.0.1"));
  assert.ok(counter.admit("10.0.0.1"));
  assert.ok(!counter.admit("10.0.0.1"));
  assert.ok(counter.admit("10.0.0.2"), "another address is unaffected");
  counter.release("10.0.0.1");
  assert.equal(counter.count("10.0.0.1"), 1);
  assert.ok(counter.admit("10.0.0.1"));
  assert.equal(counter.refused, 1);
  counter.release("10.0.0.2");
  assert.equal(counter.count("10.0.0.2"), 0);
});
