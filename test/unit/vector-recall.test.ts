// Recall an index can see and set (collection.ts, recall.ts) with the real graph worker: on the
// benchmark's data and on hard clustered data (points spread around their centres three times as
// widely as the centres lie apart: the fixed width of 48 found 0.86 of the true neighbours), the index measures its recall, widens its search to reach its target,
// and held-out queries then reach it against exact search. Exact searches are exact. The exact
// answers of the measurement come from the exact-scan thread, not from scans on the event loop.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Collection } from "../../src/vectors/collection.js";
import { exactNearest } from "../../src/vectors/exact.js";
import { ExactScanner } from "../../src/vectors/exact-scan.js";
import { GraphWorker } from "../../src/vectors/graph-worker.js";
import { clustered, mixture } from "../helpers/vectors-data.js";

const graphs = new GraphWorker();
const scans = new ExactScanner();
after(() => Promise.all([graphs.close(), scans.close()]));

const N = 20_000;
const DIM = 64;
const QUERIES = 200;

async function filled(id: string, data: Float32Array, target: number): Promise<Collection> {
  const c = new Collection(DIM, "euclidean", graphs, id, undefined, 0, scans);
  c.targetRecall = target;
  await c.openGraph();
  c.startIndexing();
  for (let i = 0; i < N; i++) c.put(i, `v${i}`, data.subarray(i * DIM, (i + 1) * DIM), {}, i + 1, false);
  // Built, then measured (the measurement starts when the queue empties).
  for (let i = 0; i < 6000 && (c.pendingCount() > 0 || c.recall === undefined); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(c.pendingCount(), 0, "the graph was not built in time");
  assert.ok(c.recall, "recall was not measured");
  return c;
}

async function recallAt10(
  c: Collection,
  data: Float32Array,
  queries: Float32Array,
  how: { exact?: boolean; width?: number } = {},
): Promise<number> {
  let hit = 0;
  for (let q = 0; q < QUERIES; q++) {
    const query = queries.subarray(q * DIM, (q + 1) * DIM);
    const truth = new Set(exactNearest(data, DIM, query, 10, "euclidean").map((r) => `v${r}`));
    for (const h of await c.search(query, 10, undefined, false, false, how)) if (truth.has(h.id)) hit++;
  }
  return hit / (QUERIES * 10);
}

for (const kind of ["benchmark mixture", "hard clusters"] as const) {
  test(`${kind}: the index measures its recall and keeps recall@10 at its target`, async () => {
    const all =
      kind === "hard clusters"
        ? clustered(N + QUERIES, DIM, 40, 7, 3)
        : (() => {
            const m = mixture(N, DIM, 11, QUERIES);
            const out = new Float32Array((N + QUERIES) * DIM);
            out.set(m.data);
            out.set(m.queries, N * DIM);
            return out;
          })();
    const data = all.subarray(0, N * DIM);
    const queries = all.subarray(N * DIM);
    const before = scans.scans;
    const c = await filled(kind, data, 0.97);
    // Two scans per measurement (the sample's nearest neighbours, then the queries' top 10), and
    // none of them on this thread.
    assert.ok(scans.scans - before >= 2, `the measurement ran ${scans.scans - before} scans on the exact-scan thread`);
    const measured = c.recall as NonNullable<typeof c.recall>;
    const got = await recallAt10(c, data, queries);
    // For the record: what the old fixed width gives on this data.
    const at48 = await recallAt10(c, data, queries, { width: 48 });
    console.log(kind, { width: c.width, estimated: measured.recall, heldOut: got, at48, tried: measured.tried });
    assert.ok(measured.recall >= 0.97, `estimated recall ${measured.recall} at width ${c.width}`);
    assert.ok(got >= 0.96, `held-out recall@10 ${got} at width ${c.width} (estimated ${measured.recall})`);
    assert.equal(await recallAt10(c, data, queries, { exact: true }), 1, "an exact search missed a true neighbour");
    c.close();
  });
}
