// What an index's vectors file (vector-file.ts) misses: the writes after its `upTo`, read in the
// record scanner's thread (record-scan-main.ts) from the vectors database when the file is older
// than the index (a `kill -9` after writes leaves it so), so that the file can still answer the
// searches while the index loads. Read in one transaction: the rows written after the file (their
// seq above `upTo`) and the labels deleted or replaced after it (`vector_tombstones`), checked
// against the index's vector count.
//
// The rows written after the file are found without an index on `seq` (one more B-tree to keep on
// every write) and without a pass over the index's rows (the seconds this file saves): SQLite gives
// a new row a rowid above every row in the table at that moment (max + 1; INSERT OR REPLACE takes
// a new one too), so every row written after the file lies above every row of the file still
// there. The last row of the file still there (its label unchanged) is found by id, and the rows
// above its rowid are the ones written since. A rowid freed by a delete can be taken again by a
// later row (max + 1 after the top rows went), so no rowid saved with the file would do: when no
// recent row of the file is still there, the rows are walked down from the top instead, to the
// first one of the file.
import type Database from "better-sqlite3";

/** The writes after the file, as of one read of the database. */
export interface WritesSince {
  /** Rows written after the file (still there), in rowid order. */
  labels: number[];
  ids: string[];
  /** Their embeddings one after another. */
  vectors: Float32Array;
  /** Labels of the file's vectors deleted or replaced after it. */
  dropped: number[];
}

/** What the caller knows of the file. */
export interface FileSummary {
  dim: number;
  upTo: number;
  /** Live vectors in the file. */
  live: number;
  /** The highest label in the file: any label above it was given after the file. */
  maxLabel: number;
  /** The file's most recent vectors (highest labels first): where the rows written since begin. */
  latest: Array<{ label: number; id: string }>;
}

type Row = [rowid: number, label: number, id: string, seq: number, embedding: Buffer];

export class WritesSinceReader {
  private readonly st;

  constructor(private readonly db: Database.Database) {
    this.st = {
      counters: db.prepare<[string], { seq: number; vector_count: number }>("SELECT seq, vector_count FROM vector_indexes WHERE id = ?"),
      byId: db.prepare<[string, string], { rowid: number; label: number }>(
        "SELECT rowid, label FROM vectors WHERE index_id = ? AND id = ?",
      ),
      top: db.prepare<[], { r: number | null }>("SELECT max(rowid) AS r FROM vectors"),
      // "+index_id": by rowid, not through the primary key.
      above: db
        .prepare<[number, string], Row>(
          "SELECT rowid, label, id, seq, embedding FROM vectors WHERE rowid > ? AND +index_id = ? ORDER BY rowid",
        )
        .raw(true),
      down: db
        .prepare<[number, string], Row>(
          "SELECT rowid, label, id, seq, embedding FROM vectors WHERE rowid <= ? AND +index_id = ? ORDER BY rowid DESC",
        )
        .raw(true),
      tombstones: db.prepare<[string, number], { label: number }>("SELECT label FROM vector_tombstones WHERE index_id = ? AND seq > ?"),
    };
  }

  /** The writes after the file, or why the file cannot be brought up to date (then it is not used). */
  read(indexId: string, f: FileSummary): WritesSince | { reason: string } {
    return this.db.transaction(() => this.readNow(indexId, f))();
  }

  private readNow(indexId: string, f: FileSummary): WritesSince | { reason: string } {
    const c = this.st.counters.get(indexId);
    if (!c) return { reason: "no such index" };
    if (c.seq < f.upTo) return { reason: "the file is ahead of the database" };
    const since: Row[] = [];
    if (c.seq > f.upTo) {
      // The rowid of the file's last row still there (the highest label still there is the highest
      // rowid of the file's rows): every row written since is above it.
      let from: number | undefined;
      for (const v of f.latest) {
        const r = this.st.byId.get(indexId, v.id);
        if (r?.label === v.label) {
          from = r.rowid;
          break;
        }
      }
      if (from !== undefined) {
        for (const row of this.st.above.iterate(from, indexId)) if (row[3] > f.upTo) since.push(row);
      } else {
        // None of the file's recent rows is there: down from the top to the first row of the file.
        for (const row of this.st.down.iterate(this.st.top.get()?.r ?? 0, indexId)) {
          if (row[3] <= f.upTo) break;
          since.push(row);
        }
        since.reverse();
      }
    }
    const dropped = this.st.tombstones
      .all(indexId, f.upTo)
      .map((t) => t.label)
      .filter((l) => l <= f.maxLabel);
    const vectors = new Float32Array(since.length * f.dim);
    const bytes = new Uint8Array(vectors.buffer);
    for (let i = 0; i < since.length; i++) {
      const [, label, id, , blob] = since[i] as Row;
      if (label <= f.maxLabel) return { reason: `record ${id} written after the file has an older label` };
      if (blob.length !== f.dim * 4) return { reason: `record ${id} has ${blob.length} bytes of embedding` };
      blob.copy(bytes, i * f.dim * 4);
    }
    // Each label leaves once: what the file held, less what left, plus what came, is what the
    // index holds (a tombstone pruned past the file, as by a save before this check existed, shows here).
    const count = f.live - new Set(dropped).size + since.length;
    if (count !== c.vector_count) return { reason: `the file and the writes since hold ${count} vectors, the index ${c.vector_count}` };
    return { labels: since.map((r) => r[1]), ids: since.map((r) => r[2]), vectors, dropped };
  }
}
