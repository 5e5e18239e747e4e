// The vectors database on a real SQLite file: the vector count and bytes kept with each write (and
// counted once for a database from before they were kept), the sums per tenant the quotas read, a
// write refused by its quota check keeping nothing, the limits themselves, the cached catalog rows,
// which follow every change, and the record reader that loads an index from a worker thread.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { ApiError } from "../../src/errors.js";
import { type VectorQuota, VectorLimits } from "../../src/vectors/limits.js";
import { readRecords } from "../../src/vectors/record-loader.js";
import { type IndexRow, VectorDb } from "../../src/vectors/store.js";
import { index } from "../contract/vectors.js";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "vector-store-"));
  dirs.push(d);
  return d;
}

function indexRow(id: string, tenant: string, name: string): IndexRow {
  const now = new Date().toISOString();
  return index(id, name, { tenant_id: tenant, created_at: now, updated_at: now });
}

const vec = (id: string) => ({ id, embedding: Float32Array.of(1, 2), metadata: {}, delete_protection: false });

test("the vector count follows upserts, replacements and deletes", async () => {
  const db = new VectorDb(tempDir());
  await db.insertIndex(indexRow("vi_a", "t1", "a"));
  await db.upsert("vi_a", [vec("x"), vec("y"), vec("z")]);
  assert.equal(db.count("vi_a"), 3);
  // One replaced, one new.
  await db.upsert("vi_a", [vec("x"), vec("w")]);
  assert.equal(db.count("vi_a"), 4);
  // One present, one absent.
  assert.equal((await db.delete("vi_a", ["y", "nope"])).length, 1);
  assert.equal(db.count("vi_a"), 3);
  assert.equal((await db.list("vi_a", 10, 0)).length, 3);
  db.close();
});

test("a database from before the count was kept is counted once when opened", async () => {
  const dir = tempDir();
  const old = new VectorDb(dir);
  await old.insertIndex(indexRow("vi_b", "t1", "b"));
  await old.upsert("vi_b", [vec("1"), vec("2")]);
  old.db.exec("ALTER TABLE vector_indexes DROP COLUMN vector_count");
  // A database of that time had no record of versioned migrations either.
  old.db.exec("DROP TABLE schema_migrations");
  old.close();
  const db = new VectorDb(dir);
  assert.equal(db.count("vi_b"), 2);
  db.close();
});

/** The bytes of an index counted over its records, the slow way the running sums avoid. */
async function counted(db: VectorDb, indexId: string): Promise<number> {
  const rows = await db.list(indexId, 1_000_000, 0);
  return rows.reduce((n, r) => n + r.embedding.length + Buffer.byteLength(r.metadata) + Buffer.byteLength(r.id), 0);
}

test("the bytes follow upserts, replacements, metadata updates and deletes, per index, per tenant and in all", async () => {
  const db = new VectorDb(tempDir());
  await db.insertIndex(indexRow("vi_g", "t1", "g"));
  await db.insertIndex(indexRow("vi_h", "t1", "h"));
  await db.insertIndex(indexRow("vi_i", "t2", "i"));
  const m = (id: string, metadata: Record<string, unknown>) => ({
    id,
    embedding: Float32Array.of(1, 2),
    metadata,
    delete_protection: false,
  });
  await db.upsert("vi_g", [m("a", { text: "héllo" }), m("b", {})]);
  // 8 bytes of embedding + the JSON in UTF-8 ("é" is two bytes) + the id.
  assert.equal(await db.byteCount("vi_g"), 8 + Buffer.byteLength('{"text":"héllo"}') + 1 + (8 + 2 + 1));
  assert.equal(await db.byteCount("vi_g"), await counted(db, "vi_g"));
  // A replacement counts as its difference; an id twice in one batch, once.
  await db.upsert("vi_g", [m("a", { text: "x".repeat(1000) }), m("c", {}), m("c", { k: 1 })]);
  assert.equal(await db.byteCount("vi_g"), await counted(db, "vi_g"));
  await db.upsert("vi_h", [m("a", { n: 1 })]);
  await db.upsert("vi_i", [m("z", { big: "y".repeat(500) })]);
  assert.ok(await db.updateVector("vi_g", "b", JSON.stringify({ grown: "w".repeat(300) }), false, new Date().toISOString()));
  assert.equal(await db.updateVector("vi_g", "nope", "{}", false, new Date().toISOString()), false);
  assert.equal(await db.byteCount("vi_g"), await counted(db, "vi_g"));
  const t1 = (await counted(db, "vi_g")) + (await counted(db, "vi_h"));
  assert.deepEqual(db.usageOf("t1"), { indexes: 2, vectors: 4, bytes: t1 });
  assert.deepEqual(db.usageOf("t2"), { indexes: 1, vectors: 1, bytes: await counted(db, "vi_i") });
  assert.equal(db.totalBytes(), t1 + (await counted(db, "vi_i")));
  await db.delete("vi_g", ["a", "nope"]);
  assert.equal(await db.byteCount("vi_g"), await counted(db, "vi_g"));
  assert.equal(db.usageOf("t1").bytes, (await counted(db, "vi_g")) + (await counted(db, "vi_h")));
  // Deleting an index frees all of it.
  await db.deleteIndex("vi_g");
  assert.deepEqual(db.usageOf("t1"), { indexes: 1, vectors: 1, bytes: await counted(db, "vi_h") });
  assert.equal(db.totalBytes(), (await counted(db, "vi_h")) + (await counted(db, "vi_i")));
  // The sums are read back from the catalog when the database is opened again.
  const file = path.dirname(db.file);
  db.close();
  const again = new VectorDb(file);
  assert.deepEqual(again.usageOf("t1"), { indexes: 1, vectors: 1, bytes: await counted(again, "vi_h") });
  assert.equal(again.totalBytes(), (await counted(again, "vi_h")) + (await counted(again, "vi_i")));
  again.close();
});

