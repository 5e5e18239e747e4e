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
import { AdminKeys, KeyDirectory } from "../../src/store/key-directory.js";
import { SqliteAdminKeyStore, SqliteKeyStore } from "../../src/store/keys.js";

let dir: string;
let db: Db;

const adminKeys = (envKey?: string) => new AdminKeys(new SqliteAdminKeyStore(db), envKey);
const keyDirectory = () => new KeyDirectory(new SqliteKeyStore(db));

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-keys-"));
  db = openDb(dir);
});

afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("without an environment key: one is generated once, stored as its hash, and verifies", async () => {
  const admin = adminKeys();
  assert.equal(await admin.source(), "none");
  const key = await admin.ensure();
  assert.match(key ?? "", /^abxadm_[A-Za-z0-9_-]{40,}$/);
  assert.equal(await admin.source(), "stored");
  assert.equal(await admin.ensure(), undefined, "not again");
  assert.equal(await adminKeys().ensure(), undefined, "not at the next start either");
  assert.ok(await admin.verify(key as string));
  assert.ok(!(await admin.verify(`${key}x`)));
  assert.ok(!(await admin.verify("")));
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

test("rotation replaces the stored key at once", async () => {
  const admin = adminKeys();
  const first = (await admin.ensure()) as string;
  const second = await adminKeys().rotate();
  assert.notEqual(first, second);
  assert.ok(!(await admin.verify(first)));
  assert.ok(await admin.verify(second));
});

test("an environment key is the only admin key: nothing is generated, a stored one does not count", async () => {
  const stored = await adminKeys().rotate();
  const admin = adminKeys("my-operator-key");
  assert.equal(await admin.source(), "environment");
  assert.equal(await admin.ensure(), undefined);
  assert.ok(await admin.verify("my-operator-key"));
  assert.ok(!(await admin.verify(stored)));
});

test("the admin key is no tenant key, and a tenant key no admin key", async () => {
  const admin = adminKeys();
  const adminKey = (await admin.ensure()) as string;
  const keys = keyDirectory();
  const { key } = await keys.create({ name: "t" });
  assert.equal(await keys.verify(adminKey), undefined);
  assert.ok(!(await admin.verify(key)));
  await keys.close();
});

test("last use: kept in memory on each request, written on flush, once per key", async () => {
  const keys = keyDirectory();
  const { key, record } = await keys.create({ name: "used", tenantId: "t1" });
  assert.equal((await keys.get(record.id))?.lastUsedAt, null);
  const before = Date.now();
  for (let i = 0; i < 100; i++) assert.ok(await keys.verify(key));
  const seen = (await keys.get(record.id))?.lastUsedAt;
  assert.ok(seen && Date.parse(seen) >= before - 1, "visible before it is written");
  const raw = () =>
    (db.prepare("SELECT last_used_at FROM api_keys WHERE id = ?").get(record.id) as { last_used_at: string | null }).last_used_at;
  assert.equal(raw(), null, "nothing written on the request path");
  await keys.flush();
  assert.equal(raw(), seen);
  await keys.close();
  // A new store (a restart) reads it back.
  assert.equal((await keyDirectory().get(record.id))?.lastUsedAt, seen);
});

test("revoke by id or prefix; a revoked key no longer verifies; get still shows it", async () => {
  const keys = keyDirectory();
  const a = await keys.create({ name: "a" });
  const b = await keys.create({ name: "b" });
  assert.ok(await keys.revoke(a.record.id));
  assert.ok(!(await keys.revoke(a.record.id)), "only once");
  assert.ok(await keys.revoke(b.record.prefix));
  assert.equal(await keys.verify(a.key), undefined);
  assert.equal(await keys.verify(b.key), undefined);
  assert.ok((await keys.get(a.record.id))?.revokedAt);
  await keys.close();
});

test("connection counter: an address gets its share, slots come back on release", async () => {
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
