// The vectors file across restarts of the engine, on a real vectors database: after a graceful
// stop, searches while the index loads are answered from its vectors file, exactly, with every
// write acknowledged since (deletes, replacements, new vectors); a file older than the index's last
// write (as a crash leaves it) is used too, brought up to date with the writes after it, exactly;
// one that cannot be (its tombstones gone) is not, and the stored records answer. Deletes during
// the load leave the saved graph in use.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import type { IndexSpec } from "../../src/vectors/engine.js";
import { exactNearest } from "../../src/vectors/exact.js";
import { readVectorLog } from "../../src/vectors/vector-log.js";
import { type Logged, openEngine } from "../helpers/vector-engine.js";
import { clustered } from "../helpers/vectors-data.js";
import { index } from "../contract/vectors.js";

const DIM = 16;
const N = 10_000;
const spec: IndexSpec = { id: "idx_file", dimension: DIM, metric: "euclidean" };

const open = openEngine;

/** The exact top-10 over what `live` says the index holds (id -> row of `data`). */
function exactOver(data: Float32Array, live: Map<string, number>) {
  return (q: Float32Array) => {
    const ids = [...live.keys()];
    const packed = new Float32Array(ids.length * DIM);
    ids.forEach((id, j) => {
      packed.set(data.subarray((live.get(id) as number) * DIM, ((live.get(id) as number) + 1) * DIM), j * DIM);
    });
    return exactNearest(packed, DIM, q, 10, "euclidean").map((j) => ids[j]);
  };
}

const scanSource = (logs: Logged[]) => logs.find((l) => l.msg === "first search of a loading vector index answered")?.fields?.from;

