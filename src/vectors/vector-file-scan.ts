// One index's vectors as the record scanner holds them while the index loads after a start: its
// vectors file (vector-file.ts) as read, less the labels deleted or replaced since the file, plus
// the vectors written since (read at start from its side log, vector-log.ts, and the database,
// vector-file-since.ts, then sent by the main thread as each write is acknowledged). Its nearest
// vectors are found by SIMD brute force over the file's vectors (searched in the array they were
// read into: no copy, no packing before the first search) and over those written since.
import os from "node:os";
import type { Metric } from "./engine.js";
import { exactNearest, metricDistance } from "./exact.js";
import { readVectorFile } from "./vector-file.js";
import type { FileSummary, WritesSince } from "./vector-file-since.js";
import { IdList } from "./vector-ids.js";
import type { LogEntry } from "./vector-log.js";

/** A candidate: its label, id, exact distance and vector. */
export interface FileHit {
  label: number;
  id: string;
  dist: number;
  vector: Float32Array;
}

/** The file's most recent vectors handed to the reader of the writes since (see FileSummary). */
const LATEST = 32;
/** Past this many freed or dropped rows the file's vectors are packed again without them (each
 * search asks the brute force for as many more as there are). */
const COMPACT_AT = 1_024;
/** Threads of a brute-force pass over this many floats or more (16 MiB): a million vectors of 128
 * took ~0.4 s on one thread of a busy machine. */
const THREADED_FLOATS = 1 << 22;
const THREADS = Math.max(1, Math.min(2, os.availableParallelism()));

export class VectorFileScan {
  /** The file's vectors by row (its slots as read; packed without freed and dropped ones once there
   * are many), with their labels (-1: a freed slot). */
  private vecs: Float32Array;
  private labels: Float64Array;
  /** The file's ids, by slot; `slotOfRow` maps a row to its slot once rows were packed. */
  private readonly ids: IdList;
  private slotOfRow: Uint32Array | undefined;
  /** Rows of freed slots (label -1) still among the rows. */
  private freed: number;
  /** Labels of the file's vectors deleted or replaced since. */
  private dropped = new Set<number>();
  /** Vectors written since, by label; packed for a search on demand. */
  private readonly added = new Map<number, { id: string; vector: Float32Array }>();
  private packed: { vecs: Float32Array; labels: number[] } | undefined;
  /** The highest label in the file: labels above it were given after the file. */
  readonly maxLabel: number;
  /** Live vectors among the rows (dropped ones included until the rows are packed). */
  private live: number;

  private constructor(
    readonly dim: number,
    /** Every write up to this sequence number is in the file (and the log entries applied). */
    public upTo: number,
    vecs: Float32Array,
    labels: Float64Array,
    ids: IdList,
    live: number,
  ) {
    this.vecs = vecs;
    this.labels = labels;
    this.ids = ids;
    this.live = live;
    this.freed = labels.length - live;
    let max = -1;
    for (const l of labels) if (l > max) max = l;
    this.maxLabel = max;
  }

  /** Reads the file; undefined when it is missing, incomplete or of another dimension. */
  static async open(file: string, dim: number): Promise<VectorFileScan | undefined> {
    const f = await readVectorFile(file);
    if (!f || f.dim !== dim) return undefined;
    let live = 0;
    for (const l of f.labels) if (l >= 0) live++;
    if (live !== f.live) return undefined;
    return new VectorFileScan(dim, f.upTo, f.vecs, f.labels, f.ids, f.live);
  }

  /** No file (the index was never saved): its side log alone, from the index's first write. */
  static empty(dim: number): VectorFileScan {
    return new VectorFileScan(dim, 0, new Float32Array(0), new Float64Array(0), new IdList(Buffer.alloc(0), new Uint32Array(0)), 0);
  }

  /** Applies the side log's entries that carry on from `upTo` without a gap (vector-log.ts); the
   * first gap ends it (the database has the rest). Returns how many writes it applied. */
  applyLog(entries: LogEntry[]): number {
    let applied = 0;
    for (const e of entries) {
      const n = e.labels.length;
      if (e.firstSeq + n - 1 <= this.upTo) continue;
      if (e.firstSeq !== this.upTo + 1) break;
      for (let i = 0; i < n; i++) {
        if (e.kind === "delete") this.remove(e.labels[i] as number);
        else this.put(e.replaced[i] as number, e.labels[i] as number, e.ids.get(i), e.vectors.subarray(i * this.dim, (i + 1) * this.dim));
      }
      this.upTo += n;
      applied += n;
    }
    return applied;
  }

  private idOf(row: number): string {
    return this.ids.get(this.slotOfRow ? (this.slotOfRow[row] as number) : row);
  }

