// An index meets its recall target on data it has not seen: held-out queries, recall@10 against
// exact search, on the benchmark's kind of data and on hard Gaussian clusters (points spread three
// times as widely as the centres lie apart), 10,000 × 64 each; and it reports the recall it measured
// on itself. The size is the smallest at which the hard data needs the adapted width: there the old
// fixed search width of 48 misses the target (0.934 at 10,000; 0.855 at 50,000), which the test
// checks too. The benchmark (npm run bench:vectors) measures 50,000 and more.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { exactNearest } from "../src/vectors/exact.js";
import { eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { clustered, mixture } from "./helpers/vectors-data.js";

const N = 10_000;
const DIM = 64;
const QUERIES = 200;
const BATCH = 1000;
const TARGET = 0.97;
/** The fixed search width before indexes adapted theirs. */
const OLD_WIDTH = 48;

interface IndexView {
  status: string;
  search_width: number;
  target_recall: number;
  estimated_recall: number | null;
}

let server: TestServer;
before(async () => {
  // This file starts no sandbox: no warm pool (its two sandboxes would take ~1.5 s of CPU from the tests).
  server = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
});
after(async () => {
  await server.dispose();
});

const row = (a: Float32Array, i: number) => Array.from(a.subarray(i * DIM, (i + 1) * DIM));

/** Loads `data`, waits for the index to measure itself, and returns held-out recall@10 (at the
 * index's own width, and at the old fixed width) and what it reported. */
async function heldOutRecall(
  name: string,
  data: Float32Array,
  queries: Float32Array,
): Promise<{ recall: number; oldWidthRecall: number; view: IndexView }> {
  const call = client(server);
  const created = await call<{ id: string }>("POST", "/v1/vectors/indexes", { name, dimension: DIM, metric: "euclidean" });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const id = created.body.id;
  for (let b = 0; b < N / BATCH; b++) {
    const vectors = Array.from({ length: BATCH }, (_, j) => ({ id: String(b * BATCH + j), embedding: row(data, b * BATCH + j) }));
    assert.equal((await call("POST", `/v1/vectors/${id}/batch`, { vectors })).status, 200);
  }
  let view: IndexView | undefined;
  const measured = await eventually(
    async () => {
      view = (await call<IndexView>("GET", `/v1/vectors/indexes/${id}`)).body;
      return view.status === "ready" && view.estimated_recall !== null;
    },
    300_000,
    250,
  );
  assert.ok(measured, `the index never measured its recall: ${JSON.stringify(view)}`);
  let hits = 0;
  let oldWidthHits = 0;
  for (let q = 0; q < QUERIES; q++) {
    const query = queries.subarray(q * DIM, (q + 1) * DIM);
    const truth = new Set(exactNearest(data, DIM, query, 10, "euclidean"));
    for (const width of [undefined, OLD_WIDTH]) {
      const res = await call<{ hits: Array<{ id: string }> }>("POST", `/v1/vectors/${id}/search`, {
        vector: Array.from(query),
        top_k: 10,
        search_width: width,
      });
      assert.equal(res.status, 200);
      const found = res.body.hits.filter((h) => truth.has(Number(h.id))).length;
      if (width === undefined) hits += found;
      else oldWidthHits += found;
    }
  }
  await call("DELETE", `/v1/vectors/indexes/${id}`);
  return { recall: hits / (QUERIES * 10), oldWidthRecall: oldWidthHits / (QUERIES * 10), view: view as IndexView };
}

for (const [kind, hard, make] of [
  ["the benchmark's mixture (spread decaying over the dimensions)", false, () => mixture(N, DIM, 5, QUERIES)],
  [
    "40 Gaussian clusters whose points spread 3× as widely as the centres lie apart",
    true,
    () => {
      const all = clustered(N + QUERIES, DIM, 40, 6, 3);
      return { data: all.slice(0, N * DIM), queries: all.slice(N * DIM) };
    },
  ],
] as const) {
  test(`recall@10 of held-out queries meets the default target (${TARGET}) on ${kind}, ${N.toLocaleString("en")} × ${DIM}`, async () => {
    const { data, queries } = make();
    const { recall, oldWidthRecall, view } = await heldOutRecall(kind.slice(0, 40).replace(/[^a-z0-9]+/gi, "-"), data, queries);
    console.log({ kind, recall, oldWidthRecall, view });
    // On the hard data the old fixed width misses the target at this size: meeting it is the
    // adapted width's doing, not the size's.
    if (hard) assert.ok(oldWidthRecall < TARGET, `the data is not hard enough at this size: ${oldWidthRecall} at width ${OLD_WIDTH}`);
    assert.equal(view.target_recall, TARGET);
    assert.ok((view.estimated_recall as number) >= TARGET, `the index's own estimate is under its target: ${JSON.stringify(view)}`);
    assert.ok(
      recall >= TARGET,
      `held-out recall@10 ${recall} at width ${view.search_width} (the index estimated ${view.estimated_recall})`,
    );
  });
}
