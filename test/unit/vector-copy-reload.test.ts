// A copy of an index dropped (dropCopy, release) while it still loads, and the index used again at
// once on the same node (what a cluster node does when it stops answering for an owner and then
// becomes the owner): the new copy's graph is complete. The dropped copy's late clean-up used to
// drop the new copy's graph in the worker (both had the index id as their graph's name), and
// searches then missed every vector the graph should have held: a `top_k` search answered worse
// vectors than the best ones.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import type { IndexSpec } from "../../src/vectors/engine.js";
import { exactNearest } from "../../src/vectors/exact.js";
import { openEngine } from "../helpers/vector-engine.js";
import { index } from "../contract/vectors.js";

const DIM = 4;
const N = 60;
const spec: IndexSpec = { id: "idx_reload", dimension: DIM, metric: "euclidean" };

const row = (i: number) => Float32Array.of(Math.cos(i), Math.sin(i), (i % 7) / 7, 1);

for (const drop of ["dropCopy", "release"] as const) {
  test(`a copy dropped (${drop}) while it loads and the index used again at once: its searches are exact`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-copy-reload-"));
    try {
      let { store, engine } = openEngine(dir);
      const now = new Date().toISOString();
      await store.insertIndex(
        index(spec.id, "reload", { tenant_id: "t", dimension: DIM, metric: "euclidean", created_at: now, updated_at: now }),
      );
      engine.createIndex(spec);
      await engine.upsert(
        spec,
        Array.from({ length: N }, (_, i) => ({ id: `v${i}`, embedding: row(i), metadata: {}, delete_protection: false })),
      );
      // Another start, as a node that never held the index: its first use loads it from the records.
      await engine.close();
      await store.close();
      const reopened = openEngine(dir);
      ({ store, engine } = reopened);
      const logs = reopened.logs;
      const data = new Float32Array(N * DIM);
      for (let i = 0; i < N; i++) data.set(row(i), i * DIM);
      const exact = (q: Float32Array) => exactNearest(data, DIM, q, 3, "euclidean").map((j) => `v${j}`);

      const q = Float32Array.of(-1, 0.2, 1, 0);
      // The first use starts the load; the copy is dropped while it loads, and the next use opens another.
      const first = engine.search(spec, q, { topK: 3, includeValues: false, includeMetadata: false });
      const dropped = drop === "dropCopy" ? engine.dropCopy(spec) : engine.release(spec.id);
      const again = engine.search(spec, q, { topK: 3, includeValues: false, includeMetadata: false });
      await Promise.all([first, dropped, again]);
      // Every vector in the new copy's graph, its searches walk the graph: all of it is there.
      for (let i = 0; i < 1500 && engine.health(spec).status !== "ready"; i++) await new Promise((r) => setTimeout(r, 20));
      const failures = logs.filter((l) => /failed/.test(l.msg));
      assert.deepEqual(failures, [], "no load or graph operation failed");
      assert.equal(engine.health(spec).status, "ready");
      for (let i = 0; i < 20; i++) {
        const probe = Float32Array.of(Math.cos(i * 0.7) * 2, Math.sin(i * 1.3), (i % 5) / 3, i % 2);
        const hits = await engine.search(spec, probe, { topK: 3, includeValues: false, includeMetadata: false });
        assert.deepEqual(
          hits.map((h) => h.id),
          exact(probe),
          `query ${i}`,
        );
      }
      await engine.close();
      await store.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
