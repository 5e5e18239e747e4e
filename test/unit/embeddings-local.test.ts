// The built-in embedding model's worker: it loads the model as soon as it is started, and a batch
// sent while it loads waits for the load instead of failing (what a request that arrives during the
// preload at start sees). Runs the real model shipped in its npm package.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_EMBEDDING_DIMENSIONS, LocalEmbedder } from "../../src/inference/embeddings-local.js";

test("batches sent during the load wait for it; the model is loaded once", async () => {
  const e = new LocalEmbedder();
  try {
    const loading = e.load();
    assert.equal(e.loaded(), false);
    assert.equal(e.load(), loading, "a second load() is the same load");
    const [a, b] = await Promise.all([e.embed(["hello world"]), e.embed(["one", "two"])]);
    assert.equal(e.loaded(), true);
    assert.equal(a.length, 1);
    assert.equal(b.length, 2);
    for (const v of [...a, ...b]) assert.equal(v.length, DEFAULT_EMBEDDING_DIMENSIONS);
    assert.notDeepEqual(Array.from(b[0] as Float32Array), Array.from(b[1] as Float32Array));
  } finally {
    await e.close();
  }
  assert.equal(e.loaded(), false);
});
