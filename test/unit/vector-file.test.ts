// An index's vectors file (vector-file.ts) and the search of it with the writes since
// (vector-file-scan.ts): exactly the nearest of the live vectors, freed slots, deletes and
// replacements after the file left out, vectors written after it included; a file that is cut
// short, or changed while it was written, is not used.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { Collection } from "../../src/vectors/collection.js";
import { exactNearest } from "../../src/vectors/exact.js";
import type { GraphWorker } from "../../src/vectors/graph-worker.js";
import { readVectorFileHeader, writeVectorFile } from "../../src/vectors/vector-file.js";
import { VectorFileScan } from "../../src/vectors/vector-file-scan.js";
import { clustered } from "../helpers/vectors-data.js";

const DIM = 16;
const N = 3000;

test("a vectors file and the writes after it answer exactly what the index holds", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-file-"));
  try {
    const data = clustered(N + 200, DIM, 8, 7);
    const row = (i: number) => data.subarray(i * DIM, (i + 1) * DIM);
    // A collection that never reaches a graph (no graph worker is needed to hold records).
    const c = new Collection(DIM, "euclidean", {} as GraphWorker, "t");
    c.beginLoad();
    for (let i = 0; i < N; i++) c.load(i, `v${i}`, row(i), {}, i + 1, false);
    // Freed slots in the file: 100 vectors dropped before it was written.
    c.endLoad();
    let seq = N;
    for (let i = 0; i < 100; i++) c.drop(i * 7, ++seq);
    const file = path.join(dir, "t.vectors");
    assert.equal(await writeVectorFile(file, c.slotsSnapshot(), () => true), true);
    const h = readVectorFileHeader(file);
    assert.deepEqual(h && { dim: h.dim, live: h.live, upTo: h.upTo }, { dim: DIM, live: N - 100, upTo: seq });

    const scan = await VectorFileScan.open(file, DIM);
    assert.ok(scan);
    // After the file: 50 deleted, 50 replaced (new label, new vector), 100 new.
    const live = new Map<string, number>();
    for (let i = 0; i < N; i++) if (i % 7 !== 0 || i / 7 >= 100) live.set(`v${i}`, i);
    let label = N;
    for (let i = 1; i <= 50; i++) {
      scan.remove(i * 11);
      live.delete(`v${i * 11}`);
    }
    for (let i = 0; i < 50; i++) {
      const old = 1 + i * 13;
      if (!live.has(`v${old}`)) continue;
      scan.put(old, label++, `v${old}`, row(N + i));
      live.set(`v${old}`, N + i);
    }
    for (let i = 50; i < 150; i++) {
      scan.put(-1, label++, `n${i}`, row(N + i));
      live.set(`n${i}`, N + i);
    }
    // A vector written after the file and deleted again.
    scan.put(-1, label, "gone", row(N + 199));
    scan.remove(label);

    const ids = [...live.keys()];
    const packed = new Float32Array(ids.length * DIM);
    ids.forEach((id, j) => {
      packed.set(row(live.get(id) as number), j * DIM);
    });
    for (let q = 0; q < 20; q++) {
      const query = row((q * 151) % (N + 200)).map((x, j) => x + ((j + q) % 3) * 0.2);
      const want = exactNearest(packed, DIM, query, 10, "euclidean").map((j) => ids[j]);
      assert.deepEqual(
        scan.nearest(query, 10, "euclidean").map((f) => f.id),
        want,
      );
    }

    // Cut short: not a vectors file.
    fs.truncateSync(file, fs.statSync(file).size - 1);
    assert.equal(readVectorFileHeader(file), undefined);
    assert.equal(await VectorFileScan.open(file, DIM), undefined);
    // Changed while written: discarded, and the file before it stays.
    const other = path.join(dir, "u.vectors");
    assert.equal(await writeVectorFile(other, c.slotsSnapshot(), () => false), false);
    assert.equal(fs.existsSync(other), false);
    assert.deepEqual(fs.readdirSync(dir), ["t.vectors"]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
