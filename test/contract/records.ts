// The contracts of SandboxStore, SnapshotStore and FileStore. Their SQLite implementations still
// answer synchronously (their callers have not moved to promises yet); every call here is awaited,
// so the same suite holds once they return promises, and for any other implementation.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { FileRecord, FileStore } from "../../src/files/store.js";
import type { SandboxRecord, SandboxStore } from "../../src/sandbox/store/sandboxes.js";
import type { SnapshotRecord, SnapshotStore } from "../../src/sandbox/store/snapshots.js";

/** A running record of node `n1`, tenant `t1`, with `over` on top. */
export const sandbox = (id: string, over: Partial<SandboxRecord> = {}): SandboxRecord => ({
  id,
  tenantId: "t1",
  template: "python-base-v1",
  status: "running",
  metadata: {},
  envVars: {},
  cpuCount: 1,
  memoryMb: 512,
  hostUid: 2000,
  startedAt: "2026-01-01T00:00:00.000Z",
  timeoutAt: "2026-01-01T00:05:00.000Z",
  endedAt: null,
  nodeId: "n1",
  ...over,
});

/** `makeStore` opens the store of node `n1`. */
export function describeSandboxStoreContract(name: string, makeStore: () => Promise<SandboxStore>): void {
  describe(`SandboxStore contract: ${name}`, () => {
    test("insert and get (metadata and env round-trip); not found; a duplicate id is refused", async () => {
      const store = await makeStore();
      const a = sandbox("a", { metadata: { team: "x", n: 2 }, envVars: { K: "v" } });
      await store.insert(a);
      assert.deepEqual(await store.get("a"), a);
      assert.equal(await store.get("nothing"), undefined);
      await assert.rejects(async () => store.insert(a));
    });

    test("list by tenant: newest first, paged, with the total; filtered by status and metadata", async () => {
      const store = await makeStore();
      for (let i = 0; i < 5; i++)
        await store.insert(
          sandbox(`s${i}`, {
            startedAt: `2026-01-01T00:00:0${i}.000Z`,
            metadata: { team: i % 2 ? "odd" : "even", n: i },
            status: i === 4 ? "terminated" : "running",
          }),
        );
      await store.insert(sandbox("other", { tenantId: "t2" }));
      const page = await store.listByTenant("t1", 2, 1);
      assert.deepEqual(
        page.sandboxes.map((s) => s.id),
        ["s3", "s2"],
      );
      assert.equal(page.total, 5);
      const odd = await store.listByTenant("t1", 10, 0, { metadata: [["team", "odd"]] });
      assert.deepEqual(
        odd.sandboxes.map((s) => s.id),
        ["s3", "s1"],
      );
      assert.equal(odd.total, 2);
      const byNumber = await store.listByTenant("t1", 10, 0, { metadata: [["n", "2"]] });
      assert.deepEqual(
        byNumber.sandboxes.map((s) => s.id),
        ["s2"],
      );
      const ended = await store.listByTenant("t1", 10, 0, { status: "terminated" });
      assert.deepEqual(
        ended.sandboxes.map((s) => s.id),
        ["s4"],
      );
      assert.deepEqual(await store.listByTenant("t3", 10, 0), { sandboxes: [], total: 0 });
    });

    test("running: listed and counted (per tenant too); timeout moves and end happen only while running", async () => {
      const store = await makeStore();
      await store.insert(sandbox("a"));
      await store.insert(sandbox("b", { tenantId: "t2" }));
      assert.equal(await store.countRunning(), 2);
      assert.equal(await store.countRunning("t1"), 1);
      await store.setTimeout("a", "2026-01-01T01:00:00.000Z");
      assert.equal((await store.get("a"))?.timeoutAt, "2026-01-01T01:00:00.000Z");
      await store.end("a", "timed_out", "2026-01-01T01:00:00.000Z");
      await store.end("a", "terminated", "2026-01-01T02:00:00.000Z");
      await store.setTimeout("a", "2026-01-01T03:00:00.000Z");
      const a = await store.get("a");
      assert.deepEqual(a && [a.status, a.endedAt, a.timeoutAt], ["timed_out", "2026-01-01T01:00:00.000Z", "2026-01-01T01:00:00.000Z"]);
      assert.deepEqual(
        (await store.listRunning()).map((s) => s.id),
        ["b"],
      );
      assert.equal(await store.countRunning("t1"), 0);
    });

    test("owner node: kept on the record; listRunning is this node's, countRunning every node's", async () => {
      const store = await makeStore();
      await store.insert(sandbox("mine"));
      await store.insert(sandbox("theirs", { nodeId: "n2" }));
      assert.equal((await store.get("theirs"))?.nodeId, "n2");
      assert.deepEqual(
        (await store.listRunning()).map((s) => s.id),
        ["mine"],
      );
      assert.equal(await store.countRunning(), 2);
    });

    test("takeOver: a lost node's running record becomes this node's with a new host uid, once", async () => {
      const store = await makeStore();
      await store.insert(sandbox("lost", { nodeId: "n2" }));
      await store.insert(sandbox("done", { nodeId: "n2" }));
      await store.end("done", "terminated", "2026-01-01T01:00:00.000Z");
      assert.equal(await store.takeOver("lost", "n3", 4242), false, "not n3's");
      assert.equal(await store.takeOver("done", "n2", 4242), false, "ended");
      assert.equal(await store.takeOver("lost", "n2", 4242), true);
      const moved = await store.get("lost");
      assert.deepEqual(moved && [moved.nodeId, moved.hostUid, moved.status], ["n1", 4242, "running"]);
      assert.equal(await store.takeOver("lost", "n2", 4343), false, "taken already");
      assert.deepEqual(
        (await store.listRunning()).map((s) => s.id),
        ["lost"],
      );
    });

    test("paused: a list shows it (filtered by running it is still there) until it runs again or ends; it still counts as running", async () => {
      const store = await makeStore();
      await store.insert(sandbox("a"));
      const listed = async (filter?: { status: "running" | "terminated" }) =>
        (await store.listByTenant("t1", 10, 0, filter)).sandboxes.map((s) => [s.id, s.status]);
      await store.setPaused("a", true);
      assert.deepEqual(await listed(), [["a", "paused"]]);
      assert.deepEqual(await listed({ status: "running" }), [["a", "paused"]]);
      assert.equal(await store.countRunning(), 1);
      assert.deepEqual(
        (await store.listRunning()).map((s) => [s.id, s.status]),
        [["a", "running"]],
      );
      await store.setPaused("a", false);
      assert.deepEqual(await listed(), [["a", "running"]]);
      await store.setPaused("a", true);
      await store.end("a", "terminated", "2026-01-01T01:00:00.000Z");
      await store.setPaused("a", true);
      assert.deepEqual(await listed(), [["a", "terminated"]]);
    });

    test("insertWithin: inserted only while the tenant's running sandboxes on every node are fewer than the quota", async () => {
      const store = await makeStore();
      assert.equal(await store.insertWithin(sandbox("q1"), 2), true);
      assert.equal(await store.insertWithin(sandbox("q2", { nodeId: "n2" }), 2), true);
      assert.equal(await store.insertWithin(sandbox("q3"), 2), false);
      assert.equal(await store.get("q3"), undefined);
      assert.equal(await store.insertWithin(sandbox("other", { tenantId: "t2" }), 2), true);
      await store.end("q1", "terminated", "2026-01-01T01:00:00.000Z");
      assert.equal(await store.insertWithin(sandbox("q3"), 2), true);
      assert.equal(await store.countRunning("t1"), 2);
      // At once: exactly as many as the quota leaves.
      const made = await Promise.all(["c1", "c2", "c3", "c4", "c5"].map((id) => store.insertWithin(sandbox(id, { tenantId: "t3" }), 3)));
      assert.equal(made.filter(Boolean).length, 3);
      assert.equal(await store.countRunning("t3"), 3);
    });
  });
}

