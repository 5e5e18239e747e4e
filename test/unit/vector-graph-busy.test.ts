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

test("a search goes before the insertions queued ahead of it in the graph worker, never before another operation", async () => {
  const data = clustered(4000, DIM, 10, 11);
  await graphs.open("order", {
    dim: DIM,
    metric: "euclidean",
    connectivity: 16,
    expansionAdd: 64,
    expansionSearch: 16,
    quantization: "f32",
  });
  await graphs.add(
    "order",
    BigUint64Array.from({ length: 1000 }, (_, i) => BigInt(i)),
    data.slice(0, 1000 * DIM),
    2,
  );
  const done: string[] = [];
  const add = (from: number, to: number) =>
    graphs.add(
      "order",
      BigUint64Array.from({ length: to - from }, (_, i) => BigInt(from + i)),
      data.slice(from * DIM, to * DIM),
      2,
    );
  const q = data.slice(0, DIM);
  const all = [
    add(1000, 2000).then(() => done.push("add 1")),
    add(2000, 3000).then(() => done.push("add 2")),
    graphs.search("order", q, 10).then(() => done.push("search 1")),
    graphs.remove("order", BigUint64Array.of(0n)).then(() => done.push("remove")),
    graphs.search("order", q, 10).then((m) => {
      done.push("search 2");
      return m;
    }),
  ];
  const [, , , , afterRemove] = await Promise.all(all);
  // (Before, every message was handled in the order posted: the search after both insertions.)
  assert.ok(done.indexOf("search 1") < done.indexOf("add 2"), done.join(", "));
  // The second search was posted after the removal: it runs after it, and does not find the removed key.
  assert.ok(done.indexOf("search 2") > done.indexOf("remove"), done.join(", "));
  assert.ok(!Array.from((afterRemove as { keys: BigUint64Array }).keys).includes(0n));
  await graphs.drop("order");
});
