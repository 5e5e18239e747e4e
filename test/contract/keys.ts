// The contract of KeyStore and AdminKeyStore: what any implementation must do (run against each one
// from test/unit/store-contracts.test.ts).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type AdminKeyStore, type ApiKeyRecord, hashKey, type KeyStore } from "../../src/store/keys.js";

const record = (id: string, over: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
  id,
  tenantId: "t1",
  name: `key ${id}`,
  prefix: `abx_${id}`.slice(0, 10),
  createdAt: "2026-01-01T00:00:00.000Z",
  revokedAt: null,
  rateLimitPerMinute: null,
  maxConcurrentRuns: null,
  lastUsedAt: null,
  ...over,
});

export function describeKeyStoreContract(name: string, makeStore: () => Promise<KeyStore>): void {
  describe(`KeyStore contract: ${name}`, () => {
    test("insert, then find by hash, get by id, list oldest first", async () => {
      const store = await makeStore();
      const b = record("b", { createdAt: "2026-01-02T00:00:00.000Z", rateLimitPerMinute: 5, maxConcurrentRuns: 2 });
      const a = record("a", { tenantId: "t2" });
      await store.insert(b, hashKey("key-b"));
      await store.insert(a, hashKey("key-a"));
      assert.deepEqual(await store.findActiveByHash(hashKey("key-b")), b);
      assert.deepEqual(await store.get("a"), a);
      assert.deepEqual(
        (await store.list()).map((k) => k.id),
        ["a", "b"],
      );
    });

    test("not found: an unknown hash or id", async () => {
      const store = await makeStore();
      assert.equal(await store.findActiveByHash(hashKey("nothing")), undefined);
      assert.equal(await store.get("nothing"), undefined);
      assert.equal(await store.isActive("nothing"), false);
      assert.equal(await store.revoke("nothing", "2026-01-01T00:00:00.000Z"), false);
      assert.deepEqual(await store.list(), []);
    });

    test("duplicates: the same id or the same hash is refused", async () => {
      const store = await makeStore();
      await store.insert(record("a"), hashKey("k"));
      await assert.rejects(store.insert(record("a"), hashKey("other")));
      await assert.rejects(store.insert(record("b"), hashKey("k")));
      assert.equal((await store.list()).length, 1);
    });

    test("revoke by id or by prefix, once; a revoked key is not found by hash but is still listed", async () => {
      const store = await makeStore();
      await store.insert(record("a", { prefix: "abx_aaaaaa" }), hashKey("ka"));
      await store.insert(record("b", { prefix: "abx_bbbbbb" }), hashKey("kb"));
      assert.equal(await store.isActive("a"), true);
      assert.equal(await store.revoke("a", "2026-02-01T00:00:00.000Z"), true);
      assert.equal(await store.revoke("a", "2026-02-02T00:00:00.000Z"), false, "only once");
      assert.equal(await store.revoke("abx_bbbbbb", "2026-02-03T00:00:00.000Z"), true);
      assert.equal(await store.isActive("a"), false);
      assert.equal(await store.findActiveByHash(hashKey("ka")), undefined);
      assert.equal(await store.findActiveByHash(hashKey("kb")), undefined);
      assert.equal((await store.get("a"))?.revokedAt, "2026-02-01T00:00:00.000Z");
      assert.equal((await store.list()).length, 2);
    });

    test("touch writes last-use times of many keys at once; unknown ids are ignored", async () => {
      const store = await makeStore();
      await store.insert(record("a"), hashKey("ka"));
      await store.insert(record("b"), hashKey("kb"));
      await store.touch([
        ["a", "2026-03-01T00:00:00.000Z"],
        ["b", "2026-03-02T00:00:00.000Z"],
        ["ghost", "2026-03-03T00:00:00.000Z"],
      ]);
      await store.touch([]);
      assert.equal((await store.get("a"))?.lastUsedAt, "2026-03-01T00:00:00.000Z");
      assert.equal((await store.get("b"))?.lastUsedAt, "2026-03-02T00:00:00.000Z");
    });
  });
}

export function describeAdminKeyStoreContract(name: string, makeStore: () => Promise<AdminKeyStore>): void {
  describe(`AdminKeyStore contract: ${name}`, () => {
    test("empty at first; replace stores one hash; a second replace leaves only the new one", async () => {
      const store = await makeStore();
      assert.deepEqual(await store.hashes(), []);
      await store.replace("1", "abxadm_one", hashKey("one"), "2026-01-01T00:00:00.000Z");
      assert.deepEqual(await store.hashes(), [hashKey("one")]);
      await store.replace("2", "abxadm_two", hashKey("two"), "2026-01-02T00:00:00.000Z");
      assert.deepEqual(await store.hashes(), [hashKey("two")]);
    });
  });
}
