// Exact scans (exact.ts, exact-scan.ts): many queries scored a chunk of rows at a time give the
// same neighbours as one query at a time, and the exact-scan thread, fed an index a piece at a
// time, leaves out the rows its mask leaves out and each query's excluded row.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { exactNearest, exactNearestEach } from "../../src/vectors/exact.js";
import { ExactScanner } from "../../src/vectors/exact-scan.js";

const DIM = 16;
const ROWS = 70_000;
const data = Float32Array.from({ length: ROWS * DIM }, () => Math.random());
const queries = Float32Array.from({ length: 40 * DIM }, () => Math.random());
const queryAt = (i: number) => queries.subarray(i * DIM, (i + 1) * DIM);
const scans = new ExactScanner();
after(() => scans.close());

test("many queries in chunks find what each query alone finds", () => {
  // 70,000 rows x 40 queries is past one native call's bound: scored in chunks.
  const each = exactNearestEach(data, DIM, queries, 10, "euclidean");
  for (let i = 0; i < 40; i++)
    assert.deepEqual(
      each[i]?.map((f) => f.row),
      exactNearest(data, DIM, queryAt(i), 10, "euclidean"),
    );
  // A view further into its buffer, as rows of its own.
  const view = data.subarray(1000 * DIM);
  const fromView = exactNearestEach(view, DIM, queries, 5, "cosine");
  for (let i = 0; i < 40; i++)
    assert.deepEqual(
      fromView[i]?.map((f) => f.row + 1000),
      exactNearest(data.slice(1000 * DIM), DIM, queryAt(i), 5, "cosine").map((r) => r + 1000),
    );
});

test("the exact-scan thread skips masked rows and each query's excluded row", async () => {
  // Every third row is left out; query i excludes its own nearest row.
  const keep = (r: number) => r % 3 !== 0;
  const expected = Array.from({ length: 40 }, (_, i) => exactNearest(data, DIM, queryAt(i), 60, "euclidean").filter(keep).slice(0, 8));
  const exclude = Int32Array.from(expected, (e) => e[0] as number);
  let pieces = 0;
  const found = await scans.nearest({
    dim: DIM,
    metric: "euclidean",
    queries,
    k: 7,
    exclude,
    rows: ROWS,
    piece: (lo, hi) => {
      pieces++;
      const mask = new Uint8Array(hi - lo);
      for (let r = lo; r < hi; r++) mask[r - lo] = keep(r) ? 1 : 0;
      return { vecs: data.slice(lo * DIM, hi * DIM), mask };
    },
  });
  assert.ok(pieces > 1, "the rows were sent in one piece");
  for (const [i, f] of found.entries()) assert.deepEqual(f, expected[i]?.slice(1, 8), `query ${i}`);
  assert.equal(scans.scans, 1);
  // A scan its source stops is rejected, and the thread goes on serving the next one.
  await assert.rejects(scans.nearest({ dim: DIM, metric: "euclidean", queries, k: 3, rows: ROWS, piece: () => undefined }));
  const again = await scans.nearest({
    dim: DIM,
    metric: "euclidean",
    queries: queryAt(0).slice(),
    k: 3,
    rows: ROWS,
    piece: (lo, hi) => ({ vecs: data.slice(lo * DIM, hi * DIM), mask: new Uint8Array(hi - lo).fill(1) }),
  });
  assert.deepEqual(again, [exactNearest(data, DIM, queryAt(0), 3, "euclidean")]);
});
