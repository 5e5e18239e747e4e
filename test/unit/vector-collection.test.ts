// One index's in-memory side (collection.ts) with the real graph worker: memory follows the live
// vectors, not the labels ever given out (a replaced or deleted vector's slot is reused), and a
// reused slot never shows the vector that held it before, in the graph or out of it.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Collection } from "../../src/vectors/collection.js";
import { GraphWorker } from "../../src/vectors/graph-worker.js";

const graphs = new GraphWorker();
after(() => graphs.close());

async function open(id: string): Promise<Collection> {
  const c = new Collection(4, "euclidean", graphs, id);
  await c.openGraph();
  c.startIndexing();
  return c;
}

const settle = async (c: Collection) => {
  for (let i = 0; i < 200 && c.pendingCount() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(c.pendingCount(), 0);
};

test("replacing one vector again and again keeps one slot, not one per label", async () => {
  const c = await open("churn");
  let seq = 0;
  for (let label = 0; label < 5000; label++) {
    // What an upsert of the same id does: the new version gets a new label, the old one is dropped.
    if (label > 0) c.drop(label - 1, ++seq);
    c.put(label, "same", Float32Array.of(label, 0, 0, 0), { v: label }, ++seq, false);
  }
  assert.equal(c.liveCount, 1);
  assert.ok(c.slotsUsed() <= 2, `slots used: ${c.slotsUsed()}`);
  await settle(c);
  const [hit] = await c.search(Float32Array.of(0, 0, 0, 0), 5, undefined, true, true);
  assert.deepEqual(hit, { id: "same", score: 4999, values: [4999, 0, 0, 0], metadata: { v: 4999 } });
});

test("a reused slot holds only its new vector, whether it is in the graph yet or not", async () => {
  const c = await open("reuse");
  c.put(0, "a", Float32Array.of(1, 0, 0, 0), { n: "a" }, 1, false);
  c.put(1, "b", Float32Array.of(0, 1, 0, 0), { n: "b" }, 2, false);
  await settle(c);
  c.drop(0, 3);
  // "c" takes the slot "a" had; it is scored exactly until it joins the graph, then found there.
  c.put(2, "c", Float32Array.of(0, 0, 1, 0), { n: "c" }, 4, false);
  assert.equal(c.slotsUsed(), 2);
  for (const when of ["pending", "in the graph"]) {
    const hits = await c.search(Float32Array.of(1, 0, 0, 0), 10, undefined, false, true);
    assert.deepEqual(
      hits.map((h) => [h.id, h.metadata]).sort(),
      [
        ["b", { n: "b" }],
        ["c", { n: "c" }],
      ],
      when,
    );
    const filtered = await c.search(Float32Array.of(1, 0, 0, 0), 10, (m) => m?.n === "a", false, false);
    assert.deepEqual(filtered, [], `${when}: nothing of "a" is left`);
    await settle(c);
  }
  c.setMetadata(0, { n: "stale" }); // the dropped label: no effect on the slot's new vector
  const [only] = await c.search(Float32Array.of(0, 0, 1, 0), 1, undefined, false, true);
  assert.deepEqual(only?.metadata, { n: "c" });
});

test("records loaded settles when the records are applied, before any graph is open, and searches are exact then", async () => {
  // What a start does (embedded.ts): records load while the saved graph loads in the worker.
  const c = new Collection(4, "euclidean", graphs, "records-first");
  c.beginLoad();
  c.graphOpen = false;
  let settled = false;
  void c.recordsLoaded.then(() => {
    settled = true;
  });
  c.load(0, "a", Float32Array.of(1, 0, 0, 0), {}, 1, false);
  c.load(1, "b", Float32Array.of(0, 1, 0, 0), {}, 2, false);
  // A write made while loading is applied after the records.
  c.put(2, "c", Float32Array.of(0.9, 0, 0, 0), {}, 3, false);
  await new Promise((r) => setImmediate(r));
  assert.equal(settled, false, "searches wait while records load");
  c.endLoad();
  await c.recordsLoaded;
  assert.ok(c.building, "no graph yet: searches are exact");
  const hits = await c.search(Float32Array.of(1, 0, 0, 0), 2, undefined, false, false);
  assert.deepEqual(
    hits.map((h) => h.id),
    ["a", "c"],
  );
  c.close();
});

test("a load that stops before its records are read fails the searches waiting for it", async () => {
  const c = new Collection(4, "euclidean", graphs, "records-failed");
  c.beginLoad();
  c.failLoad(new Error("dropped"));
  await assert.rejects(c.recordsLoaded, /dropped/);
  c.close();
});

test("past its bound on vectors waiting for the graph, an index makes writes wait until the graph caught up, and every vector stays searchable", async () => {
  const c = await open("bounded");
  c.maxUnindexed = 50;
  let seq = 0;
  // What an upsert does: wait for room, then write its batch.
  const batch = async (from: number) => {
    await c.room();
    for (let l = from; l < from + 100; l++) c.put(l, `v${l}`, Float32Array.of(l, 0, 0, 0), {}, ++seq, false);
  };
  await batch(0);
  assert.ok(c.pendingCount() >= 50, `${c.pendingCount()} waiting`);
  // The next batch waits (the graph takes them a chunk at a time)...
  let second = false;
  const next = batch(100).then(() => {
    second = true;
  });
  await Promise.resolve();
  assert.equal(second, false, "a write past the bound waited");
  // ...while every vector already written is found, exactly.
  const [hit] = await c.search(Float32Array.of(42, 0, 0, 0), 1, undefined, false, false);
  assert.equal(hit?.id, "v42");
  await next;
  assert.ok(c.pendingCount() <= 150, `${c.pendingCount()} waiting`);
  await settle(c);
  const [after] = await c.search(Float32Array.of(150, 0, 0, 0), 1, undefined, false, false);
  assert.equal(after?.id, "v150");
  assert.equal(c.liveCount, 200);
  c.close();
});

test("a closed index lets writes waiting for room go (they fail at the store, not hang)", async () => {
  const c = await open("bounded-close");
  c.maxUnindexed = 1;
  c.put(0, "a", Float32Array.of(0, 0, 0, 0), {}, 1, false);
  c.put(1, "b", Float32Array.of(1, 0, 0, 0), {}, 2, false);
  const waiting = c.room();
  c.close();
  await waiting;
});

test("vectors waiting for the graph are found exactly, with deleted and replaced ones among the nearest", async () => {
  // Not indexing: every vector stays queued, scored by the queue's one SIMD pass.
  const c = new Collection(4, "euclidean", graphs, "queued");
  await c.openGraph();
  let seq = 0;
  const at = (x: number) => Float32Array.of(x, x % 7, 0, 1);
  for (let l = 0; l < 500; l++) c.put(l, `v${l}`, at(l), {}, ++seq, false);
  // The 40 nearest to the query (0..39) go: 30 deleted, 10 replaced by far-off vectors under new
  // labels (the replacements take the freed slots, and the old entries stay in the queue).
  for (let l = 0; l < 30; l++) c.drop(l, ++seq);
  for (let l = 30; l < 40; l++) {
    c.drop(l, ++seq);
    c.put(1000 + l, `v${l}`, at(10_000 + l), {}, ++seq, false);
  }
  assert.equal(c.pendingCount(), 510);
  const q = Float32Array.of(0, 0, 0, 1);
  const queued = await c.search(q, 10, undefined, false, false);
  const exact = await c.search(q, 10, undefined, false, false, { exact: true });
  assert.deepEqual(queued, exact);
  assert.deepEqual(
    queued.map((h) => h.id),
    Array.from({ length: 10 }, (_, i) => `v${40 + i}`),
  );
  // Once indexing, the queue's head leaves for the graph while searches go on: always the same answer.
  c.startIndexing();
  while (c.pendingCount() > 0) {
    assert.deepEqual(await c.search(q, 10, undefined, false, false), exact);
    await new Promise((r) => setTimeout(r, 1));
  }
  c.close();
});
