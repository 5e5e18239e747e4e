// One graph worker holds every index's graph and handles its messages in order: while it does long
// work for one index (a rebuild's insertions, a graph loaded from its file after a restart), a small
// index's searches are answered exactly at once instead of waiting behind it.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Collection } from "../../src/vectors/collection.js";
import { exactNearest } from "../../src/vectors/exact.js";
import { GraphWorker } from "../../src/vectors/graph-worker.js";
import { clustered } from "../helpers/vectors-data.js";

const DIM = 16;
const SMALL = 2000;
const LARGE = 10_000;
const graphs = new GraphWorker();
after(() => graphs.close());

test("a small index's search does not wait behind another index's long insertion in the graph worker, and is exact", async () => {
  const data = clustered(SMALL + LARGE + 10, DIM, 10, 9);
  const small = new Collection(DIM, "euclidean", graphs, "small");
  await small.openGraph();
  small.startIndexing();
  for (let i = 0; i < SMALL; i++) small.put(i, `s${i}`, data.subarray(i * DIM, (i + 1) * DIM), {}, i + 1, false);
  for (let i = 0; i < 500 && small.pendingCount() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(small.pendingCount(), 0);
  assert.equal(small.building, false);

  // Another index's large insertion (as its rebuild after a crash sends them), then the search.
  const large = new Collection(DIM, "euclidean", graphs, "large");
  await large.openGraph();
  const keys = BigUint64Array.from({ length: LARGE }, (_, i) => BigInt(i));
  const inserted = graphs.add("large", keys, data.slice(SMALL * DIM, (SMALL + LARGE) * DIM), 2).then(() => "the insertion");
  assert.equal(graphs.busyWithOthers("small"), true);
  assert.equal(graphs.busyWithOthers("large"), false);
  const q = data.slice((SMALL + LARGE + 1) * DIM, (SMALL + LARGE + 2) * DIM);
  const searched = small.search(q, 10, undefined, false, false);
  // (Before, the search was posted to the worker behind the insertion and answered after it.)
  assert.equal(await Promise.race([searched.then(() => "the search"), inserted]), "the search");
  assert.deepEqual(
    (await searched).map((h) => h.id),
    exactNearest(data.subarray(0, SMALL * DIM), DIM, q, 10, "euclidean").map((i) => `s${i}`),
  );
  await inserted;
  assert.equal(graphs.busyWithOthers("small"), false);
  small.close();
  large.close();
});
