// The vectors database (its own SQLite file next to the main one, so vector writes never queue
// behind sandbox bookkeeping): the index catalog and every vector record. It is the source of truth:
// the ANN graph is rebuilt or replayed from it on start. Each write bumps the index's `seq`, and a
// replaced or deleted vector leaves a tombstone with its graph label, so a saved graph can be
// brought up to date by replaying what came after it. Each index row keeps its vector count and
// bytes with every write, and this process keeps their sums per tenant, for the quotas.
import path from "node:path";
import type Database from "better-sqlite3";
import { addColumnIfMissing, type Migration, migrate, openSqlite } from "../store/db.js";
import type { Admit, Metric } from "./engine.js";
import type { Metadata } from "./filter.js";

export interface IndexRow {
  id: string;
  tenant_id: string;
  name: string;
  dimension: number;
  metric: Metric;
  vector_type: string;
  cloud_provider: string | null;
  region: string | null;
  index_type: string | null;
  metadata: string;
  delete_protection: number;
  created_at: string;
  updated_at: string;
  /** recall@10 the index's searches should reach; null: the service's default. */
  target_recall: number | null;
}

export interface RecordRow {
  id: string;
  label: number;
  embedding: Buffer;
  metadata: string;
  delete_protection: number;
  created_at: string;
  updated_at: string;
  seq: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS vector_indexes (
  id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  name TEXT NOT NULL,
  dimension INTEGER NOT NULL,
  metric TEXT NOT NULL,
  vector_type TEXT NOT NULL,
  cloud_provider TEXT,
  region TEXT,
  index_type TEXT,
  metadata TEXT NOT NULL,
  delete_protection INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  next_label INTEGER NOT NULL DEFAULT 0,
  seq INTEGER NOT NULL DEFAULT 0,
  vector_count INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0,
  UNIQUE (tenant_id, name)
);
CREATE TABLE IF NOT EXISTS vectors (
  index_id TEXT NOT NULL,
  id TEXT NOT NULL,
  label INTEGER NOT NULL,
  embedding BLOB NOT NULL,
  metadata TEXT NOT NULL,
  delete_protection INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (index_id, id)
);
CREATE TABLE IF NOT EXISTS vector_tombstones (
  index_id TEXT NOT NULL,
  label INTEGER NOT NULL,
  seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS vector_tombstones_seq ON vector_tombstones (index_id, seq);
`;

/** A record's bytes as the quotas count them: what is kept for it in memory and on disk (the
 * embedding, the metadata as JSON, the id). RECORD_BYTES_SQL is the same for a stored row. */
export function recordBytes(id: string, embeddingBytes: number, metadataJson: string): number {
  return embeddingBytes + Buffer.byteLength(metadataJson) + Buffer.byteLength(id);
}
const RECORD_BYTES_SQL = "length(embedding) + length(CAST(metadata AS BLOB)) + length(CAST(id AS BLOB))";

/** The vectors database's schema. The first four adopt databases from before versioned areas (the
 * table may be there, with or without each later column); new changes are plain new versions. */
export const VECTOR_MIGRATIONS: Migration[] = [
  { area: "vectors", version: 1, up: (db) => db.exec(SCHEMA) },
  {
    area: "vectors",
    version: 2,
    // Databases from before the count was kept: counted once.
    up: (db) => {
      if (addColumnIfMissing(db, "vector_indexes", "vector_count", "INTEGER NOT NULL DEFAULT 0"))
        db.exec("UPDATE vector_indexes SET vector_count = (SELECT COUNT(*) FROM vectors WHERE index_id = vector_indexes.id)");
    },
  },
  {
    area: "vectors",
    version: 3,
    // And from before the bytes were: summed once.
    up: (db) => {
      if (addColumnIfMissing(db, "vector_indexes", "bytes", "INTEGER NOT NULL DEFAULT 0"))
        db.exec(
          `UPDATE vector_indexes SET bytes = (SELECT COALESCE(SUM(${RECORD_BYTES_SQL}), 0) FROM vectors WHERE index_id = vector_indexes.id)`,
        );
    },
  },
  { area: "vectors", version: 4, up: (db) => void addColumnIfMissing(db, "vector_indexes", "target_recall", "REAL") },
];

/** What a tenant holds: its indexes, and the vectors and their bytes in all of them. */
export interface VectorUsage {
  indexes: number;
  vectors: number;
  bytes: number;
}

/** One stored write: the label the vector got in the graph and the write's sequence number. */
export interface Written {
  id: string;
  label: number;
  seq: number;
  /** The label the previous version had (now a tombstone), if it existed. */
  replaced: number | undefined;
  created_at: string;
  updated_at: string;
}

interface Counters {
  tenant_id: string;
  next_label: number;
  seq: number;
  vector_count: number;
  bytes: number;
}

export class VectorDb {
  readonly db: Database.Database;
  private readonly st;
  /** Index rows by id, and ids by tenant and name: every vector request looks its index up, and
   * only this process writes the catalog, so it is read from SQLite once. */
  private readonly rows = new Map<string, IndexRow>();
  private readonly names = new Map<string, string>();
  /** Sums per tenant and over all of them, kept by each write (never counted over the records). */
  private readonly usage = new Map<string, VectorUsage>();
  private bytes = 0;

  /** The database file (loading reads it from a worker thread with a connection of its own). */
  readonly file: string;

  constructor(dataDir: string) {
    const file = path.join(dataDir, "vectors.db");
    this.file = file;
    this.db = openSqlite(file);
    migrate(this.db, VECTOR_MIGRATIONS);
    const db = this.db;
    this.st = {
      insertIndex: db.prepare(
        `INSERT INTO vector_indexes (id, tenant_id, name, dimension, metric, vector_type, cloud_provider, region, index_type,
           metadata, delete_protection, created_at, updated_at, target_recall)
         VALUES (@id, @tenant_id, @name, @dimension, @metric, @vector_type, @cloud_provider, @region, @index_type,
           @metadata, @delete_protection, @created_at, @updated_at, @target_recall)`,
      ),
      indexById: db.prepare<[string, string], IndexRow>("SELECT * FROM vector_indexes WHERE id = ? AND tenant_id = ?"),
      indexByName: db.prepare<[string, string], IndexRow>("SELECT * FROM vector_indexes WHERE name = ? AND tenant_id = ?"),
      allIndexes: db.prepare<[], IndexRow>("SELECT * FROM vector_indexes"),
      listIndexes: db.prepare<[string, number, number], IndexRow>(
        "SELECT * FROM vector_indexes WHERE tenant_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?",
      ),
      countIndexes: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM vector_indexes WHERE tenant_id = ?"),
      updateIndex: db.prepare<[string, number, number | null, string, string]>(
        "UPDATE vector_indexes SET metadata = ?, delete_protection = ?, target_recall = ?, updated_at = ? WHERE id = ?",
      ),
      deleteIndex: db.prepare<[string]>("DELETE FROM vector_indexes WHERE id = ?"),
      deleteAllVectors: db.prepare<[string]>("DELETE FROM vectors WHERE index_id = ?"),
      deleteAllTombstones: db.prepare<[string]>("DELETE FROM vector_tombstones WHERE index_id = ?"),
      counters: db.prepare<[string], Counters>("SELECT tenant_id, next_label, seq, vector_count, bytes FROM vector_indexes WHERE id = ?"),
      setCounters: db.prepare<[number, number, number, number, string]>(
        "UPDATE vector_indexes SET next_label = ?, seq = ?, vector_count = ?, bytes = ? WHERE id = ?",
      ),
      existing: db.prepare<[string, string], { label: number; created_at: string; bytes: number; embedding_bytes: number }>(
        `SELECT label, created_at, ${RECORD_BYTES_SQL} AS bytes, length(embedding) AS embedding_bytes FROM vectors WHERE index_id = ? AND id = ?`,
      ),
      usageByTenant: db.prepare<[], VectorUsage & { tenant_id: string }>(
        "SELECT tenant_id, COUNT(*) AS indexes, SUM(vector_count) AS vectors, SUM(bytes) AS bytes FROM vector_indexes GROUP BY tenant_id",
      ),
      putVector: db.prepare(
        `INSERT OR REPLACE INTO vectors (index_id, id, label, embedding, metadata, delete_protection, created_at, updated_at, seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      tombstone: db.prepare<[string, number, number]>("INSERT INTO vector_tombstones (index_id, label, seq) VALUES (?, ?, ?)"),
      deleteVector: db.prepare<[string, string]>("DELETE FROM vectors WHERE index_id = ? AND id = ?"),
      getVector: db.prepare<[string, string], RecordRow>("SELECT * FROM vectors WHERE index_id = ? AND id = ?"),
      getByLabel: db.prepare<[string, number], RecordRow>("SELECT * FROM vectors WHERE index_id = ? AND label = ?"),
      listVectors: db.prepare<[string, number, number], RecordRow>("SELECT * FROM vectors WHERE index_id = ? ORDER BY id LIMIT ? OFFSET ?"),
      // By rowid (the table's own order, which is write order): "+index_id" keeps SQLite from
      // walking the primary key and sorting instead.
      tombstonesAfter: db.prepare<[string, number], { label: number }>(
        "SELECT label FROM vector_tombstones WHERE index_id = ? AND seq > ?",
      ),
      pruneTombstones: db.prepare<[string, number]>("DELETE FROM vector_tombstones WHERE index_id = ? AND seq <= ?"),
      updateVector: db.prepare<[string, number, string, string, string]>(
        "UPDATE vectors SET metadata = ?, delete_protection = ?, updated_at = ? WHERE index_id = ? AND id = ?",
      ),
      setBytes: db.prepare<[number, string]>("UPDATE vector_indexes SET bytes = ? WHERE id = ?"),
    };
    // The catalog is small (one row per index): summed once here, then kept by each write.
    for (const u of this.st.usageByTenant.all()) {
      this.usage.set(u.tenant_id, { indexes: u.indexes, vectors: u.vectors, bytes: u.bytes });
      this.bytes += u.bytes;
    }
  }

