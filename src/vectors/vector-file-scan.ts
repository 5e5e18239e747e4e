// One index's vectors as the record scanner holds them while the index loads after a start: its
// vectors file (vector-file.ts, current as of the start), less the labels deleted or replaced
// since, plus the vectors written since (both sent by the main thread as each write is
// acknowledged). Its nearest vectors are found by SIMD brute force over the file's vectors (read
// once) and over those written since.
import type { Metric } from "./engine.js";
import { exactNearest, metricDistance } from "./exact.js";
import { readVectorFile } from "./vector-file.js";

/** A candidate: its label, id, exact distance and vector. */
export interface FileHit {
  label: number;
  id: string;
  dist: number;
  vector: Float32Array;
}

export class VectorFileScan {
  /** The file's live vectors, packed (freed slots left out), with their labels and ids. */
  private vecs: Float32Array;
  private labels: Float64Array;
  private ids: string[];
  /** Labels of the file's vectors deleted or replaced since. */
  private readonly dropped = new Set<number>();
  /** Vectors written since, by label; packed for a search on demand. */
  private readonly added = new Map<number, { id: string; vector: Float32Array }>();
  private packed: { vecs: Float32Array; labels: number[] } | undefined;

  private constructor(
    readonly dim: number,
    vecs: Float32Array,
    labels: Float64Array,
    ids: string[],
  ) {
    this.vecs = vecs;
    this.labels = labels;
    this.ids = ids;
  }

  /** Reads the file; undefined when it is missing, incomplete or of another dimension. */
  static open(file: string, dim: number): VectorFileScan | undefined {
    const f = readVectorFile(file);
    if (!f || f.dim !== dim) return undefined;
    if (f.live === f.slots) return new VectorFileScan(dim, f.vecs, f.labels, f.ids as string[]);
    // Freed slots are left out once here, so that a search need not skip them.
    const vecs = new Float32Array(f.live * dim);
    const labels = new Float64Array(f.live);
    const ids: string[] = [];
    for (let s = 0; s < f.slots; s++) {
      if ((f.labels[s] as number) < 0) continue;
      if (ids.length === f.live) return undefined;
      vecs.set(f.vecs.subarray(s * dim, (s + 1) * dim), ids.length * dim);
      labels[ids.length] = f.labels[s] as number;
      ids.push(f.ids[s] as string);
    }
    return ids.length === f.live ? new VectorFileScan(dim, vecs, labels, ids) : undefined;
  }

  /** A write acknowledged since the start: `replaced` (if any) goes, then the vector is added. */
  put(replaced: number, label: number, id: string, vector: Float32Array): void {
    if (replaced >= 0) this.remove(replaced);
    this.added.set(label, { id, vector });
    this.packed = undefined;
  }

  /** A delete (or the old version of a replaced vector) acknowledged since the start. */
  remove(label: number): void {
    if (this.added.delete(label)) this.packed = undefined;
    else this.dropped.add(label);
  }

  /** The `topK` nearest live vectors, nearest first, each with its exact distance. */
  nearest(q: Float32Array, topK: number, metric: Metric): FileHit[] {
    const dim = this.dim;
    const qNorm = Math.sqrt(q.reduce((a, x) => a + x * x, 0));
    const out: FileHit[] = [];
    const take = (vecs: Float32Array, row: number, label: number, id: string) => {
      const vector = vecs.slice(row * dim, (row + 1) * dim);
      out.push({ label, id, dist: metricDistance(metric, q, qNorm, vector), vector });
    };
    // Asks for as many more as were dropped since (at most that many of the nearest are gone).
    let kept = 0;
    for (const row of exactNearest(this.vecs, dim, q, topK + this.dropped.size, metric)) {
      const label = this.labels[row] as number;
      if (this.dropped.has(label)) continue;
      take(this.vecs, row, label, this.ids[row] as string);
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