test("a write its check refuses keeps nothing: no record, no count, no bytes, no label", async () => {
  const db = new VectorDb(tempDir());
  await db.insertIndex(indexRow("vi_j", "t1", "j"));
  await db.upsert("vi_j", [vec("a"), vec("b")]);
  const before = {
    usage: db.usageOf("t1"),
    bytes: await db.byteCount("vi_j"),
    label: await db.nextLabel("vi_j"),
    seq: await db.seq("vi_j"),
  };
  const seen: Array<{ vectors: number; bytes: number }> = [];
  const refuse = (added: { vectors: number; bytes: number }) => {
    seen.push(added);
    throw new ApiError("quota_exceeded", "no");
  };
  await assert.rejects(async () => db.upsert("vi_j", [vec("a"), vec("c"), vec("d")], refuse), /no/);
  assert.deepEqual(seen, [{ vectors: 2, bytes: 2 * (8 + 2 + 1) }], "what the batch would add: two new, one replaced by the same size");
  await assert.rejects(async () => db.updateVector("vi_j", "a", '{"k":"v"}', false, new Date().toISOString(), refuse), /no/);
  assert.deepEqual(seen[1], { vectors: 0, bytes: 7 });
  assert.deepEqual(
    (await db.list("vi_j", 10, 0)).map((r) => [r.id, r.metadata]),
    [
      ["a", "{}"],
      ["b", "{}"],
    ],
  );
  assert.deepEqual(db.usageOf("t1"), before.usage);
  assert.equal(await db.byteCount("vi_j"), before.bytes);
  assert.equal(await db.nextLabel("vi_j"), before.label);
  assert.equal(await db.seq("vi_j"), before.seq);
  assert.deepEqual(await db.tombstonesAfter("vi_j", 0), [], "no tombstone of the refused replacement");
  // A refused index is not created.
  await assert.rejects(async () => db.insertIndex(indexRow("vi_k", "t1", "k"), () => refuse({ vectors: 0, bytes: 0 })), /no/);
  assert.equal(db.indexById("t1", "vi_k"), undefined);
  assert.equal(db.usageOf("t1").indexes, 1);
  db.close();
});

test("a database from before the bytes were kept is summed once when opened", async () => {
  const dir = tempDir();
  const old = new VectorDb(dir);
  await old.insertIndex(indexRow("vi_l", "t1", "l"));
  await old.upsert("vi_l", [
    { id: "é1", embedding: Float32Array.of(1, 2), metadata: { s: "ü".repeat(10) }, delete_protection: false },
    vec("2"),
  ]);
  const bytes = await old.byteCount("vi_l");
  assert.equal(bytes, await counted(old, "vi_l"));
  old.db.exec("ALTER TABLE vector_indexes DROP COLUMN bytes");
  // A database of that time had no record of versioned migrations either.
  old.db.exec("DROP TABLE schema_migrations");
  old.close();
  const db = new VectorDb(dir);
  assert.equal(await db.byteCount("vi_l"), bytes, "UTF-8 bytes, as the writes count them");
  assert.deepEqual(db.usageOf("t1"), { indexes: 1, vectors: 2, bytes });
  db.close();
});