  /** What the tenant holds now (every committed write counted). */
  usageOf(tenantId: string): VectorUsage {
    return { ...(this.usage.get(tenantId) ?? { indexes: 0, vectors: 0, bytes: 0 }) };
  }

  /** The bytes of every tenant's vectors together. */
  totalBytes(): number {
    return this.bytes;
  }

  /** Adds a committed change to the tenant's sums. */
  private tally(tenantId: string, change: VectorUsage): void {
    const u = this.usage.get(tenantId) ?? { indexes: 0, vectors: 0, bytes: 0 };
    u.indexes += change.indexes;
    u.vectors += change.vectors;
    u.bytes += change.bytes;
    this.bytes += change.bytes;
    if (u.indexes === 0 && u.vectors === 0 && u.bytes === 0) this.usage.delete(tenantId);
    else this.usage.set(tenantId, u);
  }

  private remember(row: IndexRow | undefined): IndexRow | undefined {
    if (row) {
      this.rows.set(row.id, row);
      this.names.set(`${row.tenant_id}\0${row.name}`, row.id);
    }
    return row;
  }
  private forget(id: string): void {
    const row = this.rows.get(id);
    if (row) this.names.delete(`${row.tenant_id}\0${row.name}`);
    this.rows.delete(id);
  }

  /** Adds an index; `admit` is called first with the tenant's usage, and throwing refuses it. */
  insertIndex(row: IndexRow, admit?: (usage: VectorUsage) => void): void {
    admit?.(this.usageOf(row.tenant_id));
    this.st.insertIndex.run(row);
    this.forget(row.id);
    this.tally(row.tenant_id, { indexes: 1, vectors: 0, bytes: 0 });
  }
  indexById(tenantId: string, id: string): IndexRow | undefined {
    const cached = this.rows.get(id);
    if (cached) return cached.tenant_id === tenantId ? cached : undefined;
    return this.remember(this.st.indexById.get(id, tenantId));
  }
  indexByName(tenantId: string, name: string): IndexRow | undefined {
    const id = this.names.get(`${tenantId}\0${name}`);
    if (id !== undefined) return this.indexById(tenantId, id);
    return this.remember(this.st.indexByName.get(name, tenantId));
  }
  allIndexes(): IndexRow[] {
    return this.st.allIndexes.all();
  }
  listIndexes(tenantId: string, limit: number, offset: number): { rows: IndexRow[]; total: number } {
    return { rows: this.st.listIndexes.all(tenantId, limit, offset), total: (this.st.countIndexes.get(tenantId) as { n: number }).n };
  }
  updateIndex(id: string, metadata: string, deleteProtection: boolean, targetRecall: number | null, at: string): void {
    this.st.updateIndex.run(metadata, deleteProtection ? 1 : 0, targetRecall, at, id);
    this.forget(id);
  }
  /** Removes the index and all its vectors in one transaction. */
  deleteIndex(id: string): void {
    const c = this.db.transaction(() => {
      const c = this.st.counters.get(id);
      this.st.deleteAllVectors.run(id);
      this.st.deleteAllTombstones.run(id);
      this.st.deleteIndex.run(id);
      return c;
    })();
    this.forget(id);
    if (c) this.tally(c.tenant_id, { indexes: -1, vectors: -c.vector_count, bytes: -c.bytes });
  }

