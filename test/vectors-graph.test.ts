// The graph worker on its own (no service): messages apply in the order they were posted, and a
// saved graph loads back with the same answers. (A damaged file is never handed to usearch, which
// trusts it: the engine checks it against the size recorded when it was saved.)
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { type GraphParams, GraphWorker } from "../src/vectors/graph-worker.js";
import { gaussian, rng } from "./helpers/vectors-data.js";

const P: GraphParams = { dim: 8, metric: "euclidean", connectivity: 16, expansionAdd: 64, expansionSearch: 64, quantization: "f16" };
const workers: GraphWorker[] = [];
after(async () => {
  for (const w of workers) await w.close();
});

function points(n: number, seed: number): Float32Array {
  const g = gaussian(rng(seed));
  return Float32Array.from({ length: n * P.dim }, () => g());
}

const keys = (from: number, n: number) => BigUint64Array.from({ length: n }, (_, i) => BigInt(from + i));

test("a search posted after an add or a remove sees it; a saved graph answers the same after loading", async () => {
  const w = new GraphWorker();
  workers.push(w);
  const data = points(500, 1);
  await w.open("a", P);
  // Not awaited: the search below is posted after them and must still see both.
  void w.add("a", keys(0, 500), data.slice(), 1);
  const q = data.slice(7 * P.dim, 8 * P.dim);
  void w.remove("a", keys(7, 1));
  const found = await w.search("a", q, 5);
  assert.equal(found.keys.length, 5);
  assert.ok(!Array.from(found.keys).includes(7n), "a removed key was found");

  // Concurrent searches (answered in one batch call) each get their own answer.
  const many = await Promise.all([3, 11, 42, 99].map((i) => w.search("a", data.slice(i * P.dim, (i + 1) * P.dim), 1)));
  assert.deepEqual(
    many.map((m) => m.keys[0]),
    [3n, 11n, 42n, 99n],
  );

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "graph-"));
  try {
    const file = path.join(dir, "a.usearch");
    assert.equal(await w.save("a", file), 499);
    await w.drop("a");
    assert.equal(await w.open("b", P, file), 499);
    const again = await w.search("b", q, 5);
    assert.deepEqual(Array.from(again.keys), Array.from(found.keys));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