test("while an index loads after a restart, searches read its vectors file with the writes since, exactly, also when the file is older than the index", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-file-restart-"));
  try {
    const data = clustered(N + 100, DIM, 20, 11);
    const row = (i: number) => data.slice(i * DIM, (i + 1) * DIM);
    const meta = (i: number) => ({ n: i, text: "metadata the scan of the file does not read ".repeat(4) });
    // What the index should hold: id -> row of `data`.
    const live = new Map<string, number>();
    const exact = exactOver(data, live);

    let { store, engine, logs } = open(dir);
    const now = new Date().toISOString();
    await store.insertIndex(
      index(spec.id, "file", { tenant_id: "t", dimension: DIM, metric: "euclidean", created_at: now, updated_at: now }),
    );
    engine.createIndex(spec);
    for (let b = 0; b < N / 1000; b++) {
      const batch = Array.from({ length: 1000 }, (_, j) => b * 1000 + j);
      await engine.upsert(
        spec,
        batch.map((i) => ({ id: `v${i}`, embedding: row(i), metadata: meta(i), delete_protection: false })),
      );
      for (const i of batch) live.set(`v${i}`, i);
    }
    // A graceful stop writes the vectors file.
    await engine.close();
    await store.close();
    const vectorsFile = path.join(dir, "vector-graphs", `${spec.id}.vectors`);
    assert.ok(fs.existsSync(vectorsFile), "no vectors file after a graceful stop");
    // The saved files as the graceful stop left them (a crash after the writes below leaves these).
    const graphs = path.join(dir, "vector-graphs");
    const savedGraphs = path.join(dir, "saved-graphs");
    fs.cpSync(graphs, savedGraphs, { recursive: true });

    // Restarted: writes at once (they start the load), then searches while it still loads.
    ({ store, engine, logs } = open(dir));
    // (The start checks the file in the background: one turn of the event loop.)
    await new Promise((r) => setImmediate(r));
    const q = row(N + 1);
    const nearest = exact(q);
    // The three nearest are deleted, the fourth replaced by a far vector, and two new ones near.
    assert.equal(await engine.delete(spec, nearest.slice(0, 3) as string[]), 3);
    for (const id of nearest.slice(0, 3)) live.delete(id as string);
    const replaced = nearest[3] as string;
    await engine.upsert(spec, [
      { id: replaced, embedding: row(N + 50), metadata: {}, delete_protection: false },
      { id: "new1", embedding: row(N + 2), metadata: {}, delete_protection: false },
      { id: "new2", embedding: row(N + 3), metadata: {}, delete_protection: false },
    ]);
    live.set(replaced, N + 50);
    live.set("new1", N + 2);
    live.set("new2", N + 3);
    // (The search is handed to the scanner in the same step as this check.)
    assert.equal(engine.health(spec).status, "loading", "the index loaded before the writes were acknowledged");
    const hits = await engine.search(spec, q, { topK: 10, includeValues: false, includeMetadata: true });
    assert.equal(scanSource(logs), "file", "the search while loading did not read the vectors file");
    assert.deepEqual(
      hits.map((h) => h.id),
      exact(q),
    );
    // Each hit's metadata as stored now.
    for (const h of hits) assert.deepEqual(h.metadata, h.id === replaced || h.id.startsWith("new") ? {} : meta(live.get(h.id) as number));
    // What a `kill -9` now would leave of the database (every write committed, none under way).
    const crashed = path.join(dir, "crashed");
    fs.mkdirSync(crashed);
    for (const f of ["vectors.db", "vectors.db-wal"]) fs.copyFileSync(path.join(dir, f), path.join(crashed, f));
    /** The data directory as that crash would have left it. */
    const crash = () => {
      fs.rmSync(graphs, { recursive: true });
      fs.cpSync(savedGraphs, graphs, { recursive: true });
      fs.rmSync(path.join(dir, "vectors.db-shm"), { force: true });
      for (const f of ["vectors.db", "vectors.db-wal"]) fs.copyFileSync(path.join(crashed, f), path.join(dir, f));
    };
    await engine.close();
    await store.close();
    // The deletes and the replacement during the load left the saved graph usable (before, a delete
    // of a record the loader had read already made the graph look inconsistent: it was rebuilt).
    const loaded = logs.find((l) => l.msg === "vector index loaded");
    assert.equal(loaded?.fields?.from_saved_graph, true, JSON.stringify(logs));

    // After that crash the file is from before the last writes: it is brought up to date with them
    // (the deletes, the replacement and the new vectors above).
    crash();
    ({ store, engine, logs } = open(dir));
    await new Promise((r) => setImmediate(r));
    // The first use starts the load: these searches are answered while it runs.
    for (const q2 of [q, row(N + 4)]) {
      const hits2 = await engine.search(spec, q2, { topK: 10, includeValues: false, includeMetadata: false });
      assert.deepEqual(
        hits2.map((h) => h.id),
        exact(q2),
      );
    }
    assert.equal(scanSource(logs), "file", `a vectors file older than the index was not used: ${JSON.stringify(logs)}`);
    const inUse = logs.find((l) => l.msg === "vectors file in use while the index loads")?.fields;
    assert.deepEqual([inUse?.written_since, inUse?.dropped_since], [3, 4], JSON.stringify(logs));
    await engine.close();
    await store.close();

    // Its tombstones gone (as a save by an older version pruned them): the sum does not add up,
    // the file is not used and the stored records answer, exactly.
    crash();
    const db = new Database(path.join(dir, "vectors.db"));
    db.prepare("DELETE FROM vector_tombstones").run();
    db.close();
    ({ store, engine, logs } = open(dir));
    await new Promise((r) => setImmediate(r));
    const q3 = row(N + 5);
    const hits3 = await engine.search(spec, q3, { topK: 10, includeValues: false, includeMetadata: false });
    assert.equal(scanSource(logs), "records", "a vectors file that does not add up was used");
    assert.ok(logs.some((l) => l.msg === "vectors file not used while the index loads"));
    assert.deepEqual(
      hits3.map((h) => h.id),
      exact(q3),
    );
    await engine.close();
    await store.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("after a kill -9 before an index's first save, searches while it loads read its log of acknowledged writes, exactly; a torn tail, or a corrupted entry and what follows it, is read from the database", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-log-restart-"));
  const crashed = fs.mkdtempSync(path.join(os.tmpdir(), "vector-log-crashed-"));
  const logSpec: IndexSpec = { id: "idx_log", dimension: DIM, metric: "euclidean" };
  try {
    const n = 3000;
    const data = clustered(n + 100, DIM, 20, 5);
    const row = (i: number) => data.slice(i * DIM, (i + 1) * DIM);
    const live = new Map<string, number>();
    const exact = exactOver(data, live);
    const { store, engine } = open(dir);
    const now = new Date().toISOString();
    await store.insertIndex(
      index(logSpec.id, "log", { tenant_id: "t", dimension: DIM, metric: "euclidean", created_at: now, updated_at: now }),
    );
    engine.createIndex(logSpec);
    for (let b = 0; b < 3; b++) {
      const batch = Array.from({ length: 1000 }, (_, j) => b * 1000 + j);
      await engine.upsert(
        logSpec,
        batch.map((i) => ({ id: `v${i}`, embedding: row(i), metadata: { i }, delete_protection: false })),
      );
      for (const i of batch) live.set(`v${i}`, i);
    }
    const q = row(n + 1);
    const near = exact(q);
    // A delete and a replacement of the query's nearest, and a new vector near it.
    assert.equal(await engine.delete(logSpec, near.slice(0, 2) as string[]), 2);
    for (const id of near.slice(0, 2)) live.delete(id as string);
    await engine.upsert(logSpec, [
      { id: near[2] as string, embedding: row(n + 50), metadata: {}, delete_protection: false },
      { id: "new", embedding: row(n + 2), metadata: {}, delete_protection: false },
    ]);
    live.set(near[2] as string, n + 50);
    live.set("new", n + 2);
    const graphs = path.join(dir, "vector-graphs");
    const log = path.join(graphs, `${logSpec.id}.vectors.log`);
    // The log is appended after each write is acknowledged, off the event loop: five batches.
    for (let i = 0; i < 1200 && readVectorLog(log, DIM).length < 5; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(readVectorLog(log, DIM).length, 5);
    assert.equal(fs.existsSync(path.join(graphs, `${logSpec.id}.vectors`)), false, "the index was saved: this is not the case tested");
    // A vector of the second batch still held as written: corrupted in the log's third case.
    const bad = Array.from({ length: 1000 }, (_, j) => 1000 + j).find((i) => live.get(`v${i}`) === i) as number;
    // What a kill -9 now leaves (every write committed, none under way), three times: whole, with
    // the log's last entry torn (as a crash while it was appended leaves it), and with one byte of
    // a vector in its second entry flipped (a corrupted entry: it and the ones after it are not
    // applied, the database gives those writes).
    for (const damage of ["none", "torn", "corrupted"] as const) {
      fs.rmSync(crashed, { recursive: true, force: true });
      fs.mkdirSync(crashed);
      for (const f of ["vectors.db", "vectors.db-wal"]) fs.copyFileSync(path.join(dir, f), path.join(crashed, f));
      fs.cpSync(graphs, path.join(crashed, "vector-graphs"), { recursive: true });
      const copied = path.join(crashed, "vector-graphs", `${logSpec.id}.vectors.log`);
      if (damage === "torn") fs.truncateSync(copied, fs.statSync(copied).size - 10);
      if (damage === "corrupted") {
        const buf = fs.readFileSync(copied);
        const at = buf.indexOf(Buffer.from(row(bad).buffer));
        assert.ok(at > 0, "the vector was not found in the log");
        buf[at + 2] = (buf[at + 2] as number) ^ 0x40;
        fs.writeFileSync(copied, buf);
      }
      const after = open(crashed);
      await new Promise((r) => setImmediate(r));
      for (const q2 of [q, row(n + 3), row(bad)]) {
        const hits = await after.engine.search(logSpec, q2, { topK: 10, includeValues: false, includeMetadata: false });
        assert.deepEqual(
          hits.map((h) => h.id),
          exact(q2),
        );
      }
      assert.equal(scanSource(after.logs), "file", `the log was not used: ${JSON.stringify(after.logs)}`);
      const inUse = after.logs.find((l) => l.msg === "vectors file in use while the index loads")?.fields;
      // Whole: every write from the log; torn: the last entry (the replacement and the new vector)
      // from the database; corrupted: the first entry only from the log.
      if (damage === "corrupted") assert.equal(inUse?.logged, 1000, JSON.stringify(inUse));
      else assert.deepEqual([inUse?.logged, inUse?.written_since], damage === "torn" ? [3002, 2] : [3004, 0], JSON.stringify(inUse));
      await after.engine.close();
      await after.store.close();
    }
    await engine.close();
    await store.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(crashed, { recursive: true, force: true });
  }
});
