// The vectors database on a real SQLite file: the vector count kept with each write (and counted once
// for a database from before it was kept), and the cached catalog rows, which follow every change.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
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
