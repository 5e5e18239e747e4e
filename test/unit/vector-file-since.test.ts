// A vectors file older than its index (as a `kill -9` after writes leaves it) brought up to date
// with the writes after it, read from a real vectors database (vector-file-since.ts): rows written
// since found above the file's last row still there, also when a delete freed the top rowid and a
// later row took it again, and by a walk down from the top when none of the file's recent rows is
// left; replaced and deleted vectors left out; the same writes sent again by the main thread change
// nothing; a file whose tombstones were pruned is refused.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { exactNearest } from "../../src/vectors/exact.js";
import { VectorDb } from "../../src/vectors/store.js";
import { writeVectorFile } from "../../src/vectors/vector-file.js";
import { VectorFileScan } from "../../src/vectors/vector-file-scan.js";
import { WritesSinceReader } from "../../src/vectors/vector-file-since.js";
import { index } from "../contract/vectors.js";
import { clustered } from "../helpers/vectors-data.js";

const DIM = 8;
const N = 2000;
const IDX = "idx_since";
const OTHER = "idx_other";

test("a vectors file and the writes after it in the database answer exactly what the index holds", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-file-since-"));
  const store = new VectorDb(dir);
  const reader = new Database(store.file, { readonly: true, fileMustExist: true });
  try {
    const data = clustered(N + 1000, DIM, 10, 3);
    let next = 0;
    const fresh = () => data.slice((next % (N + 1000)) * DIM, ((next++ % (N + 1000)) + 1) * DIM);
    for (const id of [IDX, OTHER]) await store.insertIndex(index(id, id, { dimension: DIM, metric: "euclidean" }));
    /** The vector each id was last written with. */
    const written = new Map<string, Float32Array>();
    const put = (indexId: string, ids: string[]) =>
      store.upsert(
        indexId,
        ids.map((id) => {
          const embedding = fresh();
          written.set(id, embedding);
          return { id, embedding, metadata: {}, delete_protection: false };
        }),
      );
    // The two indexes' rows interleaved; this index's written last.
    for (let b = 0; b < 4; b++) {
      await put(
        OTHER,
        Array.from({ length: 100 }, (_, j) => `o${b * 100 + j}`),
      );
      await put(
        IDX,
        Array.from({ length: N / 4 }, (_, j) => `v${(b * N) / 4 + j}`),
      );
    }
    type Stored = { rowid: number; label: number; id: string; embedding: Buffer };
    const rows = (): Stored[] =>
      reader.prepare("SELECT rowid, label, id, embedding FROM vectors WHERE index_id = ? ORDER BY label").all(IDX) as Stored[];
    const rowidOf = (id: string) =>
      (reader.prepare("SELECT rowid FROM vectors WHERE index_id = ? AND id = ?").get(IDX, id) as { rowid: number } | undefined)?.rowid;

    // The file, as a save writes it: every vector of the index now (a freed slot too).
    const saved = rows();
    const file = path.join(dir, "idx.vectors");
    const slots = saved.length + 1;
    const vecs = new Float32Array(slots * DIM);
    saved.forEach((r, i) => {
      vecs.set(
        new Float32Array(r.embedding.buffer.slice(r.embedding.byteOffset, r.embedding.byteOffset + r.embedding.length)),
        (i + 1) * DIM,
      );
    });
    const upTo = await store.seq(IDX);
    const snap = {
      dim: DIM,
      upTo,
      slots,
      live: saved.length,
      vecs,
      labels: Float64Array.from([-1, ...saved.map((r) => r.label)]),
      ids: [undefined, ...saved.map((r) => r.id)],
    };
    assert.equal(await writeVectorFile(file, snap, () => true), true);

    /** The file brought up to date now, checked against the index's rows on 10 queries. */
    const check = async (what: string, resend?: (f: VectorFileScan) => void) => {
      const f = await VectorFileScan.open(file, DIM);
      assert.ok(f, what);
      const w = new WritesSinceReader(reader).read(IDX, f.summary());
      assert.ok(!("reason" in w), `${what}: ${JSON.stringify(w)}`);
      f.catchUp(w);
      resend?.(f);
      const now = rows();
      const packed = new Float32Array(now.length * DIM);
      now.forEach((r, i) => {
        packed.set(
          new Float32Array(r.embedding.buffer.slice(r.embedding.byteOffset, r.embedding.byteOffset + r.embedding.length)),
          i * DIM,
        );
      });
      for (let q = 0; q < 10; q++) {
        const query = data.slice(((q * 97) % N) * DIM, (((q * 97) % N) + 1) * DIM).map((x, j) => x + ((j + q) % 3) * 0.1);
        assert.deepEqual(
          f.nearest(query, 10, "euclidean").map((h) => h.id),
          exactNearest(packed, DIM, query, 10, "euclidean").map((i) => (now[i] as Stored).id),
          `${what}: query ${q}`,
        );
      }
      return w;
    };
    assert.equal((await check("no writes since")).ids.length, 0);

    // The file's last row deleted, then a new row: it takes the freed rowid (the table's top).
    const top = `v${N - 1}`;
    const freed = rowidOf(top);
    await store.delete(IDX, [top]);
    await put(IDX, ["after1"]);
    assert.equal(rowidOf("after1"), freed, "the new row did not take the freed rowid (nothing tested)");
    let w = await check("a freed rowid taken again");
    assert.deepEqual(w.ids, ["after1"]);
    assert.deepEqual(w.dropped.length, 1);

    // Replaced (new vectors under the same ids: their old labels must not answer), deleted, new,
    // with the other index written in between; then sent again as the main thread sends the writes
    // acknowledged after the thread began (it may have read them already).
    const replaced = await put(
      IDX,
      Array.from({ length: 50 }, (_, j) => `v${j * 13}`),
    );
    await put(OTHER, ["o-late"]);
    const gone = await store.delete(
      IDX,
      Array.from({ length: 50 }, (_, j) => `v${j * 17 + 1}`),
    );
    const added = await put(
      IDX,
      Array.from({ length: 30 }, (_, j) => `new${j}`),
    );
    w = await check("replaced, deleted and new vectors", (f) => {
      for (const x of [...replaced, ...added]) f.put(x.replaced ?? -1, x.label, x.id, written.get(x.id) as Float32Array);
      for (const g of gone) f.remove(g.label);
    });
    const since = reader.prepare("SELECT COUNT(*) AS n FROM vectors WHERE index_id = ? AND seq > ?").get(IDX, upTo) as { n: number };
    assert.equal(w.ids.length, since.n);
    assert.ok(since.n > 50);

    // None of the file's most recent rows left: found by a walk down from the top, past the other
    // index's rows.
    const recent = saved.slice(-64).map((r) => r.id);
    await store.delete(IDX, recent);
    await put(IDX, ["after2", "after3"]);
    await put(OTHER, ["o-later"]);
    w = await check("every recent row of the file gone");
    assert.ok(w.ids.includes("after2") && w.ids.includes("after3"));

    // Tombstones after the file pruned (a save before they were kept with the file): the sum does
    // not add up, and the file is not used.
    await store.pruneTombstones(IDX, await store.seq(IDX));
    const f = (await VectorFileScan.open(file, DIM)) as VectorFileScan;
    const refused = new WritesSinceReader(reader).read(IDX, f.summary());
    assert.ok("reason" in refused && /vectors/.test(refused.reason), JSON.stringify(refused));
  } finally {
    reader.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
