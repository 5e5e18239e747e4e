// The storage quota's accounting (src/files/quota.ts) over an in-memory record of stored bytes:
// writes in flight are reserved byte by byte next to what is committed, so that together they never
// pass the quota; a refused write gives its room back at once; a commit turns its reservation into
// stored bytes without a moment where they count twice or not at all; a deletion frees room. The
// committed bytes are read from the records once, at load(), and then kept by the quota itself.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../../src/errors.js";
import { StorageQuota } from "../../src/files/quota.js";

const MiB = 2 ** 20;

/** A quota of `limit` bytes for every tenant over stored bytes per tenant as the records say at start (`rows`). */
async function setup(limit = 4 * MiB, rows = new Map<string, number>()) {
  let reads = 0;
  const quota = new StorageQuota({
    limit: () => limit,
    committedPerTenant: async () => {
      reads += 1;
      return new Map(rows);
    },
    committedOf: async (tenantId) => {
      reads += 1;
      return rows.get(tenantId) ?? 0;
    },
  });
  await quota.load();
  return { quota, reads: () => reads };
}

const refused = (e: unknown) =>
  e instanceof ApiError && e.code === "quota_exceeded" && e.status === 429 && (e.retryAfterS ?? 0) > 0 && /4 MiB/.test(e.message);

test("writes in flight count against each other: the one whose bytes do not fit is refused, the others go on", async () => {
  const { quota } = await setup();
  const a = quota.reserve("t");
  const b = quota.reserve("t");
  const c = quota.reserve("t");
  a.grow(MiB);
  b.grow(MiB);
  c.grow(MiB);
  a.grow(2 * MiB);
  assert.throws(() => b.grow(2 * MiB), refused, "3 + 2 MiB would pass 4 MiB");
  assert.equal(b.bytes, 0, "the refused write gave its room back");
  assert.deepEqual(quota.usage("t"), { committed: 0, reserved: 3 * MiB });
  c.grow(2 * MiB);
  assert.deepEqual(quota.usage("t"), { committed: 0, reserved: 4 * MiB }, "exactly the quota");
  assert.throws(() => quota.check("t", 1), refused, "a known size is held to the writes in flight too");
  assert.throws(() => a.grow(2 * MiB + 1), refused);
  assert.throws(() => b.grow(1), /after it ended/, "a refused reservation is over");
  // Another tenant has its own room.
  const other = quota.reserve("u");
  other.grow(4 * MiB);
  other.release();
  c.release();
  assert.deepEqual(quota.usage("t"), { committed: 0, reserved: 0 });
});

test("a commit turns reserved bytes into stored bytes at once; a release gives them back; each ends it once", async () => {
  const { quota } = await setup();
  const a = quota.reserve("t");
  const b = quota.reserve("t");
  a.grow(3 * MiB);
  b.grow(MiB);
  const id = await a.commit(async () => {
    // While the row is written the bytes are still reserved: no other write can take their room.
    assert.deepEqual(quota.usage("t"), { committed: 0, reserved: 4 * MiB });
    return "file-1";
  });
  assert.equal(id, "file-1");
  assert.deepEqual(quota.usage("t"), { committed: 3 * MiB, reserved: MiB }, "the same 4 MiB, now mostly stored");
  a.release();
  assert.deepEqual(quota.usage("t"), { committed: 3 * MiB, reserved: MiB }, "a release after the commit changes nothing");
  await assert.rejects(() => a.commit(async () => "again"), /after it ended/);
  assert.throws(() => quota.reserve("t").grow(1), refused, "the stored bytes and b's fill the quota");
  b.release();
  b.release();
  assert.deepEqual(quota.usage("t"), { committed: 3 * MiB, reserved: 0 });
  quota.check("t", MiB);
  assert.throws(() => quota.check("t", MiB + 1), refused);
});

test("a record that cannot be written releases the reservation", async () => {
  const { quota } = await setup();
  const a = quota.reserve("t");
  a.grow(4 * MiB);
  await assert.rejects(
    () =>
      a.commit(async () => {
        throw new Error("disk I/O error");
      }),
    /disk I\/O error/,
  );
  assert.deepEqual(quota.usage("t"), { committed: 0, reserved: 0 });
  quota.check("t", 4 * MiB);
});

test("stored bytes are read from the records once, at load; commits and removals move the count", async () => {
  const { quota, reads } = await setup(4 * MiB, new Map([["t", 3 * MiB]]));
  assert.deepEqual(quota.usage("t"), { committed: 3 * MiB, reserved: 0 }, "what the records held at start");
  const a = quota.reserve("t");
  for (let n = 64 * 1024; n <= MiB; n += 64 * 1024) a.grow(n);
  assert.throws(() => a.grow(MiB + 1), refused);
  // Another path deletes a 2 MiB file: its removal frees the room at once.
  quota.removed("t", 2 * MiB);
  const b = quota.reserve("t");
  b.grow(3 * MiB);
  assert.deepEqual(quota.usage("t"), { committed: MiB, reserved: 3 * MiB });
  await b.commit(async () => undefined);
  assert.deepEqual(quota.usage("t"), { committed: 4 * MiB, reserved: 0 });
  quota.removed("t", 5 * MiB);
  assert.deepEqual(quota.usage("t"), { committed: 0, reserved: 0 }, "never below nothing");
  assert.equal(reads(), 1, "the records were read once");
});

test("a snapshot kept past the quota (a quota lowered by the operator) leaves no room for more", async () => {
  let limit = 4 * MiB;
  const rows = new Map<string, number>([["t", 3 * MiB]]);
  const quota = new StorageQuota({ limit: () => limit, committedPerTenant: async () => rows, committedOf: async (t) => rows.get(t) ?? 0 });
  await quota.load();
  limit = 2 * MiB;
  assert.throws(
    () => quota.check("t", 1),
    (e: unknown) => e instanceof ApiError && e.code === "quota_exceeded",
  );
  assert.throws(
    () => quota.reserve("t").grow(1),
    (e: unknown) => e instanceof ApiError && e.code === "quota_exceeded",
  );
  assert.deepEqual(quota.usage("t"), { committed: 3 * MiB, reserved: 0 });
});

test("in a cluster a write first reads what the tenant's records hold (other nodes' writes and deletes); on one node it reads nothing", async () => {
  const rows = new Map<string, number>();
  const { quota, reads } = await setup(4 * MiB, rows);
  // Another node stored 3 MiB for the tenant.
  rows.set("t", 3 * MiB);
  await quota.refresh("t");
  assert.equal(reads(), 1, "one node: its own count is the truth, no read");
  quota.check("t", 2 * MiB);
  quota.countOverCluster();
  await quota.refresh("t");
  assert.equal(reads(), 2);
  assert.deepEqual(quota.usage("t"), { committed: 3 * MiB, reserved: 0 });
  assert.throws(() => quota.check("t", 2 * MiB), refused);
  // ... and deleted it again: the room is back at the next write.
  rows.set("t", 0);
  await quota.refresh("t");
  quota.check("t", 4 * MiB);
});
