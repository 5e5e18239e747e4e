// The embedded vector engine: records in SQLite (store.ts, the source of truth), search in memory
// (collection.ts). A write is committed to SQLite first and only then applied in memory, so an
// acknowledged write survives kill -9. Each index's graph is saved on shutdown (and every few
// minutes when it changed); on start it is loaded, brought up to date from the writes after it,
// and checked against the record count; any doubt and it is rebuilt from the records. Loading
// reads the records in a worker (record-loader.ts) and the graph file in the graph worker, so the
// service keeps answering meanwhile. Writes never wait for a load (committed to SQLite at once,
// applied in memory after the records); searches never wait either: while the records load they
// are answered exactly by a worker (record-scan.ts), from the index's vectors file (vector-file.ts:
// written with each save) and the writes after it, or else from the database, then exactly from
// memory until the graph is loaded or rebuilt. Smaller indexes are loaded first.
import fs from "node:fs";
import path from "node:path";
import { Collection, QUANTIZATION } from "./collection.js";
import type { Admit, Hit, IndexHealth, IndexSpec, NewVector, SearchOptions, VectorEngine, VectorRecord } from "./engine.js";
import type { Metadata } from "./filter.js";
import { ExactScanner } from "./exact-scan.js";
import { GraphWorker } from "./graph-worker.js";
import type { RecallCurve } from "./recall.js";
import { RecordScanner } from "./record-scan.js";
import { VECTOR_DEFAULTS, type VectorSettings } from "./settings.js";
import type { RecordRow, VectorCatalog } from "./store.js";
import { readVectorFileHeader, writeVectorFile } from "./vector-file.js";
import { logFileOf, VectorLogs } from "./vector-log.js";

/** A changed graph is saved once its index had no writes for AGENTBOX_VECTOR_SAVE_IDLE_S (so a crash
 * soon after a bulk load finds it saved), and at least every SAVE_EVERY_MS while writes go on. */
const SAVE_EVERY_MS = 5 * 60_000;
/** Records per chunk while loading an index (read in a worker, applied here a slice per event-loop turn). */
const LOAD_CHUNK = 20_000;
/** Records applied per event-loop turn: a whole chunk held the loop for 100–300 ms on a loaded
 * machine, and a request arriving meanwhile (the first search after a start) waited for it. */
const APPLY_SLICE = 2_000;
/** On shutdown, vectors still queued for the graph are inserted before saving it when at most this many. */
const DRAIN_ON_CLOSE_MAX = 50_000;
/** Each index's recall is measured again this often (when its graph changed at all). */
const MEASURE_EVERY_MS = 10 * 60_000;