const snapshot = (id: string, over: Partial<SnapshotRecord> = {}): SnapshotRecord => ({
  id,
  tenantId: "t1",
  sandboxId: "s1",
  kind: "manual",
  createdAt: "2026-01-01T00:00:00.000Z",
  sizeBytes: 100,
  files: 2,
  sha256: "abc",
  settings: { template: "python-base-v1", envVars: { A: "1" }, metadata: { m: 1 }, extra: { network: { allow_out: [] } } },
  ...over,
});

export function describeSnapshotStoreContract(name: string, makeStore: () => Promise<SnapshotStore>): void {
  describe(`SnapshotStore contract: ${name}`, () => {
    test("insert, get, list newest first with total, count and bytes per tenant, delete", async () => {
      const store = await makeStore();
      assert.equal(await store.get("nothing"), undefined);
      assert.equal(await store.bytesByTenant("t1"), 0);
      for (let i = 0; i < 3; i++) await store.insert(snapshot(`p${i}`, { createdAt: `2026-01-01T00:00:0${i}.000Z`, sizeBytes: 10 + i }));
      await store.insert(snapshot("q", { tenantId: "t2" }));
      assert.deepEqual(await store.get("p1"), snapshot("p1", { createdAt: "2026-01-01T00:00:01.000Z", sizeBytes: 11 }));
      const page = await store.listByTenant("t1", 2, 0);
      assert.deepEqual(
        page.snapshots.map((s) => s.id),
        ["p2", "p1"],
      );
      assert.equal(page.total, 3);
      assert.equal(await store.countByTenant("t1"), 3);
      assert.equal(await store.bytesByTenant("t1"), 33);
      assert.deepEqual(
        await store.bytesPerTenant(),
        new Map([
          ["t1", 33],
          ["t2", 100],
        ]),
      );
      assert.equal(await store.delete("p0"), true);
      assert.equal(await store.delete("nothing"), false);
      assert.equal(await store.countByTenant("t1"), 2);
      await assert.rejects(async () => store.insert(snapshot("p1")), "a duplicate id is refused");
    });

    test("hibernated: the newest hibernate snapshot of the sandbox only", async () => {
      const store = await makeStore();
      await store.insert(snapshot("m", { kind: "manual", createdAt: "2026-01-01T00:00:09.000Z" }));
      assert.equal(await store.hibernated("s1"), undefined);
      await store.insert(snapshot("h1", { kind: "hibernate", createdAt: "2026-01-01T00:00:01.000Z" }));
      await store.insert(snapshot("h2", { kind: "hibernate", createdAt: "2026-01-01T00:00:02.000Z" }));
      assert.equal((await store.hibernated("s1"))?.id, "h2");
      assert.equal(await store.hibernated("s2"), undefined);
    });

    test("on_timeout per sandbox: set, replace, forget", async () => {
      const store = await makeStore();
      assert.equal(await store.onTimeout("s1"), undefined);
      await store.setOnTimeout("s1", "snapshot");
      await store.setOnTimeout("s1", "pause");
      assert.equal(await store.onTimeout("s1"), "pause");
      await store.setOnTimeout("s1", null);
      assert.equal(await store.onTimeout("s1"), undefined);
    });
  });
}

