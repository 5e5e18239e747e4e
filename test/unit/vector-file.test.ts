// An index's vectors file (vector-file.ts) and the search of it with the writes since
// (vector-file-scan.ts): exactly the nearest of the live vectors, freed slots, deletes and
// replacements after the file left out, vectors written after it included; a file that is cut
// short, or changed while it was written, is not used. The layout read at start: the vectors as
// one block of floats, the ids packed (no JSON to parse); a file of the first version is still read.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { Collection } from "../../src/vectors/collection.js";
import { exactNearest } from "../../src/vectors/exact.js";
import type { GraphWorker } from "../../src/vectors/graph-worker.js";
import { readVectorFile, readVectorFileHeader, writeVectorFile } from "../../src/vectors/vector-file.js";
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

test("a vectors file holds the vectors as one block of floats and the ids packed; a first-version file is still read", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-file-layout-"));
  try {
    const n = 50;
    const vecs = clustered(n, DIM, 4, 9);
    const labels = Float64Array.from({ length: n }, (_, i) => (i === 7 ? -1 : i * 2));
    const ids = Array.from({ length: n }, (_, i) => (i === 7 ? undefined : `é${i}`));
    const slots = { dim: DIM, upTo: 99, slots: n, live: n - 1, vecs, labels, ids };
    const file = path.join(dir, "v2.vectors");
    assert.equal(await writeVectorFile(file, slots, () => true), true);
    const bytes = fs.readFileSync(file);
    // Version 2: after the 64-byte header, the floats as they are in memory, then the labels, where
    // each id ends, and the ids' bytes (the read is one read into each array, nothing parsed per vector).
    assert.equal(bytes.toString("latin1", 0, 8), "AGBXVEC2");
    const floatBytes = n * DIM * 4;
    assert.ok(bytes.subarray(64, 64 + floatBytes).equals(Buffer.from(vecs.buffer, vecs.byteOffset, floatBytes)));
    const idBytes = Buffer.from(ids.map((id) => id ?? "").join(""));
    assert.ok(bytes.subarray(bytes.length - idBytes.length).equals(idBytes));
    const read = await readVectorFile(file);
    assert.ok(read);
    assert.equal(read.version, 2);
    assert.deepEqual(
      Array.from({ length: n }, (_, i) => read.ids.get(i)),
      ids.map((id) => id ?? ""),
    );
    assert.deepEqual(read.vecs, vecs);
    assert.deepEqual(read.labels, labels);

    // Version 1 (the ids as one JSON array), as the version before this one wrote it: read the same.
    const v1 = path.join(dir, "v1.vectors");
    const json = Buffer.from(JSON.stringify(ids.map((id) => id ?? null)));
    const header = Buffer.alloc(64);
    header.write("AGBXVEC1", 0, "latin1");
    header.writeUInt32LE(DIM, 8);
    header.writeDoubleLE(n, 16);
    header.writeDoubleLE(n - 1, 24);
    header.writeDoubleLE(99, 32);
    header.writeDoubleLE(json.length, 40);
    fs.writeFileSync(v1, Buffer.concat([header, bytes.subarray(64, 64 + floatBytes), Buffer.from(labels.buffer), json]));
    assert.deepEqual(readVectorFileHeader(v1)?.version, 1);
    const old = await VectorFileScan.open(v1, DIM);
    const now = await VectorFileScan.open(file, DIM);
    assert.ok(old && now);
    const q = vecs.slice(3 * DIM, 4 * DIM);
    const want = now.nearest(q, 10, "euclidean").map((h) => h.id);
    assert.equal(want[0], "é3");
    assert.ok(!want.includes(""), "a freed slot was searched");
    assert.deepEqual(
      old.nearest(q, 10, "euclidean").map((h) => h.id),
      want,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