  /** Writes a batch in one transaction (all or nothing). `admit` is called before it commits with
   * what the batch adds (replaced vectors count as their difference); throwing refuses it all. */
  upsert(
    indexId: string,
    items: Array<{ id: string; embedding: Float32Array; metadata: Metadata; delete_protection: boolean }>,
    admit?: Admit,
  ): Written[] {
    let tenantId = "";
    let added = { vectors: 0, bytes: 0 };
    const written = this.db.transaction(() => {
      const c = this.st.counters.get(indexId);
      if (!c) throw new Error(`index ${indexId} vanished`);
      tenantId = c.tenant_id;
      let { next_label: label, seq, vector_count: count, bytes } = c;
      const now = new Date().toISOString();
      const out: Written[] = [];
      for (const v of items) {
        seq++;
        const prev = this.st.existing.get(indexId, v.id);
        if (prev) {
          this.st.tombstone.run(indexId, prev.label, seq);
          bytes -= prev.bytes;
        } else count++;
        const created = prev?.created_at ?? now;
        const blob = Buffer.from(v.embedding.buffer, v.embedding.byteOffset, v.embedding.byteLength);
        const metadata = JSON.stringify(v.metadata);
        bytes += recordBytes(v.id, blob.length, metadata);
        this.st.putVector.run(indexId, v.id, label, blob, metadata, v.delete_protection ? 1 : 0, created, now, seq);
        out.push({ id: v.id, label, seq, replaced: prev?.label, created_at: created, updated_at: now });
        label++;
      }
      added = { vectors: count - c.vector_count, bytes: bytes - c.bytes };
      admit?.(added);
      this.st.setCounters.run(label, seq, count, bytes, indexId);
      return out;
    })();
    this.tally(tenantId, { indexes: 0, ...added });
    return written;
  }

