// The contract of VectorCatalog (the vectors area's store): what any implementation must do.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { IndexRow, RecordRow, VectorCatalog, VectorUsage } from "../../src/vectors/store.js";
import { recordBytes } from "../../src/vectors/store.js";

const T0 = "2026-01-01T00:00:00.000Z";
const T1 = "2026-01-02T00:00:00.000Z";

/** An index's catalog row (tenant t1, 2 dimensions, cosine) with `over` applied. */
export const index = (id: string, name: string, over: Partial<IndexRow> = {}): IndexRow => ({
  id,
  tenant_id: "t1",
  name,
  dimension: 2,
  metric: "cosine",
  vector_type: "dense",
  cloud_provider: null,
  region: null,
  index_type: null,
  metadata: "{}",
  delete_protection: 0,
  created_at: T0,
  updated_at: T0,
  target_recall: null,
  ...over,
});

/** The index row's own fields (an implementation may keep more on the row it returns, e.g. its counters). */
function fields(row: IndexRow | undefined): IndexRow | undefined {
  if (row === undefined) return undefined;
  const keys = Object.keys(index("", "")) as Array<keyof IndexRow>;
  return Object.fromEntries(keys.map((k) => [k, row[k]])) as unknown as IndexRow;
}

const vec = (id: string, x = 1, metadata: Record<string, unknown> = {}, protect = false) => ({
  id,
  embedding: Float32Array.of(x, -x),
  metadata,
  delete_protection: protect,
});

/** A stored record's embedding as numbers. */
const floats = (r: RecordRow | undefined): number[] | undefined =>
  r && [...new Float32Array(r.embedding.buffer, r.embedding.byteOffset, r.embedding.length / 4)];

/** What the quotas count for a record of two floats with this metadata. */
const bytesOf = (id: string, metadata: Record<string, unknown> = {}) => recordBytes(id, 8, JSON.stringify(metadata));

const NONE: VectorUsage = { indexes: 0, vectors: 0, bytes: 0 };

