// An index's side log of acknowledged writes (vector-log.ts), as a real file: each entry carries a
// checksum, so a corrupted entry (a flipped byte, which no length or magic check sees) is not
// applied, nor is anything after it (the database has those writes); a log written before the
// checksum was added (version 1 entries) is still read, also with version 2 entries after them.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { readVectorLog, VectorLogs } from "../../src/vectors/vector-log.js";
import { VectorFileScan } from "../../src/vectors/vector-file-scan.js";

const DIM = 8;

/** A vector that is `i` in every dimension (easy to find in the file, and to tell apart). */
const vec = (i: number) => new Float32Array(DIM).fill(i + 0.5);

/** Appends three upsert batches of two vectors each (labels and seqs 1..6) to the index's log. */
async function writeLog(file: string): Promise<void> {
  const errors: unknown[] = [];
  const logs = new VectorLogs((_, err) => errors.push(err));
  logs.track("i", file, DIM);
  for (let b = 0; b < 3; b++) {
    const items = [1, 2].map((j) => b * 2 + j);
    logs.upserted(
      "i",
      items.map((k) => ({ id: `v${k}`, label: k, seq: k })),
      items.map(vec),
    );
  }
  await logs.close();
  assert.deepEqual(errors, []);
}

test("a corrupted entry of the log and every entry after it are not applied", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-log-"));
  try {
    const file = path.join(dir, "i.vectors.log");
    await writeLog(file);
    assert.deepEqual(
      readVectorLog(file, DIM).map((e) => e.firstSeq),
      [1, 3, 5],
    );
    // One bit of one float of the second batch's first vector (v3), as a bad disk sector or a
    // stray write would leave it: every length and magic is still right.
    const buf = fs.readFileSync(file);
    const at = buf.indexOf(Buffer.from(vec(3).buffer));
    assert.ok(at > 0, "the vector was not found in the log");
    buf[at + 5] = (buf[at + 5] as number) ^ 0x01;
    fs.writeFileSync(file, buf);

    const entries = readVectorLog(file, DIM);
    assert.deepEqual(
      entries.map((e) => e.firstSeq),
      [1],
      "the corrupted entry (or one after it) was read",
    );
    // Applied to a file-less scan: the first batch only; the writes after it are the database's to give.
    const scan = VectorFileScan.empty(DIM);
    assert.equal(scan.applyLog(entries), 2);
    assert.equal(scan.upTo, 2);
    assert.deepEqual(
      scan.nearest(vec(3), 10, "euclidean").map((h) => h.id),
      ["v2", "v1"],
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a log whose entries predate the checksum is read, and entries appended after them are too", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-log-v1-"));
  try {
    const file = path.join(dir, "i.vectors.log");
    // A version 1 delete entry, as the previous release wrote it: head, labels, magic (no checksum).
    const magicV1 = 0x474f_4c56;
    const v1 = Buffer.alloc(32 + 8 + 4);
    v1.writeUInt32LE(magicV1, 0);
    v1.writeUInt32LE(2, 4); // delete
    v1.writeUInt32LE(1, 8); // one label
    v1.writeUInt32LE(DIM, 12);
    v1.writeDoubleLE(1, 16); // seq 1
    v1.writeDoubleLE(8, 24); // bytes after the head
    v1.writeDoubleLE(42, 32); // label 42
    v1.writeUInt32LE(magicV1, 40);
    fs.writeFileSync(file, v1);
    const old = readVectorLog(file, DIM);
    assert.deepEqual(
      old.map((e) => [e.kind, e.firstSeq, [...e.labels]]),
      [["delete", 1, [42]]],
    );
    // The new release appends to the same log (its writes after the old ones).
    const logs = new VectorLogs(() => {});
    logs.track("i", file, DIM);
    logs.deleted("i", [{ label: 43, seq: 2 }]);
    await logs.close();
    assert.deepEqual(
      readVectorLog(file, DIM).map((e) => [e.kind, e.firstSeq, [...e.labels]]),
      [
        ["delete", 1, [42]],
        ["delete", 2, [43]],
      ],
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