  /** Deletes by id in one transaction; returns the labels that were removed. */
  delete(indexId: string, ids: string[]): Array<{ id: string; label: number; seq: number }> {
    let tenantId = "";
    let freed = 0;
    const gone = this.db.transaction(() => {
      const c = this.st.counters.get(indexId);
      if (!c) throw new Error(`index ${indexId} vanished`);
      tenantId = c.tenant_id;
      let seq = c.seq;
      const out: Array<{ id: string; label: number; seq: number }> = [];
      for (const id of ids) {
        const prev = this.st.existing.get(indexId, id);
        if (!prev) continue;
        seq++;
        freed += prev.bytes;
        this.st.deleteVector.run(indexId, id);
        this.st.tombstone.run(indexId, prev.label, seq);
        out.push({ id, label: prev.label, seq });
      }
      this.st.setCounters.run(c.next_label, seq, c.vector_count - out.length, c.bytes - freed, indexId);
      return out;
    })();
    this.tally(tenantId, { indexes: 0, vectors: -gone.length, bytes: -freed });
    return gone;
  }

  get(indexId: string, id: string): RecordRow | undefined {
    return this.st.getVector.get(indexId, id);
  }
  byLabel(indexId: string, label: number): RecordRow | undefined {
    return this.st.getByLabel.get(indexId, label);
  }
  list(indexId: string, limit: number, offset: number): RecordRow[] {
    return this.st.listVectors.all(indexId, limit, offset);
  }
  /** Vectors in the index (kept with each write: counting a large index is slow). */
  count(indexId: string): number {
    return this.st.counters.get(indexId)?.vector_count ?? 0;
  }
  /** Bytes of the index's vectors (kept with each write, as recordBytes counts them). */
  byteCount(indexId: string): number {
    return this.st.counters.get(indexId)?.bytes ?? 0;
  }
  /** One more than the highest label given out in the index. */
  nextLabel(indexId: string): number {
    return this.st.counters.get(indexId)?.next_label ?? 0;
  }
  seq(indexId: string): number {
    return this.st.counters.get(indexId)?.seq ?? 0;
  }
  tombstonesAfter(indexId: string, seq: number): number[] {
    return this.st.tombstonesAfter.all(indexId, seq).map((r) => r.label);
  }
  /** Tombstones a saved graph already accounts for are no longer needed. */
  pruneTombstones(indexId: string, seq: number): void {
    this.st.pruneTombstones.run(indexId, seq);
  }
  /** Replaces a vector's metadata and protection in one transaction; `admit` gets the bytes it adds
   * (throwing refuses it). False when the vector does not exist. */
  updateVector(indexId: string, id: string, metadata: string, deleteProtection: boolean, at: string, admit?: Admit): boolean {
    let tenantId = "";
    let added = 0;
    const done = this.db.transaction(() => {
      const c = this.st.counters.get(indexId);
      const prev = this.st.existing.get(indexId, id);
      if (!c || !prev) return false;
      tenantId = c.tenant_id;
      added = recordBytes(id, prev.embedding_bytes, metadata) - prev.bytes;
      admit?.({ vectors: 0, bytes: added });
      this.st.updateVector.run(metadata, deleteProtection ? 1 : 0, at, indexId, id);
      this.st.setBytes.run(c.bytes + added, indexId);
      return true;
    })();
    if (done) this.tally(tenantId, { indexes: 0, vectors: 0, bytes: added });
    return done;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