  /** What the reader of the writes since needs to know of the file (with the log applied). */
  summary(): FileSummary {
    // The LATEST highest labels, highest first. The rows are walked from the last: a file's labels
    // mostly grow with its rows, so after the first few rows almost every label is below the
    // lowest kept and costs one comparison (walked from the first, each row displaced one of the
    // kept and had its id decoded: ~1 s at 1M on a busy machine, before the first search).
    // Ids are decoded for the ones kept only.
    const top: Array<{ label: number; row: number; id?: string }> = [];
    const consider = (label: number, row: number, id?: string) => {
      if (top.length === LATEST && label <= (top[LATEST - 1] as { label: number }).label) return;
      let at = top.length;
      while (at > 0 && (top[at - 1] as { label: number }).label < label) at--;
      top.splice(at, 0, { label, row, id });
      if (top.length > LATEST) top.pop();
    };
    for (let r = this.labels.length - 1; r >= 0; r--) {
      const l = this.labels[r] as number;
      if (top.length === LATEST && l <= (top[LATEST - 1] as { label: number }).label) continue;
      if (l >= 0 && !this.dropped.has(l)) consider(l, r);
    }
    let maxLabel = this.maxLabel;
    for (const [l, a] of this.added) {
      consider(l, -1, a.id);
      if (l > maxLabel) maxLabel = l;
    }
    const latest = top.map((t) => ({ label: t.label, id: t.id ?? this.idOf(t.row) }));
    return { dim: this.dim, upTo: this.upTo, live: this.live - this.dropped.size + this.added.size, maxLabel, latest };
  }

  /** Brings the file up to date with the writes after it (read before any sent by the main thread);
   * the vectors dropped are left out now when many, rather than at the first search. */
  catchUp(w: WritesSince): void {
    for (const l of w.dropped) this.remove(l);
    w.ids.forEach((id, i) => {
      this.put(-1, w.labels[i] as number, id, w.vectors.subarray(i * this.dim, (i + 1) * this.dim));
    });
    if (this.dropped.size + this.freed > COMPACT_AT) this.compact();
  }

  /** A write acknowledged since the start: `replaced` (if any) goes, then the vector is added. */
  put(replaced: number, label: number, id: string, vector: Float32Array): void {
    if (replaced >= 0) this.remove(replaced);
    this.added.set(label, { id, vector });
    this.packed = undefined;
  }

  /** A delete (or the old version of a replaced vector). The writes read at start may hold it
   * already: sent again, it changes nothing (a label is given once and leaves once). */
  remove(label: number): void {
    if (label > this.maxLabel) {
      if (this.added.delete(label)) this.packed = undefined;
    } else this.dropped.add(label);
  }

  /** Packs the file's vectors again without the freed and dropped ones (in place: each kept row
   * moves down; its slot is remembered for its id). */
  private compact(): void {
    const dim = this.dim;
    const slotOf = new Uint32Array(this.labels.length);
    let kept = 0;
    for (let r = 0; r < this.labels.length; r++) {
      const label = this.labels[r] as number;
      if (label < 0 || this.dropped.has(label)) continue;
      if (kept !== r) {
        this.vecs.copyWithin(kept * dim, r * dim, (r + 1) * dim);
        this.labels[kept] = label;
      }
      slotOf[kept] = this.slotOfRow ? (this.slotOfRow[r] as number) : r;
      kept++;
    }
    this.vecs = this.vecs.subarray(0, kept * dim);
    this.labels = this.labels.subarray(0, kept);
    this.slotOfRow = slotOf.subarray(0, kept);
    this.live = kept;
    this.dropped = new Set();
    this.freed = 0;
  }

  /** The `topK` nearest live vectors, nearest first, each with its exact distance. */
  nearest(q: Float32Array, topK: number, metric: Metric): FileHit[] {
    if (this.dropped.size + this.freed > COMPACT_AT) this.compact();
    const dim = this.dim;
    const qNorm = Math.sqrt(q.reduce((a, x) => a + x * x, 0));
    const out: FileHit[] = [];
    const take = (vecs: Float32Array, row: number, label: number, id: string) => {
      const vector = vecs.slice(row * dim, (row + 1) * dim);
      out.push({ label, id, dist: metricDistance(metric, q, qNorm, vector), vector });
    };
    // Asks for as many more as were freed or dropped (at most that many of the nearest are gone).
    const threads = this.vecs.length >= THREADED_FLOATS ? THREADS : 1;
    let kept = 0;
    for (const row of exactNearest(this.vecs, dim, q, topK + this.dropped.size + this.freed, metric, threads)) {
      const label = this.labels[row] as number;
      if (label < 0 || this.dropped.has(label)) continue;
      take(this.vecs, row, label, this.idOf(row));
      if (++kept === topK) break;
    }
    if (this.added.size > 0) {
      if (!this.packed) {
        const labels = [...this.added.keys()];
        const vecs = new Float32Array(labels.length * dim);
        labels.forEach((l, i) => {
          vecs.set((this.added.get(l) as { vector: Float32Array }).vector, i * dim);
        });
        this.packed = { vecs, labels };
      }
      const { vecs, labels } = this.packed;
      for (const row of exactNearest(vecs, dim, q, topK, metric)) {
        const label = labels[row] as number;
        take(vecs, row, label, (this.added.get(label) as { id: string }).id);
      }
    }
    return out.sort((a, b) => a.dist - b.dist).slice(0, topK);
  }
}