/** `makeCatalog()`: a new, empty catalog; `makeCatalog(closed)`: a catalog closed before, opened again on the same database. */
export function describeVectorCatalogContract(name: string, makeCatalog: (closed?: VectorCatalog) => Promise<VectorCatalog>): void {
  describe(`VectorCatalog contract: ${name}`, () => {
    test("insert and read an index back by id and by the tenant's name (every field round-trips); another tenant's is not found", async () => {
      const c = await makeCatalog();
      const row = index("vi_a", "docs", {
        dimension: 3,
        metric: "dotproduct",
        cloud_provider: "aws",
        region: "us-east-1",
        index_type: "serverless",
        metadata: '{"team":"x"}',
        delete_protection: 1,
        target_recall: 0.9,
      });
      await c.insertIndex(row);
      assert.deepEqual(fields(c.indexById("t1", "vi_a")), row);
      assert.deepEqual(fields(c.indexByName("t1", "docs")), row);
      assert.equal(c.indexById("t2", "vi_a"), undefined, "another tenant's id");
      assert.equal(c.indexByName("t2", "docs"), undefined, "another tenant's name");
      assert.equal(c.indexById("t1", "nothing"), undefined);
      assert.equal(c.indexByName("t1", "nothing"), undefined);
      assert.equal(c.count("vi_a"), 0);
      assert.deepEqual(
        (await c.allIndexes()).map((r) => fields(r)),
        [row],
      );
    });

    test("a tenant's index names are unique (the insert fails and counts nothing), other tenants' are not", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      await assert.rejects(c.insertIndex(index("vi_b", "docs")));
      assert.equal(c.indexById("t1", "vi_b"), undefined);
      assert.equal(c.indexByName("t1", "docs")?.id, "vi_a");
      assert.deepEqual(c.usageOf("t1"), { indexes: 1, vectors: 0, bytes: 0 });
      await c.insertIndex(index("vi_c", "docs", { tenant_id: "t2" }));
      assert.equal(c.indexByName("t2", "docs")?.id, "vi_c");
      assert.deepEqual((await c.allIndexes()).map((r) => r.id).sort(), ["vi_a", "vi_c"]);
    });

    test("listIndexes pages one tenant's indexes oldest first, with their total", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_new", "new", { created_at: "2026-01-03T00:00:00.000Z" }));
      await c.insertIndex(index("vi_old", "old"));
      await c.insertIndex(index("vi_mid", "mid", { created_at: T1 }));
      await c.insertIndex(index("vi_other", "other", { tenant_id: "t2" }));
      const page = async (limit: number, offset: number) => {
        const { rows, total } = await c.listIndexes("t1", limit, offset);
        return { ids: rows.map((r) => r.id), total };
      };
      assert.deepEqual(await page(10, 0), { ids: ["vi_old", "vi_mid", "vi_new"], total: 3 });
      assert.deepEqual(await page(2, 0), { ids: ["vi_old", "vi_mid"], total: 3 });
      assert.deepEqual(await page(2, 2), { ids: ["vi_new"], total: 3 });
      assert.deepEqual(await c.listIndexes("t3", 10, 0), { rows: [], total: 0 });
      assert.deepEqual(fields((await c.listIndexes("t2", 10, 0)).rows[0]), index("vi_other", "other", { tenant_id: "t2" }));
    });

    test("updateIndex replaces metadata, protection, target recall and updated_at, seen by id and by name; an unknown id is harmless", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      await c.updateIndex("vi_a", '{"k":1}', true, 0.95, T1);
      const updated = index("vi_a", "docs", { metadata: '{"k":1}', delete_protection: 1, target_recall: 0.95, updated_at: T1 });
      assert.deepEqual(fields(c.indexById("t1", "vi_a")), updated);
      assert.deepEqual(fields(c.indexByName("t1", "docs")), updated);
      assert.deepEqual(fields((await c.listIndexes("t1", 10, 0)).rows[0]), updated);
      await c.updateIndex("vi_a", "{}", false, null, T1);
      assert.deepEqual(fields(c.indexById("t1", "vi_a")), index("vi_a", "docs", { updated_at: T1 }));
      await c.updateIndex("nothing", "{}", false, null, T1);
      assert.equal(c.indexById("t1", "nothing"), undefined);
    });

    test("records: upsert gives labels and seqs in order, and get, getMany, list, count and byteCount read them back", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      await c.insertIndex(index("vi_b", "other"));
      const written = await c.upsert("vi_a", [vec("b", 2, { text: "héllo" }, true), vec("a", 1), vec("c", 3, { n: 3 })]);
      assert.deepEqual(
        written.map((w) => [w.id, w.label, w.seq, w.replaced]),
        [
          ["b", 0, 1, undefined],
          ["a", 1, 2, undefined],
          ["c", 2, 3, undefined],
        ],
      );
      await c.upsert("vi_b", [vec("a", 9)]);
      const b = await c.get("vi_a", "b");
      assert.equal(b?.id, "b");
      assert.equal(b?.label, 0);
      assert.equal(b?.seq, 1);
      assert.deepEqual(floats(b), [2, -2]);
      assert.deepEqual(JSON.parse(b?.metadata ?? ""), { text: "héllo" });
      assert.equal(b?.delete_protection, 1);
      assert.equal(b?.created_at, written[0]?.created_at);
      assert.equal(b?.updated_at, written[0]?.updated_at);
      assert.equal((await c.get("vi_a", "a"))?.delete_protection, 0);
      assert.deepEqual(floats(await c.get("vi_b", "a")), [9, -9], "each index has its own records");
      assert.equal(await c.get("vi_a", "nothing"), undefined);
      assert.equal(await c.get("nothing", "a"), undefined);
      assert.deepEqual((await c.getMany("vi_a", ["c", "nothing", "a"])).map((r) => r.id).sort(), ["a", "c"], "absent ones left out");
      assert.deepEqual(await c.getMany("vi_a", []), []);
      assert.deepEqual(
        (await c.list("vi_a", 10, 0)).map((r) => r.id),
        ["a", "b", "c"],
      );
      assert.deepEqual(
        (await c.list("vi_a", 2, 1)).map((r) => r.id),
        ["b", "c"],
      );
      assert.deepEqual(await c.list("nothing", 10, 0), []);
      assert.equal(c.count("vi_a"), 3);
      assert.equal(c.count("vi_b"), 1);
      assert.equal(c.count("nothing"), 0);
      assert.equal(await c.byteCount("vi_a"), bytesOf("b", { text: "héllo" }) + bytesOf("a") + bytesOf("c", { n: 3 }));
      assert.equal(await c.byteCount("nothing"), 0);
    });

    test("a replacement keeps created_at, takes a new label and seq, and leaves a tombstone of the old label; labels come from nextLabel", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      assert.equal(await c.nextLabel("vi_a"), 0);
      assert.equal(await c.seq("vi_a"), 0);
      const [first] = await c.upsert("vi_a", [vec("x", 1), vec("y", 2)]);
      assert.equal(await c.nextLabel("vi_a"), 2);
      assert.equal(await c.seq("vi_a"), 2);
      const [again] = await c.upsert("vi_a", [vec("x", 5, { v: 2 })]);
      assert.deepEqual([again?.label, again?.seq, again?.replaced], [2, 3, 0]);
      assert.equal(again?.created_at, first?.created_at);
      assert.equal(await c.nextLabel("vi_a"), 3);
      assert.equal(await c.seq("vi_a"), 3);
      assert.deepEqual(await c.tombstonesAfter("vi_a", 0), [0]);
      assert.deepEqual(await c.tombstonesAfter("vi_a", 3), []);
      const x = await c.get("vi_a", "x");
      assert.deepEqual([x?.label, x?.seq, floats(x), x?.metadata && JSON.parse(x.metadata)], [2, 3, [5, -5], { v: 2 }]);
      assert.equal((await c.byLabel("vi_a", 2))?.id, "x");
      assert.equal((await c.byLabel("vi_a", 1))?.id, "y");
      assert.equal(await c.byLabel("vi_a", 0), undefined, "the replaced label is gone");
      assert.equal(await c.byLabel("vi_a", 99), undefined);
      assert.equal(c.count("vi_a"), 2, "a replacement is not a new vector");
      assert.equal(await c.byteCount("vi_a"), bytesOf("x", { v: 2 }) + bytesOf("y"));
      // The same id twice in one batch: the last one stays, counted once.
      await c.upsert("vi_a", [vec("z", 1), vec("z", 7)]);
      assert.equal(c.count("vi_a"), 3);
      assert.deepEqual(floats(await c.get("vi_a", "z")), [7, -7]);
      assert.equal(await c.nextLabel("vi_a"), 5);
      assert.deepEqual((await c.tombstonesAfter("vi_a", 3)).sort(), [3]);
    });

    test("deletes remove what exists (absent ids ignored), each with a seq and a tombstone; pruneTombstones drops those up to a seq", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      await c.upsert("vi_a", [vec("a"), vec("b"), vec("c")]);
      const gone = await c.delete("vi_a", ["b", "nothing", "c"]);
      assert.deepEqual(gone, [
        { id: "b", label: 1, seq: 4 },
        { id: "c", label: 2, seq: 5 },
      ]);
      assert.equal(await c.seq("vi_a"), 5);
      assert.equal(await c.nextLabel("vi_a"), 3, "labels are not reused");
      assert.equal(c.count("vi_a"), 1);
      assert.equal(await c.byteCount("vi_a"), bytesOf("a"));
      assert.equal(await c.get("vi_a", "b"), undefined);
      assert.equal(await c.byLabel("vi_a", 1), undefined);
      assert.deepEqual((await c.tombstonesAfter("vi_a", 0)).sort(), [1, 2]);
      assert.deepEqual(await c.tombstonesAfter("vi_a", 4), [2]);
      assert.deepEqual(await c.delete("vi_a", ["nothing"]), []);
      assert.equal(await c.seq("vi_a"), 5, "deleting nothing writes nothing");
      await c.pruneTombstones("vi_a", 4);
      assert.deepEqual(await c.tombstonesAfter("vi_a", 0), [2]);
      await c.pruneTombstones("vi_a", 5);
      assert.deepEqual(await c.tombstonesAfter("vi_a", 0), []);
      // A new write goes on from there.
      const [w] = await c.upsert("vi_a", [vec("d")]);
      assert.deepEqual([w?.label, w?.seq], [3, 6]);
    });

    test("delete protection: refuseProtected gets the protected ids and throwing refuses the whole delete; without it they are deleted", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      await c.upsert("vi_a", [vec("a", 1, {}, true), vec("b"), vec("c", 1, {}, true)]);
      const seen: string[][] = [];
      const refusal = new Error("protected");
      const refuse = (ids: string[]) => {
        seen.push(ids);
        throw refusal;
      };
      await assert.rejects(c.delete("vi_a", ["a", "b", "c"], refuse), (err) => err === refusal);
      assert.deepEqual(
        seen.map((ids) => [...ids].sort()),
        [["a", "c"]],
      );
      assert.deepEqual(
        (await c.list("vi_a", 10, 0)).map((r) => r.id),
        ["a", "b", "c"],
        "nothing deleted",
      );
      assert.equal(c.count("vi_a"), 3);
      assert.equal(await c.seq("vi_a"), 3);
      assert.deepEqual(await c.tombstonesAfter("vi_a", 0), []);
      // Only unprotected ids: not asked, deleted.
      assert.deepEqual(
        (await c.delete("vi_a", ["b"], refuse)).map((g) => g.id),
        ["b"],
      );
      assert.equal(seen.length, 1);
      // Asked and allowed: deleted.
      assert.deepEqual(
        (await c.delete("vi_a", ["a"], (ids) => seen.push(ids))).map((g) => g.id),
        ["a"],
      );
      assert.deepEqual(seen[1], ["a"]);
      // No check: protection is the caller's business.
      assert.deepEqual(
        (await c.delete("vi_a", ["c"])).map((g) => g.id),
        ["c"],
      );
      assert.equal(c.count("vi_a"), 0);
    });

    test("updateVector replaces metadata, protection and updated_at (not the vector, label or seq); false for an absent vector", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      const [w] = await c.upsert("vi_a", [vec("a", 3, { n: 1 })]);
      assert.equal(await c.updateVector("vi_a", "a", JSON.stringify({ grown: "w".repeat(100) }), true, T1), true);
      const a = await c.get("vi_a", "a");
      assert.deepEqual(JSON.parse(a?.metadata ?? ""), { grown: "w".repeat(100) });
      assert.equal(a?.delete_protection, 1);
      assert.equal(a?.updated_at, T1);
      assert.equal(a?.created_at, w?.created_at);
      assert.deepEqual([a?.label, a?.seq, floats(a)], [0, 1, [3, -3]]);
      assert.equal(await c.byteCount("vi_a"), bytesOf("a", { grown: "w".repeat(100) }));
      assert.deepEqual(c.usageOf("t1"), { indexes: 1, vectors: 1, bytes: bytesOf("a", { grown: "w".repeat(100) }) });
      // The protection it set is the one a checked delete sees.
      const seen: string[][] = [];
      await assert.rejects(
        c.delete("vi_a", ["a"], (ids) => {
          seen.push(ids);
          throw new Error("protected");
        }),
        /protected/,
      );
      assert.deepEqual(seen, [["a"]]);
      assert.equal(await c.updateVector("vi_a", "a", "{}", false, T1), true);
      assert.deepEqual(
        (
          await c.delete("vi_a", ["a"], () => {
            throw new Error("protected");
          })
        ).map((g) => g.id),
        ["a"],
      );
      assert.equal(await c.updateVector("vi_a", "a", "{}", false, T1), false, "deleted");
      assert.equal(await c.updateVector("vi_a", "nothing", "{}", false, T1), false);
      assert.equal(await c.updateVector("nothing", "a", "{}", false, T1), false);
    });

    test("usage per tenant and in all moves with every write, and deleting an index frees all of it", async () => {
      const c = await makeCatalog();
      assert.deepEqual(c.usageOf("t1"), NONE);
      assert.equal(c.totalBytes(), 0);
      await c.insertIndex(index("vi_a", "a"));
      await c.insertIndex(index("vi_b", "b"));
      await c.insertIndex(index("vi_c", "c", { tenant_id: "t2" }));
      assert.deepEqual(c.usageOf("t1"), { indexes: 2, vectors: 0, bytes: 0 });
      await c.upsert("vi_a", [vec("x", 1, { text: "héllo" }), vec("y")]);
      await c.upsert("vi_b", [vec("z", 1, { n: 1 })]);
      await c.upsert("vi_c", [vec("w", 1, { big: "y".repeat(50) })]);
      const a = bytesOf("x", { text: "héllo" }) + bytesOf("y");
      const b = bytesOf("z", { n: 1 });
      const t2 = bytesOf("w", { big: "y".repeat(50) });
      assert.deepEqual(c.usageOf("t1"), { indexes: 2, vectors: 3, bytes: a + b });
      assert.deepEqual(c.usageOf("t2"), { indexes: 1, vectors: 1, bytes: t2 });
      assert.equal(c.totalBytes(), a + b + t2);
      // A replacement counts as its difference.
      await c.upsert("vi_a", [vec("y", 2, { more: "m".repeat(20) })]);
      const a2 = bytesOf("x", { text: "héllo" }) + bytesOf("y", { more: "m".repeat(20) });
      assert.deepEqual(c.usageOf("t1"), { indexes: 2, vectors: 3, bytes: a2 + b });
      await c.delete("vi_a", ["x"]);
      assert.deepEqual(c.usageOf("t1"), { indexes: 2, vectors: 2, bytes: a2 - bytesOf("x", { text: "héllo" }) + b });
      await c.deleteIndex("vi_a");
      assert.deepEqual(c.usageOf("t1"), { indexes: 1, vectors: 1, bytes: b });
      assert.deepEqual(c.usageOf("t2"), { indexes: 1, vectors: 1, bytes: t2 });
      assert.equal(c.totalBytes(), b + t2);
      // A copy: changing it changes nothing.
      const u = c.usageOf("t2");
      u.bytes = 0;
      assert.equal(c.usageOf("t2").bytes, t2);
    });

    test("deleteIndex removes the index, its records and tombstones, and frees its name; an unknown id is harmless", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      await c.insertIndex(index("vi_b", "keep"));
      await c.upsert("vi_a", [vec("a"), vec("b")]);
      await c.upsert("vi_a", [vec("a", 2)]);
      await c.upsert("vi_b", [vec("a")]);
      await c.deleteIndex("vi_a");
      await c.deleteIndex("nothing");
      assert.equal(c.indexById("t1", "vi_a"), undefined);
      assert.equal(c.indexByName("t1", "docs"), undefined);
      assert.equal(c.count("vi_a"), 0);
      assert.equal(await c.get("vi_a", "a"), undefined);
      assert.deepEqual(await c.list("vi_a", 10, 0), []);
      assert.deepEqual(await c.tombstonesAfter("vi_a", 0), []);
      assert.equal(await c.byteCount("vi_a"), 0);
      assert.deepEqual(
        (await c.allIndexes()).map((r) => r.id),
        ["vi_b"],
      );
      assert.deepEqual(floats(await c.get("vi_b", "a")), [1, -1], "other indexes untouched");
      // The name is free again, for a new index that starts empty.
      await c.insertIndex(index("vi_c", "docs"));
      assert.equal(c.indexByName("t1", "docs")?.id, "vi_c");
      assert.equal(c.count("vi_c"), 0);
      assert.equal(await c.nextLabel("vi_c"), 0);
      assert.equal(await c.seq("vi_c"), 0);
    });

    test("admit: told what a write adds, and throwing refuses it whole (nothing written, nothing counted)", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      await c.upsert("vi_a", [vec("a"), vec("b", 1, { n: 1 })]);
      const before = {
        usage: c.usageOf("t1"),
        total: c.totalBytes(),
        count: c.count("vi_a"),
        bytes: await c.byteCount("vi_a"),
        label: await c.nextLabel("vi_a"),
        seq: await c.seq("vi_a"),
        records: (await c.list("vi_a", 10, 0)).map((r) => [r.id, r.metadata, floats(r)]),
      };
      const seen: Array<{ vectors: number; bytes: number }> = [];
      const refusal = new Error("quota");
      const refuse = (added: { vectors: number; bytes: number }) => {
        seen.push(added);
        throw refusal;
      };
      // Two new, one replaced by a record without metadata.
      await assert.rejects(c.upsert("vi_a", [vec("b", 5), vec("c"), vec("d")], refuse), (err) => err === refusal);
      assert.deepEqual(seen[0], { vectors: 2, bytes: 2 * bytesOf("c") + bytesOf("b") - bytesOf("b", { n: 1 }) });
      await assert.rejects(c.updateVector("vi_a", "a", '{"k":"v"}', true, T1, refuse), (err) => err === refusal);
      assert.deepEqual(seen[1], { vectors: 0, bytes: Buffer.byteLength('{"k":"v"}') - 2 });
      assert.deepEqual(
        {
          usage: c.usageOf("t1"),
          total: c.totalBytes(),
          count: c.count("vi_a"),
          bytes: await c.byteCount("vi_a"),
          label: await c.nextLabel("vi_a"),
          seq: await c.seq("vi_a"),
          records: (await c.list("vi_a", 10, 0)).map((r) => [r.id, r.metadata, floats(r)]),
        },
        before,
      );
      assert.equal((await c.get("vi_a", "a"))?.delete_protection, 0);
      assert.deepEqual(await c.tombstonesAfter("vi_a", 0), [], "no tombstone of the refused replacement");
      // Admitted: written, and what it was told is what was counted.
      const told: Array<{ vectors: number; bytes: number }> = [];
      await c.upsert("vi_a", [vec("c", 1, { x: 1 })], (added) => told.push(added));
      assert.deepEqual(told, [{ vectors: 1, bytes: bytesOf("c", { x: 1 }) }]);
      assert.deepEqual(c.usageOf("t1"), { indexes: 1, vectors: 3, bytes: before.usage.bytes + bytesOf("c", { x: 1 }) });
      // An index: admit gets the tenant's usage, and throwing refuses it.
      const usages: VectorUsage[] = [];
      await assert.rejects(
        c.insertIndex(index("vi_b", "b"), (usage) => {
          usages.push(usage);
          throw refusal;
        }),
        (err) => err === refusal,
      );
      assert.deepEqual(usages, [c.usageOf("t1")]);
      assert.equal(c.indexById("t1", "vi_b"), undefined);
      assert.equal(c.indexByName("t1", "b"), undefined);
      assert.equal(c.usageOf("t1").indexes, 1);
      await c.insertIndex(index("vi_b", "b"), (usage) => usages.push(usage));
      assert.equal(c.indexById("t1", "vi_b")?.name, "b");
      assert.equal(c.usageOf("t1").indexes, 2);
    });

    test("acknowledged writes are there after close and reopen: indexes, records, counters, tombstones, usage", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs", { metadata: '{"k":1}' }));
      await c.insertIndex(index("vi_b", "gone"));
      await c.insertIndex(index("vi_c", "other", { tenant_id: "t2" }));
      await c.upsert("vi_a", [vec("a", 1, { n: 1 }), vec("b", 2), vec("c", 3, {}, true)]);
      await c.upsert("vi_a", [vec("a", 4, { n: 2 })]);
      await c.delete("vi_a", ["b"]);
      await c.updateVector("vi_a", "c", '{"u":1}', false, T1);
      await c.updateIndex("vi_a", '{"k":2}', true, 0.8, T1);
      await c.upsert("vi_b", [vec("x")]);
      await c.deleteIndex("vi_b");
      await c.upsert("vi_c", [vec("y", 1, { big: "z".repeat(40) })]);
      const before = {
        indexA: fields(c.indexById("t1", "vi_a")),
        indexC: fields(c.indexByName("t2", "other")),
        records: await c.list("vi_a", 10, 0),
        count: c.count("vi_a"),
        bytes: await c.byteCount("vi_a"),
        label: await c.nextLabel("vi_a"),
        seq: await c.seq("vi_a"),
        tombstones: (await c.tombstonesAfter("vi_a", 0)).sort(),
        t1: c.usageOf("t1"),
        t2: c.usageOf("t2"),
        total: c.totalBytes(),
      };
      assert.deepEqual(
        before.indexA,
        index("vi_a", "docs", { metadata: '{"k":2}', delete_protection: 1, target_recall: 0.8, updated_at: T1 }),
      );
      assert.equal(before.count, 2);
      assert.deepEqual(before.tombstones, [0, 1]);
      await c.close();
      const again = await makeCatalog(c);
      assert.deepEqual(
        {
          indexA: fields(again.indexById("t1", "vi_a")),
          indexC: fields(again.indexByName("t2", "other")),
          records: await again.list("vi_a", 10, 0),
          count: again.count("vi_a"),
          bytes: await again.byteCount("vi_a"),
          label: await again.nextLabel("vi_a"),
          seq: await again.seq("vi_a"),
          tombstones: (await again.tombstonesAfter("vi_a", 0)).sort(),
          t1: again.usageOf("t1"),
          t2: again.usageOf("t2"),
          total: again.totalBytes(),
        },
        before,
      );
      assert.equal(again.indexById("t1", "vi_b"), undefined, "the deleted index stays deleted");
      assert.equal(again.indexByName("t1", "gone"), undefined);
      // It goes on from where it was.
      const [w] = await again.upsert("vi_a", [vec("d")]);
      assert.deepEqual([w?.label, w?.seq], [before.label, before.seq + 1]);
    });

    test("close lets the writes under way commit first", async () => {
      const c = await makeCatalog();
      await c.insertIndex(index("vi_a", "docs"));
      const pending = c.upsert("vi_a", [vec("a"), vec("b")]);
      await c.close();
      assert.equal((await pending).length, 2);
      const again = await makeCatalog(c);
      assert.deepEqual(
        (await again.list("vi_a", 10, 0)).map((r) => r.id),
        ["a", "b"],
      );
      assert.equal(again.count("vi_a"), 2);
    });
  });
}