const file = (id: string, over: Partial<FileRecord> = {}): FileRecord => ({
  id,
  tenantId: "t1",
  filename: `${id}.txt`,
  purpose: "assistants",
  bytes: 10,
  sha256: "abc",
  storageKey: `key/${id}`,
  createdAt: 1000,
  expiresAt: null,
  ...over,
});

export function describeFileStoreContract(name: string, makeStore: () => Promise<FileStore>): void {
  describe(`FileStore contract: ${name}`, () => {
    test("insert and get: only the tenant's own, live file; a duplicate id is refused", async () => {
      const store = await makeStore();
      await store.insert(file("a"));
      await store.insert(file("gone", { expiresAt: 2000 }));
      assert.deepEqual(await store.get("t1", "a"), file("a"));
      assert.equal(await store.get("t2", "a"), undefined);
      assert.equal(await store.get("t1", "gone", 3000), undefined, "expired");
      assert.equal((await store.get("t1", "gone", 1500))?.id, "gone");
      assert.equal(await store.get("t1", "nothing"), undefined);
      await assert.rejects(async () => store.insert(file("a")));
    });

    test("list: upload order either way, a cursor, purpose filter, hasMore; an unknown cursor gives an empty page", async () => {
      const store = await makeStore();
      for (const id of ["f1", "f2", "f3", "f4"]) await store.insert(file(id, { purpose: id === "f3" ? "batch" : "assistants" }));
      await store.insert(file("x", { tenantId: "t2" }));
      const first = await store.list("t1", { limit: 2, order: "asc" }, 5000);
      assert.deepEqual(
        first.files.map((f) => f.id),
        ["f1", "f2"],
      );
      assert.equal(first.hasMore, true);
      const rest = await store.list("t1", { limit: 2, order: "asc", after: "f2" }, 5000);
      assert.deepEqual(
        rest.files.map((f) => f.id),
        ["f3", "f4"],
      );
      assert.equal(rest.hasMore, false);
      assert.deepEqual(
        (await store.list("t1", { limit: 10, order: "desc" }, 5000)).files.map((f) => f.id),
        ["f4", "f3", "f2", "f1"],
      );
      assert.deepEqual(
        (await store.list("t1", { limit: 10, order: "asc", purpose: "batch" }, 5000)).files.map((f) => f.id),
        ["f3"],
      );
      assert.deepEqual((await store.list("t1", { limit: 10, order: "asc", after: "nothing" }, 5000)).files, []);
    });

    test("usage counts expired files until removed; expired lists them soonest first; delete and hasKey", async () => {
      const store = await makeStore();
      await store.insert(file("a", { bytes: 5 }));
      await store.insert(file("b", { bytes: 7, expiresAt: 3000 }));
      await store.insert(file("c", { bytes: 1, expiresAt: 2000 }));
      assert.deepEqual(await store.usage("t1"), { bytes: 13, files: 3 });
      assert.deepEqual(await store.usage("t2"), { bytes: 0, files: 0 });
      await store.insert(file("d", { tenantId: "t2", bytes: 4 }));
      assert.deepEqual(
        await store.bytesPerTenant(),
        new Map([
          ["t1", 13],
          ["t2", 4],
        ]),
        "bytes per tenant, expired files included",
      );
      assert.deepEqual(
        (await store.expired(5000, 10)).map((f) => f.id),
        ["c", "b"],
      );
      assert.deepEqual(
        (await store.expired(2500, 10)).map((f) => f.id),
        ["c"],
      );
      assert.equal(await store.hasKey("key/b"), true);
      assert.equal(await store.delete("b"), true);
      assert.equal(await store.delete("b"), false);
      assert.equal(await store.hasKey("key/b"), false);
      assert.deepEqual(await store.usage("t1"), { bytes: 6, files: 2 });
    });
  });
}
