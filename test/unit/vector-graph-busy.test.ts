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

test("a search of a graph during its own long insertion is answered between the insertion's slices, not after it", async () => {
  const n = 20_000;
  const data = clustered(n + 1, DIM, 10, 11);
  await graphs.open("own", { dim: DIM, metric: "euclidean", connectivity: 16, expansionAdd: 64, expansionSearch: 32, quantization: "f32" });
  await graphs.add("own", BigUint64Array.of(0n), data.slice(0, DIM), 2);
  const keys = BigUint64Array.from({ length: n - 1 }, (_, i) => BigInt(i + 1));
  const inserted = graphs.add("own", keys, data.slice(DIM, n * DIM), 2).then(() => "the insertion");
  // Posted after the insertion, to the same graph: before, it waited for all of it.
  const searched = graphs.search("own", data.slice(n * DIM), 5).then(() => "the search");
  assert.equal(await Promise.race([searched, inserted]), "the search");
  await inserted;
  await graphs.drop("own");
});

/** The graph worker, noting which keys are on their way into a graph (sent, not acknowledged). */
class Recording extends GraphWorker {
  readonly sending = new Set<bigint>();
  override add(graph: string, keys: BigUint64Array, data: Float32Array, threads: number) {
    const mine = [...keys];
    for (const k of mine) this.sending.add(k);
    return super.add(graph, keys, data, threads).finally(() => {
      for (const k of mine) this.sending.delete(k);
    });
  }
}

test("a vector on its way into the graph (sent, not inserted yet) is found by a search answered between the insertion's slices", async () => {
  const recording = new Recording();
  after(() => recording.close());
  const n = 6000;
  const data = clustered(n, DIM, 10, 13);
  const c = new Collection(DIM, "euclidean", recording, "selves");
  await c.openGraph();
  c.startIndexing();
  for (let i = 0; i < n; i++) c.put(i, `v${i}`, data.subarray(i * DIM, (i + 1) * DIM), {}, i + 1, false);
  // Each vector's nearest is itself (distance 0). The graph may not find every vector it holds
  // (an approximation), so the searches are for vectors it does not hold yet: the last of an
  // insertion under way, which the worker answers between the insertion's slices.
  let searched = 0;
  while (c.pendingCount() > 0 || recording.sending.size > 0) {
    const last = [...recording.sending].at(-1);
    if (last === undefined) {
      await new Promise((r) => setImmediate(r));
      continue;
    }
    const i = Number(last);
    const [hit] = await c.search(data.subarray(i * DIM, (i + 1) * DIM), 1, undefined, false, false);
    assert.deepEqual([hit?.id, hit?.score], [`v${i}`, 0]);
    searched++;
  }
  assert.ok(searched > 50, `searches for vectors on their way: ${searched}`);
  c.close();
});
