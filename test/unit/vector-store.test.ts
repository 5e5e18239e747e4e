// The vectors database on a real SQLite file: the vector count kept with each write (and counted once
// for a database from before it was kept), the cached catalog rows, which follow every change, and
// the record reader that loads an index from a worker thread.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { readRecords } from "../../src/vectors/record-loader.js";
import { type IndexRow, VectorDb } from "../../src/vectors/store.js";

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
  return {
    id,
    tenant_id: tenant,
    name,
    dimension: 2,
    metric: "cosine",
    vector_type: "dense",
    cloud_provider: null,
    region: null,
    index_type: null,
    metadata: "{}",
    delete_protection: 0,
    created_at: now,
    updated_at: now,
  };
}

const vec = (id: string) => ({ id, embedding: Float32Array.of(1, 2), metadata: {}, delete_protection: false });

test("the vector count follows upserts, replacements and deletes", () => {
  const db = new VectorDb(tempDir());
  db.insertIndex(indexRow("vi_a", "t1", "a"));
  db.upsert("vi_a", [vec("x"), vec("y"), vec("z")]);
  assert.equal(db.count("vi_a"), 3);
  // One replaced, one new.
  db.upsert("vi_a", [vec("x"), vec("w")]);
  assert.equal(db.count("vi_a"), 4);
  // One present, one absent.
  assert.equal(db.delete("vi_a", ["y", "nope"]).length, 1);
  assert.equal(db.count("vi_a"), 3);
  assert.equal(db.list("vi_a", 10, 0).length, 3);
  db.close();
});

test("a database from before the count was kept is counted once when opened", () => {
  const dir = tempDir();
  const old = new VectorDb(dir);
  old.insertIndex(indexRow("vi_b", "t1", "b"));
  old.upsert("vi_b", [vec("1"), vec("2")]);
  old.db.exec("ALTER TABLE vector_indexes DROP COLUMN vector_count");
  old.close();
  const db = new VectorDb(dir);
  assert.equal(db.count("vi_b"), 2);
  db.close();
});

test("catalog rows are cached per tenant and follow updates and deletes", () => {
  const db = new VectorDb(tempDir());
  db.insertIndex(indexRow("vi_c", "t1", "c"));
  assert.equal(db.indexById("t1", "vi_c")?.name, "c");
  assert.equal(db.indexByName("t1", "c")?.id, "vi_c");
  // Another tenant sees nothing, cached or not.
  assert.equal(db.indexById("t2", "vi_c"), undefined);
  assert.equal(db.indexByName("t2", "c"), undefined);
  db.updateIndex("vi_c", '{"k":1}', true, new Date().toISOString());
  assert.equal(db.indexById("t1", "vi_c")?.metadata, '{"k":1}');
  assert.equal(db.indexByName("t1", "c")?.delete_protection, 1);
  db.deleteIndex("vi_c");
  assert.equal(db.indexById("t1", "vi_c"), undefined);
  assert.equal(db.indexByName("t1", "c"), undefined);
  // The name is free again, for a new index with a new id.
  db.insertIndex(indexRow("vi_d", "t1", "c"));
  assert.equal(db.indexByName("t1", "c")?.id, "vi_d");
  db.close();
});

test("the record reader returns one index's records in write order, in chunks, and refuses a malformed embedding", async () => {
  const db = new VectorDb(tempDir());
  db.insertIndex(indexRow("vi_e", "t1", "e"));
  db.insertIndex(indexRow("vi_f", "t1", "f"));
  const v = (id: string, x: number) => ({ id, embedding: Float32Array.of(x, -x), metadata: { x }, delete_protection: false });
  db.upsert("vi_e", [v("a", 1), v("b", 2)]);
  db.upsert("vi_f", [v("other", 9)]);
  db.upsert("vi_e", [v("c", 3), v("a", 4)]); // "a" replaced: its new version comes last
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
