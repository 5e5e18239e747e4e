// The embedded vector engine: records in SQLite (store.ts, the source of truth), search in memory
// (collection.ts). A write is committed to SQLite first and only then applied in memory, so an
// acknowledged write survives kill -9. Each index's graph is saved on shutdown (and every few
// minutes when it changed); on start it is loaded, brought up to date from the writes after it,
// and checked against the record count; any doubt and it is rebuilt from the records.
import fs from "node:fs";
import path from "node:path";
import { Collection } from "./collection.js";
import type { Hit, IndexSpec, NewVector, SearchOptions, VectorEngine, VectorRecord } from "./engine.js";
import type { Metadata } from "./filter.js";
import type { RecordRow, VectorDb } from "./store.js";

const SAVE_EVERY_MS = 5 * 60_000;

function toRecord(row: RecordRow): VectorRecord {
  const f = new Float32Array(row.embedding.buffer.slice(row.embedding.byteOffset, row.embedding.byteOffset + row.embedding.byteLength));
  return {
    id: row.id,
    embedding: Array.from(f),
    metadata: JSON.parse(row.metadata) as Metadata,
    delete_protection: row.delete_protection === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export class EmbeddedEngine implements VectorEngine {
  private readonly open = new Map<string, Collection>();
  private readonly dir: string;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: VectorDb,
    dataDir: string,
    private readonly log: (msg: string, fields?: Record<string, unknown>) => void = () => {},
  ) {
    this.dir = path.join(dataDir, "vector-graphs");
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.timer = setInterval(() => this.saveAll(false), SAVE_EVERY_MS);
    this.timer.unref();
  }

  private files(indexId: string): { graph: string; state: string } {
    return { graph: path.join(this.dir, `${indexId}.usearch`), state: path.join(this.dir, `${indexId}.json`) };
  }

  /** The index's collection, loaded on first use. */
  private coll(spec: IndexSpec): Collection {
    let c = this.open.get(spec.id);
    if (!c) {
      c = this.load(spec);
      this.open.set(spec.id, c);
    }
    return c;
  }

  /** Loads every record, and the saved graph when it is consistent with them. */
  private load(spec: IndexSpec): Collection {
    const started = performance.now();
    const c = new Collection(spec.dimension, spec.metric, this.store.nextLabel(spec.id));
    const { graph, state } = this.files(spec.id);
    let upTo = -1;
    let haveGraph = false;
    try {
      const saved = JSON.parse(fs.readFileSync(state, "utf8")) as { upTo: number; dimension: number; metric: string };
      if (saved.dimension === spec.dimension && saved.metric === spec.metric && fs.existsSync(graph)) {
        c.loadGraph(graph);
        upTo = saved.upTo;
        haveGraph = true;
      }
    } catch {
      // no saved graph (new index, or never shut down cleanly): built from the records
    }
    let inGraph = 0;
    for (const row of this.store.iterate(spec.id)) {
      const e = row.embedding;
      // A view when the bytes are 4-aligned (the usual case), else a copy.
      const vec =
        e.byteOffset % 4 === 0
          ? new Float32Array(e.buffer, e.byteOffset, e.byteLength / 4)
          : new Float32Array(e.buffer.slice(e.byteOffset, e.byteOffset + e.byteLength));
      const already = haveGraph && row.seq <= upTo;
      if (already) inGraph++;
      c.put(row.label, row.id, vec, JSON.parse(row.metadata) as Metadata, row.seq, already);
    }
    if (haveGraph) {
      // Deletes and replacements after the save: their labels leave the graph.
      for (const label of this.store.tombstonesAfter(spec.id, upTo)) c.drop(label, 0);
      if (c.graphSize() !== inGraph) {
        this.log("vector graph does not match the records; rebuilding it", { index: spec.id, graph: c.graphSize(), records: inGraph });
        c.rebuildGraph();
      }
    }
    c.seq = Math.max(c.seq, this.store.seq(spec.id));
    c.dirty = !haveGraph;
    this.log("vector index loaded", {
      index: spec.id,
      vectors: c.liveCount,
      from_saved_graph: haveGraph,
      queued_for_graph: c.pendingCount(),
      ms: Math.round(performance.now() - started),
    });
    return c;
  }

  /** Loads every index now (called after start so the first search does not pay for it). */
  warm(specs: IndexSpec[]): void {
    for (const s of specs) this.coll(s);
  }

  createIndex(spec: IndexSpec): void {
    this.open.set(spec.id, new Collection(spec.dimension, spec.metric));
  }

  dropIndex(spec: IndexSpec): void {
    this.open.get(spec.id)?.close();
    this.open.delete(spec.id);
    const { graph, state } = this.files(spec.id);
    fs.rmSync(state, { force: true });
    fs.rmSync(graph, { force: true });
  }

  upsert(spec: IndexSpec, vectors: NewVector[]): void {
    const c = this.coll(spec);
    const written = this.store.upsert(spec.id, vectors);
    written.forEach((w, i) => {
      const v = vectors[i] as NewVector;
      if (w.replaced !== undefined) c.drop(w.replaced, w.seq);
      c.put(w.label, w.id, v.embedding, v.metadata, w.seq, false);
    });
  }

  delete(spec: IndexSpec, ids: string[]): number {
    const c = this.coll(spec);
    const gone = this.store.delete(spec.id, ids);
    for (const g of gone) c.drop(g.label, g.seq);
    return gone.length;
  }

  fetch(spec: IndexSpec, ids: string[]): VectorRecord[] {
    const out: VectorRecord[] = [];
    for (const id of ids) {
      const row = this.store.get(spec.id, id);
      if (row) out.push(toRecord(row));
    }
    return out;
  }

  list(spec: IndexSpec, offset: number, limit: number): { vectors: VectorRecord[]; total: number } {
    return { vectors: this.store.list(spec.id, limit, offset).map(toRecord), total: this.store.count(spec.id) };
  }

  update(spec: IndexSpec, id: string, change: { metadata?: Metadata; delete_protection?: boolean }): VectorRecord | undefined {
    const row = this.store.get(spec.id, id);
    if (!row) return undefined;
    const metadata = change.metadata ?? (JSON.parse(row.metadata) as Metadata);
    const protect = change.delete_protection ?? row.delete_protection === 1;
    this.store.updateVector(spec.id, id, JSON.stringify(metadata), protect, new Date().toISOString());
    this.coll(spec).setMetadata(row.label, metadata);
    const after = this.store.get(spec.id, id);
    return after ? toRecord(after) : undefined;
  }

  search(spec: IndexSpec, query: Float32Array, opts: SearchOptions): Hit[] {
    return this.coll(spec).search(query, opts.topK, opts.filter?.predicate, opts.includeValues, opts.includeMetadata);
  }

  count(spec: IndexSpec): number {
    const c = this.open.get(spec.id);
    return c ? c.liveCount : this.store.count(spec.id);
  }

  pending(spec: IndexSpec): number {
    return this.open.get(spec.id)?.pendingCount() ?? 0;
  }

  /** Saves each changed graph (atomically: a crash mid-save leaves the previous one). */
  private saveAll(final: boolean): void {
    for (const [id, c] of this.open) {
      if (!c.dirty) continue;
      if (final && c.pendingCount() > 0 && c.pendingCount() <= 50_000) c.drainAll();
      const { upTo } = c.graphState();
      const { graph, state } = this.files(id);
      try {
        c.saveGraph(`${graph}.tmp`);
        fs.renameSync(`${graph}.tmp`, graph);
        const tmp = `${state}.tmp`;
        fs.writeFileSync(tmp, JSON.stringify({ upTo, dimension: c.dim, metric: c.metric }));
        fs.renameSync(tmp, state);
        this.store.pruneTombstones(id, upTo);
        c.dirty = false;
      } catch (err) {
        this.log("saving a vector graph failed; it will be rebuilt on start", { index: id, error: String(err) });
        fs.rmSync(state, { force: true });
      }
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.saveAll(true);
    for (const c of this.open.values()) c.close();
  }
}