test("the limits: each quota is a 429 with Retry-After, the node's bound a 503; a write adding nothing passes", async () => {
  const MiB = 2 ** 20;
  const usage = { indexes: 2, vectors: 10, bytes: MiB - 100 };
  let total = 3 * MiB - 50;
  const quota: VectorQuota = { maxVectorIndexes: 2, maxVectors: 12, vectorStorageMb: 1 };
  const limits = new VectorLimits({ usageOf: () => ({ ...usage }), totalBytes: () => total }, { quotaOf: () => quota, memoryMb: 3 });
  const code = (f: () => void) => {
    try {
      f();
      return "ok";
    } catch (err) {
      assert.ok(err instanceof ApiError);
      assert.ok((err.retryAfterS ?? 0) >= 1, "Retry-After");
      return `${err.status} ${err.code}`;
    }
  };
  const admit = limits.admit("t1");
  assert.equal(
    code(() => limits.admitIndex("t1")(usage)),
    "429 quota_exceeded",
  );
  assert.equal(
    code(() => admit({ vectors: 3, bytes: 0 })),
    "429 quota_exceeded",
  );
  assert.equal(
    code(() => admit({ vectors: 2, bytes: 101 })),
    "429 quota_exceeded",
  );
  assert.equal(
    code(() => admit({ vectors: 2, bytes: 51 })),
    "503 at_capacity",
  );
  assert.equal(
    code(() => admit({ vectors: 2, bytes: 50 })),
    "ok",
  );
  // Over every limit already (e.g. lowered by the operator): shrinking and deleting still pass.
  usage.vectors = 20;
  usage.bytes = 5 * MiB;
  total = 9 * MiB;
  assert.equal(
    code(() => admit({ vectors: 0, bytes: -10 })),
    "ok",
  );
  assert.equal(
    code(() => admit({ vectors: -3, bytes: -300 })),
    "ok",
  );
  assert.equal(
    code(() => admit({ vectors: 0, bytes: 1 })),
    "429 quota_exceeded",
  );
});

test("catalog rows are cached per tenant and follow updates and deletes", async () => {
  const db = new VectorDb(tempDir());
  await db.insertIndex(indexRow("vi_c", "t1", "c"));
  assert.equal(db.indexById("t1", "vi_c")?.name, "c");
  assert.equal(db.indexByName("t1", "c")?.id, "vi_c");
  // Another tenant sees nothing, cached or not.
  assert.equal(db.indexById("t2", "vi_c"), undefined);
  assert.equal(db.indexByName("t2", "c"), undefined);
  await db.updateIndex("vi_c", '{"k":1}', true, null, new Date().toISOString());
  assert.equal(db.indexById("t1", "vi_c")?.metadata, '{"k":1}');
  assert.equal(db.indexByName("t1", "c")?.delete_protection, 1);
  await db.deleteIndex("vi_c");
  assert.equal(db.indexById("t1", "vi_c"), undefined);
  assert.equal(db.indexByName("t1", "c"), undefined);
  // The name is free again, for a new index with a new id.
  await db.insertIndex(indexRow("vi_d", "t1", "c"));
  assert.equal(db.indexByName("t1", "c")?.id, "vi_d");
  db.close();
});

test("the record reader returns one index's records in write order, in chunks, and refuses a malformed embedding", async () => {
  const db = new VectorDb(tempDir());
  await db.insertIndex(indexRow("vi_e", "t1", "e"));
  await db.insertIndex(indexRow("vi_f", "t1", "f"));
  const v = (id: string, x: number) => ({ id, embedding: Float32Array.of(x, -x), metadata: { x }, delete_protection: false });
  await db.upsert("vi_e", [v("a", 1), v("b", 2)]);
  await db.upsert("vi_f", [v("other", 9)]);
  await db.upsert("vi_e", [v("c", 3), v("a", 4)]); // "a" replaced: its new version comes last
  const read: Array<{ id: string; label: number; seq: number; vec: number[]; meta: string }> = [];
  let chunks = 0;
  for await (const chunk of readRecords(db.file, "vi_e", 2, 2)) {
    chunks++;
    for (const [i, id] of chunk.ids.entries()) {
      read.push({
        id,
        label: chunk.labels[i] as number,
        seq: chunk.seqs[i] as number,
        vec: Array.from(chunk.vectors.subarray(i * 2, i * 2 + 2)),
        meta: chunk.metadata[i] as string,
      });
    }
  }
  assert.equal(chunks, 2);
  assert.deepEqual(
    read.map((r) => [r.id, r.vec, r.meta]),
    [
      ["b", [2, -2], '{"x":2}'],
      ["c", [3, -3], '{"x":3}'],
      ["a", [4, -4], '{"x":4}'],
    ],
  );
  assert.deepEqual(
    read.map((r) => r.seq),
    [2, 3, 4],
  );
  assert.deepEqual(
    read.map((r) => r.label),
    [1, 2, 3],
  );
  // An embedding of the wrong size (a damaged file) fails the load instead of filling memory with garbage.
  db.db.prepare("UPDATE vectors SET embedding = ? WHERE index_id = 'vi_e' AND id = 'c'").run(Buffer.alloc(3));
  await assert.rejects(async () => {
    for await (const _ of readRecords(db.file, "vi_e", 2, 2)) {
      // reading
    }
  }, /record c has 3 bytes of embedding, expected 8/);
  db.close();
});
