// The contract of TenantStore: what any implementation must do.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NO_QUOTAS, type TenantStore } from "../../src/store/tenants.js";

export function describeTenantStoreContract(name: string, makeStore: () => Promise<TenantStore>): void {
  describe(`TenantStore contract: ${name}`, () => {
    test("not found: a tenant never configured has no record", async () => {
      const store = await makeStore();
      assert.equal(await store.get("nobody"), undefined);
      assert.deepEqual(await store.list(), []);
    });

    test("put creates with the given quotas, the rest unset; get and list read it back", async () => {
      const store = await makeStore();
      const made = await store.put("t1", { maxSandboxes: 3, vectorStorageMb: 7 }, "2026-01-01T00:00:00.000Z");
      assert.deepEqual(made, {
        id: "t1",
        quotas: { ...NO_QUOTAS, maxSandboxes: 3, vectorStorageMb: 7 },
        suspendedAt: null,
        createdAt: "2026-01-01T00:00:00.000Z",
        updatedAt: "2026-01-01T00:00:00.000Z",
      });
      assert.deepEqual(await store.get("t1"), made);
      assert.deepEqual(await store.list(), [made]);
    });

    test("put merges: quotas not given are kept, null clears one; created_at stays, updated_at moves", async () => {
      const store = await makeStore();
      await store.put("t1", { maxSandboxes: 3, memoryMb: 512 }, "2026-01-01T00:00:00.000Z");
      const next = await store.put("t1", { memoryMb: null, storageMb: 100 }, "2026-01-02T00:00:00.000Z");
      assert.deepEqual(next.quotas, { ...NO_QUOTAS, maxSandboxes: 3, storageMb: 100 });
      assert.equal(next.createdAt, "2026-01-01T00:00:00.000Z");
      assert.equal(next.updatedAt, "2026-01-02T00:00:00.000Z");
      assert.deepEqual(await store.get("t1"), next);
    });

    test("concurrent puts of different quotas both stay (each put is one atomic merge)", async () => {
      const store = await makeStore();
      await Promise.all([
        store.put("t1", { maxSandboxes: 1 }, "2026-01-01T00:00:00.000Z"),
        store.put("t1", { maxProcesses: 2 }, "2026-01-01T00:00:00.000Z"),
        store.put("t1", { maxVectors: 3 }, "2026-01-01T00:00:00.000Z"),
      ]);
      assert.deepEqual((await store.get("t1"))?.quotas, { ...NO_QUOTAS, maxSandboxes: 1, maxProcesses: 2, maxVectors: 3 });
    });

    test("suspend: creates the record if need be, keeps the first time, quotas untouched; resume clears it", async () => {
      const store = await makeStore();
      const first = await store.setSuspended("t1", true, "2026-01-01T00:00:00.000Z");
      assert.equal(first.suspendedAt, "2026-01-01T00:00:00.000Z");
      assert.deepEqual(first.quotas, NO_QUOTAS);
      await store.put("t1", { maxSandboxes: 2 }, "2026-01-02T00:00:00.000Z");
      const again = await store.setSuspended("t1", true, "2026-01-03T00:00:00.000Z");
      assert.equal(again.suspendedAt, "2026-01-01T00:00:00.000Z", "suspending a suspended tenant changes nothing");
      assert.equal(again.quotas.maxSandboxes, 2);
      assert.equal((await store.get("t1"))?.suspendedAt, "2026-01-01T00:00:00.000Z");
      const back = await store.setSuspended("t1", false, "2026-01-04T00:00:00.000Z");
      assert.equal(back.suspendedAt, null);
      assert.equal((await store.get("t1"))?.suspendedAt, null);
      assert.equal((await store.get("t1"))?.quotas.maxSandboxes, 2);
    });

    test("list is ordered by id", async () => {
      const store = await makeStore();
      for (const id of ["c", "a", "b"]) await store.put(id, { maxSandboxes: 1 }, "2026-01-01T00:00:00.000Z");
      assert.deepEqual(
        (await store.list()).map((t) => t.id),
        ["a", "b", "c"],
      );
    });
  });
}
