// Filtered searches of an index whose records are still loading after a restart, on a real vectors
// database: answered from its vectors file (the metadata of its nearest vectors read from the
// database until top_k match), exactly, for a broad filter and for one that matches a single
// vector (every vector is looked at then).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import type { IndexSpec } from "../../src/vectors/engine.js";
import { exactNearest } from "../../src/vectors/exact.js";
import { compileFilter, type Metadata, type Predicate } from "../../src/vectors/filter.js";
import { openEngine } from "../helpers/vector-engine.js";
import { clustered } from "../helpers/vectors-data.js";
import { index } from "../contract/vectors.js";

const DIM = 16;
const N = 3000;
const spec: IndexSpec = { id: "idx_filter", dimension: DIM, metric: "euclidean" };

const open = openEngine;

test("while an index loads after a restart, filtered searches are answered from its vectors file, exactly", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-file-filter-"));
  try {
    const data = clustered(N + 10, DIM, 20, 3);
    const row = (i: number) => data.slice(i * DIM, (i + 1) * DIM);
    const meta = (i: number): Metadata => ({ n: i, g: i % 10 });
    const first = open(dir);
    const now = new Date().toISOString();
    await first.store.insertIndex(
      index(spec.id, "filter", { tenant_id: "t", dimension: DIM, metric: "euclidean", created_at: now, updated_at: now }),
    );
    first.engine.createIndex(spec);
    for (let b = 0; b < N / 1000; b++) {
      const batch = Array.from({ length: 1000 }, (_, j) => b * 1000 + j);
      await first.engine.upsert(
        spec,
        batch.map((i) => ({ id: `v${i}`, embedding: row(i), metadata: meta(i), delete_protection: false })),
      );
    }
    // A graceful stop writes the vectors file.
    await first.engine.close();
    await first.store.close();
    assert.ok(fs.existsSync(path.join(dir, "vector-graphs", `${spec.id}.vectors`)));

    /** The exact top-10 of the vectors whose metadata matches. */
    const exact = (q: Float32Array, filter: unknown) => {
      const pred = compileFilter(filter) as (m: Metadata) => boolean;
      const ids = Array.from({ length: N }, (_, i) => i).filter((i) => pred(meta(i)));
      const packed = new Float32Array(ids.length * DIM);
      ids.forEach((i, j) => {
        packed.set(row(i), j * DIM);
      });
      return exactNearest(packed, DIM, q, 10, "euclidean").map((j) => `v${ids[j]}`);
    };
    for (const filter of [{ g: { $in: [3, 7] } }, { n: 1234 }]) {
      // Restarted: the first search (filtered) starts the load and is answered while it runs.
      const { store, engine, logs } = open(dir);
      await new Promise((r) => setImmediate(r));
      const q = row(N + 1);
      const hits = await engine.search(spec, q, {
        topK: 10,
        filter: { doc: filter, predicate: compileFilter(filter) as Predicate },
        includeValues: false,
        includeMetadata: true,
      });
      const source = logs.find((l) => l.msg === "first search of a loading vector index answered")?.fields?.from;
      assert.equal(source, "file", `the filtered search while loading did not read the vectors file: ${JSON.stringify(logs)}`);
      assert.deepEqual(
        hits.map((h) => h.id),
        exact(q, filter),
      );
      for (const h of hits) assert.deepEqual(h.metadata, meta(Number(h.id.slice(1))));
      await engine.close();
      await store.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