/** What a saved graph file covers: every write up to `upTo`, with these parameters. */
interface GraphState {
  upTo: number;
  dimension: number;
  metric: string;
  quantization: string;
  /** The graph file's size when it was saved. */
  bytes?: number;
  /** The search width and the recall measured on this graph. */
  recall?: RecallCurve;
}

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
  /** Indexes in memory (those whose records are still loading too), and their loads. */
  private readonly open = new Map<string, Collection>();
  private readonly loading = new Map<string, Promise<void>>();
  /** Copies of indexes opened so far (names each copy's graph in the worker). */
  private copies = 0;
  private readonly measureTimer: NodeJS.Timeout;
  private readonly dir: string;
  private readonly timer: NodeJS.Timeout;
  private readonly graphs = new GraphWorker();
  /** Exact answers for every index's recall measurement, off the event loop. */
  private readonly scans = new ExactScanner();
  /** Answers searches of indexes whose records are still loading (when the store has a file to scan). */
  private readonly scanner: RecordScanner | undefined;
  /** Each index's writes since its vectors file, for the scanner after a crash (with the scanner only). */
  private readonly logs: VectorLogs | undefined;
  private saving: Promise<void> | undefined;
  private readonly saveIdleMs: number;
  /** The write sequence each index's vectors file on disk holds (absent: none, or not usable). */
  private readonly vectorsSaved = new Map<string, number>();
  /** Indexes whose first search while loading was logged. */
  private readonly loggedScan = new Set<string>();
  /** Loads from the records since the start (each index's first use, or again after its copy was dropped). */
  loads = 0;

  constructor(
    private readonly store: VectorCatalog,
    dataDir: string,
    private readonly log: (msg: string, fields?: Record<string, unknown>) => void = () => {},
    private readonly settings: VectorSettings = VECTOR_DEFAULTS,
  ) {
    this.scanner =
      store.scanFile === undefined
        ? undefined
        : new RecordScanner(store.scanFile, (r) => {
            const fields = {
              index: r.indexId,
              up_to: r.upTo,
              logged: r.logged,
              written_since: r.writtenSince,
              dropped_since: r.droppedSince,
              ms: Math.round(r.ms),
            };
            if (r.used) this.log("vectors file in use while the index loads", fields);
            else this.log("vectors file not used while the index loads", { ...fields, reason: r.reason });
          });
    this.logs = this.scanner
      ? new VectorLogs((index, err) => this.log("appending to a vector index's log failed", { index, error: String(err) }))
      : undefined;
    this.dir = path.join(dataDir, "vector-graphs");
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // Started with the service (before it listens) when there are indexes to load, so that it is
    // ready for the first search (a thread's start, compiling its module, can take longer than the
    // scan itself), and given each index's vectors file, smallest index first (the thread reads
    // them one after another, and a search waits behind the files read before it).
    void store.allIndexes().then((rows) => {
      if (rows.length > 0) this.scanner?.start();
      for (const row of this.smallestFirst(rows)) this.useVectorsFile(row.id, row.dimension);
      for (const row of rows) this.logs?.track(row.id, logFileOf(this.files(row.id).vectors), row.dimension);
    });
    this.saveIdleMs = settings.saveIdleS * 1000;
    this.timer = setInterval(() => void this.saveAll(false), Math.min(this.saveIdleMs, 30_000));
    this.timer.unref();
    this.measureTimer = setInterval(() => {
      for (const c of this.open.values()) void c.maybeMeasure(true);
    }, MEASURE_EVERY_MS);
    this.measureTimer.unref();
  }

  /** Search width and target of a new or loaded index (target from its catalog row). */
  private newCollection(spec: IndexSpec, expected = 0): Collection {
    // Each copy's graph has a name of its own in the worker (see forget).
    const c = new Collection(spec.dimension, spec.metric, this.graphs, `${spec.id}#${++this.copies}`, this.log, expected, this.scans);
    c.width = this.settings.searchEf;
    c.targetRecall = spec.targetRecall ?? this.settings.targetRecall;
    c.maxUnindexed = Math.max(1, Math.floor((this.settings.unindexedMb * 2 ** 20) / (4 * spec.dimension)));
    // A new width is worth keeping across a restart: saved with the graph at the next save.
    c.onMeasured = () => {
      c.dirty = true;
    };
    return c;
  }

  private files(indexId: string): { graph: string; state: string; vectors: string } {
    return {
      graph: path.join(this.dir, `${indexId}.usearch`),
      state: path.join(this.dir, `${indexId}.json`),
      vectors: path.join(this.dir, `${indexId}.vectors`),
    };
  }

  /** Indexes (or their specs) by their vector count, smallest first. */
  private smallestFirst<T extends { id: string }>(rows: T[]): T[] {
    return [...rows].sort((a, b) => this.store.count(a.id) - this.store.count(b.id));
  }

  /** At start: searches of the index while it loads read its vectors file, with the writes after
   * it (the scanner thread reads those from the database and checks the sum against the index's
   * vector count; when it does not add up, the rows answer). */
  private useVectorsFile(indexId: string, dim: number): void {
    if (!this.scanner) return;
    const file = this.files(indexId).vectors;
    const h = readVectorFileHeader(file);
    // Before the index's first save there is no file, only its log.
    const logged = (fs.statSync(logFileOf(file), { throwIfNoEntry: false })?.size ?? 0) > 0;
    if (h?.dim === dim) this.vectorsSaved.set(indexId, h.upTo);
    else if (!logged) return;
    this.scanner.useFile(indexId, file, dim);
  }

  /** Writes the index's vectors file when it changed since the last one (off the event loop). */
  private async saveVectors(id: string, c: Collection): Promise<void> {
    const snap = c.slotsSnapshot();
    if (this.vectorsSaved.get(id) === snap.upTo) return;
    let written = (_: boolean) => {};
    const saved = new Promise<boolean>((resolve) => {
      written = resolve;
    });
    try {
      // Discarded if the index changed while it was written (the next save writes it again). When
      // it did not, the log is emptied once the file is in place (the writes from now on are
      // appended after that).
      const stillSame = () => {
        const same = c.seq === snap.upTo && !c.isClosed;
        if (same) this.logs?.restart(id, saved);
        return same;
      };
      if (await writeVectorFile(this.files(id).vectors, snap, stillSame)) {
        this.vectorsSaved.set(id, snap.upTo);
        written(true);
      }
    } catch (err) {
      this.log("saving a vector index's vectors file failed", { index: id, error: String(err) });
    } finally {
      written(false);
    }
  }

  /** The index's collection, its load started on first use (writes need not wait for it). */
  private coll(spec: IndexSpec): Collection {
    const open = this.open.get(spec.id);
    if (open) return open;
    const c = this.newCollection(spec, this.store.count(spec.id));
    c.beginLoad();
    this.open.set(spec.id, c);
    // (Loaded again after its copy was dropped: logged from now on, of use from its next file.)
    this.logs?.track(spec.id, logFileOf(this.files(spec.id).vectors), spec.dimension);
    this.loads++;
    const p = this.load(spec, c).then(
      () => {
        // (Only its own entry: another copy may be loading by now, see forget.)
        if (this.loading.get(spec.id) === p) this.loading.delete(spec.id);
        // Stopped before the end of the records (the index was dropped meanwhile).
        if (c.loading) c.failLoad(new Error(`vector index ${spec.id} could not be loaded`));
      },
      (err: unknown) => {
        // The writes kept meanwhile are in the store: the next use loads again and finds them.
        if (this.loading.get(spec.id) === p) this.loading.delete(spec.id);
        if (this.open.get(spec.id) === c) this.open.delete(spec.id);
        c.close();
        if (c.loading) c.failLoad(new Error(`vector index ${spec.id} could not be loaded`));
        this.log("loading a vector index failed", { index: spec.id, error: String(err) });
      },
    );
    this.loading.set(spec.id, p);
    return c;
  }

  /** Loads every record, then (in the background) the saved graph when it is consistent with them. */
  private async load(spec: IndexSpec, c: Collection): Promise<void> {
    const started = performance.now();
    // The vectors file answers the searches meanwhile: its read goes first (writes are kept meanwhile).
    await this.scanner?.fileRead(spec.id);
    if (c.isClosed) return;
    const { graph, state } = this.files(spec.id);
    let saved: GraphState | undefined;
    try {
      saved = JSON.parse(fs.readFileSync(state, "utf8")) as GraphState;
      const same = saved.dimension === spec.dimension && saved.metric === spec.metric && saved.quantization === QUANTIZATION;
      // The file must be the one the state describes: usearch trusts a graph file's contents (a
      // truncated or foreign file can crash the process), so anything else is rebuilt instead.
      // (State files written before the size was recorded have none.)
      const size = fs.statSync(graph).size;
      if (!same || (saved.bytes !== undefined && size !== saved.bytes)) saved = undefined;
    } catch {
      // no saved graph (new index, or never shut down cleanly): built from the records
    }
    const upTo = saved?.upTo ?? -1;
    // Searches are exact until the graph is open and up to date.
    c.graphOpen = false;
    c.rebuilding = saved === undefined;
    if (saved?.recall) {
      c.recall = saved.recall;
      c.width = saved.recall.width;
    }
    // The worker reads the graph file while the records are read here.
    const opening = c.openGraph(saved ? graph : undefined).then(
      (size) => ({ size, error: undefined }),
      (error: unknown) => ({ size: 0, error: String(error) }),
    );
    // The records come from a worker thread, a chunk at a time (the event loop serves requests in between).
    for await (const chunk of this.store.readRecords(spec.id, spec.dimension, LOAD_CHUNK)) {
      const dim = spec.dimension;
      for (let i = 0; i < chunk.ids.length; i++) {
        const seq = chunk.seqs[i] as number;
        const already = saved !== undefined && seq <= upTo;
        const metadata = JSON.parse(chunk.metadata[i] as string) as Metadata;
        c.load(chunk.labels[i] as number, chunk.ids[i] as string, chunk.vectors.subarray(i * dim, (i + 1) * dim), metadata, seq, already);
        // A turn of the event loop between slices (and chunks, even when the next one is already here).
        if ((i + 1) % APPLY_SLICE === 0 || i === chunk.ids.length - 1) {
          await new Promise((r) => setImmediate(r));
          if (c.isClosed) return; // dropped meanwhile
        }
      }
      if (c.isClosed) return; // dropped meanwhile
    }
    // The writes made meanwhile (searches may start now: exact until the graph is ready).
    c.endLoad();
    c.seq = Math.max(c.seq, await this.store.seq(spec.id));
    const recordsMs = Math.round(performance.now() - started);
    const opened = await opening;
    if (c.isClosed) return;
    let haveGraph = saved !== undefined && opened.error === undefined;
    if (saved && opened.error) this.log("loading a saved vector graph failed; rebuilding it", { index: spec.id, error: opened.error });
    if (haveGraph) {
      // Deletes and replacements after the save: their labels leave the graph. What it should hold
      // then is the live records it held (counted as they are applied): a record the loader read
      // and a write since deleted or replaced left both counts already (counting the records read
      // instead made every delete during the load look like a mismatch, and the graph was rebuilt).
      const tombstones = await this.store.tombstonesAfter(spec.id, upTo);
      const inGraph = c.graphCount;
      const size = await c.removeFromGraph(tombstones);
      if (size !== inGraph) {
        this.log("vector graph does not match the records; rebuilding it", { index: spec.id, graph: size, records: inGraph });
        haveGraph = false;
      }
    }
    if (saved && !haveGraph) {
      c.rebuilding = true;
      await c.rebuildGraph();
    }
    c.dirty = c.dirty || !haveGraph;
    c.graphOpen = true;
    c.startIndexing();
    if (!c.building && !c.recall) void c.maybeMeasure();
    this.log("vector index loaded", {
      index: spec.id,
      vectors: c.liveCount,
      from_saved_graph: haveGraph,
      queued_for_graph: c.pendingCount(),
      records_ms: recordsMs,
      ms: Math.round(performance.now() - started),
    });
  }

  /** Loads every index now (called after start so the first search does not pay for it). */
  async warm(specs: IndexSpec[]): Promise<void> {
    // Records one index at a time (each load reads them in a worker; its graph loads meanwhile in
    // the graph worker); an index used first starts its own load at once.
    // Smallest first: a large index's minutes of loading do not hold back the small ones.
    for (const s of this.smallestFirst(specs)) await this.coll(s).recordsLoaded.catch(() => {});
    // Needed again only if a load failed (the next use loads that index again).
    if (![...this.open.values()].some((c) => c.loading)) await this.scanner?.close();
  }

  createIndex(spec: IndexSpec): void {
    const c = this.newCollection(spec);
    // Messages to the worker are handled in order, so the graph exists before anything is added to it.
    c.openGraph().catch((err) => this.log("creating a vector graph failed", { index: spec.id, error: String(err) }));
    c.startIndexing();
    this.open.set(spec.id, c);
    this.logs?.track(spec.id, logFileOf(this.files(spec.id).vectors), spec.dimension);
  }

  dropIndex(spec: IndexSpec): Promise<void> {
    return this.forget(spec.id);
  }

  /** The in-memory index and its saved graph go (the saved graph may not match the records now);
   * the next use rebuilds it from the records. */
  dropCopy(spec: IndexSpec): Promise<void> {
    return this.forget(spec.id);
  }

  /** As dropCopy: the owner's writes from now on are not applied to the graph saved here. */
  release(indexId: string): Promise<void> {
    return this.forget(indexId);
  }

  loaded(): string[] {
    return [...this.open.keys()];
  }

  private async forget(id: string): Promise<void> {
    const c = this.open.get(id);
    const load = this.loading.get(id);
    c?.close();
    this.open.delete(id);
    // Everything kept under the index's id goes before the first await: a use of the index meanwhile
    // opens a new copy at once (a cluster node that stops answering for an owner and becomes the
    // owner), which must find none of the dropped copy's files, and whose own log and scan this
    // clean-up must not remove once it is done waiting.
    const { graph, state, vectors } = this.files(id);
    fs.rmSync(state, { force: true });
    fs.rmSync(graph, { force: true });
    fs.rmSync(vectors, { force: true });
    fs.rmSync(logFileOf(vectors), { force: true });
    this.vectorsSaved.delete(id);
    this.scanner?.forget(id);
    const logRemoved = this.logs?.remove(id);
    // A load under way stops at its next step; its graph is dropped after it (messages are in
    // order). The graph is the dropped copy's own (each copy's graph has a name of its own in the
    // worker): dropping it by the index id dropped the new copy's graph when one was opened while
    // this waited, and its searches then missed what the graph should have held.
    await load;
    if (c) await this.graphs.drop(c.graphId).catch(() => 0);
    await logRemoved;
  }

  async upsert(spec: IndexSpec, vectors: NewVector[], admit?: Admit): Promise<void> {
    const c = this.coll(spec);
    // Past the index's bound on vectors waiting for its graph, written once the graph caught up.
    await c.room();
    const written = await this.store.upsert(spec.id, vectors, admit);
    this.logs?.upserted(
      spec.id,
      written,
      vectors.map((v) => v.embedding),
    );
    this.scanner?.wrote(
      spec.id,
      written,
      vectors.map((v) => v.embedding),
    );
    written.forEach((w, i) => {
      const v = vectors[i] as NewVector;
      if (w.replaced !== undefined) c.drop(w.replaced, w.seq);
      c.put(w.label, w.id, v.embedding, v.metadata, w.seq, false);
    });
  }

  async delete(spec: IndexSpec, ids: string[], refuseProtected?: (protectedIds: string[]) => void): Promise<number> {
    const c = this.coll(spec);
    const gone = await this.store.delete(spec.id, ids, refuseProtected);
    this.logs?.deleted(spec.id, gone);
    this.scanner?.deleted(
      spec.id,
      gone.map((g) => g.label),
    );
    for (const g of gone) c.drop(g.label, g.seq);
    return gone.length;
  }

  async fetch(spec: IndexSpec, ids: string[]): Promise<VectorRecord[]> {
    return (await this.store.getMany(spec.id, ids)).map(toRecord);
  }

  async list(spec: IndexSpec, offset: number, limit: number): Promise<{ vectors: VectorRecord[]; total: number }> {
    return { vectors: (await this.store.list(spec.id, limit, offset)).map(toRecord), total: this.store.count(spec.id) };
  }

  async update(
    spec: IndexSpec,
    id: string,
    change: { metadata?: Metadata; delete_protection?: boolean },
    admit?: Admit,
  ): Promise<VectorRecord | undefined> {
    const c = this.coll(spec);
    const row = await this.store.get(spec.id, id);
    if (!row) return undefined;
    const metadata = change.metadata ?? (JSON.parse(row.metadata) as Metadata);
    const protect = change.delete_protection ?? row.delete_protection === 1;
    if (!(await this.store.updateVector(spec.id, id, JSON.stringify(metadata), protect, new Date().toISOString(), admit))) return undefined;
    c.setMetadata(row.label, metadata);
    const after = await this.store.get(spec.id, id);
    return after ? toRecord(after) : undefined;
  }

  async search(spec: IndexSpec, query: Float32Array, opts: SearchOptions): Promise<Hit[]> {
    const c = this.coll(spec);
    // Still loading: the stored records answer, exactly (they hold every acknowledged write); with
    // no file to scan, the search waits for them and is answered exactly from memory.
    if (c.loading) {
      if (this.scanner) {
        const r = await this.scanner.search(spec, query, opts);
        if (!this.loggedScan.has(spec.id)) {
          this.loggedScan.add(spec.id);
          this.log("first search of a loading vector index answered", { index: spec.id, from: r.source, scan_ms: Math.round(r.ms ?? 0) });
        }
        return (r.hits ?? []) as Hit[];
      }
      await c.recordsLoaded;
    }
    return c.search(query, opts.topK, opts.filter?.predicate, opts.includeValues, opts.includeMetadata, {
      exact: opts.exact,
      width: opts.searchWidth,
    });
  }

  count(spec: IndexSpec): number {
    const c = this.open.get(spec.id);
    return c && !c.loading ? c.liveCount : this.store.count(spec.id);
  }

  health(spec: IndexSpec): IndexHealth {
    const c = this.open.get(spec.id);
    const target = spec.targetRecall ?? c?.targetRecall ?? this.settings.targetRecall;
    if (!c || c.loading)
      return {
        status: "loading",
        pending: this.store.count(spec.id),
        searchWidth: c?.width ?? this.settings.searchEf,
        targetRecall: target,
      };
    return {
      status: c.building ? "building" : c.pendingCount() > 0 ? "indexing" : "ready",
      pending: c.pendingCount(),
      searchWidth: c.width,
      targetRecall: c.targetRecall,
      estimatedRecall: c.recall?.recall,
      recallMeasuredAt: c.recall?.measured_at,
    };
  }

  setTargetRecall(spec: IndexSpec, target: number): void {
    const c = this.open.get(spec.id);
    if (!c) return;
    c.targetRecall = target;
    if (!c.loading) void c.maybeMeasure(true);
  }

  /** Saves each changed graph (one at a time; a second call while one runs waits for it). */
  private saveAll(final: boolean): Promise<void> {
    const run = async () => {
      for (const [id, c] of this.open) {
        // Not loaded yet: nothing changed that is not in the store.
        if (c.loading) continue;
        if (this.scanner && (final || performance.now() - c.changedAt >= this.saveIdleMs)) await this.saveVectors(id, c);
        if (!c.graphOpen) continue;
        if (final && c.pendingCount() > 0 && c.pendingCount() <= DRAIN_ON_CLOSE_MAX) await c.drainAll();
        if (!c.dirty) continue;
        if (!final) {
          // A graph half rebuilt would be rebuilt again from its start; an index still being
          // written to is saved at the slower pace.
          const now = performance.now();
          const idle = now - c.changedAt >= this.saveIdleMs && c.pendingCount() === 0;
          if (c.rebuilding || (!idle && now - c.savedAt < SAVE_EVERY_MS)) continue;
        }
        c.savedAt = performance.now();
        const { upTo } = c.graphState();
        const { graph, state } = this.files(id);
        // Changes posted after this save mark the graph dirty again.
        c.dirty = false;
        try {
          await this.graphs.save(c.graphId, graph);
          const tmp = `${state}.tmp`;
          const bytes = fs.statSync(graph).size;
          const saved: GraphState = { upTo, dimension: c.dim, metric: c.metric, quantization: QUANTIZATION, bytes, recall: c.recall };
          fs.writeFileSync(tmp, JSON.stringify(saved));
          fs.renameSync(tmp, state);
          // The tombstones after the vectors file stay with it: after a crash they bring it up to date.
          await this.store.pruneTombstones(id, Math.min(upTo, this.vectorsSaved.get(id) ?? upTo));
        } catch (err) {
          c.dirty = true;
          this.log("saving a vector graph failed; it will be rebuilt on start", { index: id, error: String(err) });
          fs.rmSync(state, { force: true });
        }
      }
    };
    const p = (this.saving ?? Promise.resolve()).then(run);
    this.saving = p.finally(() => {
      if (this.saving === p) this.saving = undefined;
    });
    return p;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.measureTimer);
    // Indexes still loading are saved as they are once loaded.
    await Promise.allSettled(this.loading.values());
    await this.saveAll(true);
    for (const c of this.open.values()) c.close();
    await this.logs?.close();
    await this.scanner?.close();
    await this.graphs.close();
    await this.scans.close();
  }
}
