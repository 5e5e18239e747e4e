// The vectors database (its own SQLite file next to the main one, so vector writes never queue
// behind sandbox bookkeeping): the index catalog and every vector record. It is the source of truth:
// the ANN graph is rebuilt or replayed from it on start. Each write bumps the index's `seq`, and a
// replaced or deleted vector leaves a tombstone with its graph label, so a saved graph can be
// brought up to date by replaying what came after it. Each index row keeps its vector count and
// bytes with every write, and this process keeps their sums per tenant, for the quotas.
// `VectorCatalog` is what the vectors area persists (indexes, records, batches of writes), with
// promise-returning methods; `VectorDb` is its SQLite implementation: reads on the main thread,
// every write on a writer thread's own connection (writer.ts), so no commit runs on the event loop.
import path from "node:path";
import type Database from "better-sqlite3";
import { addColumnIfMissing, type Migration, migrate, openSqlite } from "../store/db.js";
import type { Admit } from "./engine.js";
import type { Metadata } from "./filter.js";
import { readRecords } from "./record-loader.js";
import type { RecordChunk } from "./record-protocol.js";
import { type IndexRow, RECORD_BYTES_SQL, type RecordRow, type VectorUsage, type Written } from "./rows.js";
import type { DeleteDone, UpdateDone, UpsertDone } from "./record-writes.js";
import type { UpsertBatch } from "./writer-protocol.js";
import { VectorWriter } from "./writer.js";
import { UsageTally } from "./usage-tally.js";

export { type IndexRow, type RecordRow, recordBytes, type VectorUsage, type Written } from "./rows.js";

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

/**
 * What the vectors area keeps: the index catalog, each index's records, and batches of writes
 * (all or nothing, the quota check inside). Writes and record reads return promises, one per batch
 * (never one per row). The catalog itself is small and only this process writes it: it is held in
 * memory from the moment the store is open, so an index lookup, a tenant's usage and an index's
 * vector count answer synchronously.
 */
export interface VectorCatalog {
  /** The SQLite file an exact scan reads while an index loads (record-scan.ts); undefined: there is
   * none, and a search of an index still loading waits for its records. */
  readonly scanFile: string | undefined;
  /** Every record of the index, a chunk at a time in write order (loading an index into memory). */
  readRecords(indexId: string, dim: number, chunk: number): AsyncGenerator<RecordChunk>;
  usageOf(tenantId: string): VectorUsage;
  totalBytes(): number;
  indexById(tenantId: string, id: string): IndexRow | undefined;
  indexByName(tenantId: string, name: string): IndexRow | undefined;
  /** Vectors in the index now. */
  count(indexId: string): number;
  /** Adds an index; `admit` is called first with the tenant's usage (in the same step), and throwing refuses it. */
  insertIndex(row: IndexRow, admit?: (usage: VectorUsage) => void): Promise<void>;
  allIndexes(): Promise<IndexRow[]>;
  listIndexes(tenantId: string, limit: number, offset: number): Promise<{ rows: IndexRow[]; total: number }>;
  updateIndex(id: string, metadata: string, deleteProtection: boolean, targetRecall: number | null, at: string): Promise<void>;
  /** Removes the index and all its vectors at once. */
  deleteIndex(id: string): Promise<void>;
  /** Writes a batch, all or nothing; `admit` runs inside it with what the batch adds (throwing refuses it all). */
  upsert(
    indexId: string,
    items: Array<{ id: string; embedding: Float32Array; metadata: Metadata; delete_protection: boolean }>,
    admit?: Admit,
  ): Promise<Written[]>;
  /**
   * Deletes by id, all at once; returns what was removed. `refuseProtected` is called inside it
   * with the ids that have delete protection on (throwing refuses them all).
   */
  delete(
    indexId: string,
    ids: string[],
    refuseProtected?: (protectedIds: string[]) => void,
  ): Promise<Array<{ id: string; label: number; seq: number }>>;
  get(indexId: string, id: string): Promise<RecordRow | undefined>;
  /** Several records by id in one read (absent ones are left out). */
  getMany(indexId: string, ids: string[]): Promise<RecordRow[]>;
  byLabel(indexId: string, label: number): Promise<RecordRow | undefined>;
  list(indexId: string, limit: number, offset: number): Promise<RecordRow[]>;
  byteCount(indexId: string): Promise<number>;
  nextLabel(indexId: string): Promise<number>;
  seq(indexId: string): Promise<number>;
  tombstonesAfter(indexId: string, seq: number): Promise<number[]>;
  pruneTombstones(indexId: string, seq: number): Promise<void>;
  /** Replaces a vector's metadata and protection at once, `admit` inside; false when it does not exist. */
  updateVector(indexId: string, id: string, metadata: string, deleteProtection: boolean, at: string, admit?: Admit): Promise<boolean>;
  /**
   * With a database several nodes write (PostgreSQL): reads the tenant's index `ref` (id or name)
   * again, and returns the indexes whose in-memory copy on this node is no longer current (written
   * by another node, or deleted there). Absent: this process is the only writer.
   */
  sync?(tenantId: string, ref: string): Promise<IndexRow[]>;
  /** Lets the writes under way commit, then closes the database. */
  close(): Promise<void>;
}

export class VectorDb implements VectorCatalog {
  readonly db: Database.Database;
  private readonly st;
  /** Every write goes through it (its own connection, its own thread), in the order posted. */
  private readonly writer: VectorWriter;
  /** Index rows by id, and ids by tenant and name: every vector request looks its index up, and
   * only this process writes the catalog, so it is read from SQLite once, when the store opens. */
  private readonly rows = new Map<string, IndexRow>();
  private readonly names = new Map<string, string>();
  /** Vectors per index, kept by each write. */
  private readonly counts = new Map<string, number>();
  /** Sums per tenant and over all of them, kept by each write (never counted over the records). */
  private readonly sums = new UsageTally();

  /** The database file (loading reads it from a worker thread with a connection of its own). */
  readonly file: string;
  /** The record scanner reads the same file. */
  get scanFile(): string {
    return this.file;
  }

  constructor(dataDir: string) {
    const file = path.join(dataDir, "vectors.db");
    this.file = file;
    this.db = openSqlite(file);
    migrate(this.db, VECTOR_MIGRATIONS);
    // Started now: the first write after a start need not wait for the thread.
    this.writer = new VectorWriter(file);
    const db = this.db;
    this.st = {
      allIndexes: db.prepare<[], IndexRow>("SELECT * FROM vector_indexes"),
      listIndexes: db.prepare<[string, number, number], IndexRow>(
        "SELECT * FROM vector_indexes WHERE tenant_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?",
      ),
      countIndexes: db.prepare<[string], { n: number }>("SELECT COUNT(*) AS n FROM vector_indexes WHERE tenant_id = ?"),
      counters: db.prepare<[string], { next_label: number; seq: number; bytes: number }>(
        "SELECT next_label, seq, bytes FROM vector_indexes WHERE id = ?",
      ),
      usageByTenant: db.prepare<[], VectorUsage & { tenant_id: string }>(
        "SELECT tenant_id, COUNT(*) AS indexes, SUM(vector_count) AS vectors, SUM(bytes) AS bytes FROM vector_indexes GROUP BY tenant_id",
      ),
      getVector: db.prepare<[string, string], RecordRow>("SELECT * FROM vectors WHERE index_id = ? AND id = ?"),
      getByLabel: db.prepare<[string, number], RecordRow>("SELECT * FROM vectors WHERE index_id = ? AND label = ?"),
      listVectors: db.prepare<[string, number, number], RecordRow>("SELECT * FROM vectors WHERE index_id = ? ORDER BY id LIMIT ? OFFSET ?"),
      tombstonesAfter: db.prepare<[string, number], { label: number }>(
        "SELECT label FROM vector_tombstones WHERE index_id = ? AND seq > ?",
      ),
      indexRow: db.prepare<[string], IndexRow>("SELECT * FROM vector_indexes WHERE id = ?"),
    };
    for (const row of this.st.allIndexes.all() as Array<IndexRow & { vector_count: number }>) {
      this.remember(row);
      this.counts.set(row.id, row.vector_count);
    }
    // The catalog is small (one row per index): summed once here, then kept by each write.
    for (const u of this.st.usageByTenant.all()) {
      this.sums.add(u.tenant_id, { indexes: u.indexes, vectors: u.vectors, bytes: u.bytes });
    }
  }

  /** Read by a worker thread with its own read-only connection (record-loader.ts). */
  readRecords(indexId: string, dim: number, chunk: number): AsyncGenerator<RecordChunk> {
    return readRecords(this.file, indexId, dim, chunk);
  }

  /** What the tenant holds now (every committed write counted). */
  usageOf(tenantId: string): VectorUsage {
    return this.sums.of(tenantId);
  }

  /** The bytes of every tenant's vectors together. */
  totalBytes(): number {
    return this.sums.total;
  }

  /** Adds a committed change to the tenant's sums. */
  private tally(tenantId: string, change: VectorUsage): void {
    this.sums.add(tenantId, change);
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
    this.counts.delete(id);
  }

  /** Adds an index; `admit` is called first with the tenant's usage, and throwing refuses it. */
  async insertIndex(row: IndexRow, admit?: (usage: VectorUsage) => void): Promise<void> {
    admit?.(this.usageOf(row.tenant_id));
    await this.writer.write({ op: "insertIndex", row });
    this.remember(this.st.indexRow.get(row.id));
    this.counts.set(row.id, 0);
    this.tally(row.tenant_id, { indexes: 1, vectors: 0, bytes: 0 });
  }
  indexById(tenantId: string, id: string): IndexRow | undefined {
    const row = this.rows.get(id);
    return row?.tenant_id === tenantId ? row : undefined;
  }
  indexByName(tenantId: string, name: string): IndexRow | undefined {
    const id = this.names.get(`${tenantId}\0${name}`);
    return id === undefined ? undefined : this.indexById(tenantId, id);
  }
  async allIndexes(): Promise<IndexRow[]> {
    return [...this.rows.values()];
  }
  async listIndexes(tenantId: string, limit: number, offset: number): Promise<{ rows: IndexRow[]; total: number }> {
    return { rows: this.st.listIndexes.all(tenantId, limit, offset), total: (this.st.countIndexes.get(tenantId) as { n: number }).n };
  }
  async updateIndex(id: string, metadata: string, deleteProtection: boolean, targetRecall: number | null, at: string): Promise<void> {
    await this.writer.write({ op: "updateIndex", indexId: id, metadata, deleteProtection, targetRecall, at });
    const row = this.st.indexRow.get(id);
    if (row) this.remember(row);
  }
  /** Removes the index and all its vectors in one transaction. */
  async deleteIndex(id: string): Promise<void> {
    const c = await this.writer.write<{ tenant_id: string; vector_count: number; bytes: number } | undefined>({
      op: "deleteIndex",
      indexId: id,
    });
    this.forget(id);
    if (c) this.tally(c.tenant_id, { indexes: -1, vectors: -c.vector_count, bytes: -c.bytes });
  }

  /** Writes a batch in one transaction (all or nothing). `admit` is called before it commits with
   * what the batch adds (replaced vectors count as their difference); throwing refuses it all. */
  async upsert(
    indexId: string,
    items: Array<{ id: string; embedding: Float32Array; metadata: Metadata; delete_protection: boolean }>,
    admit?: Admit,
  ): Promise<Written[]> {
    const dim = items[0]?.embedding.length ?? 0;
    // Packed into one array handed over to the writer (the items keep their own).
    const batch: UpsertBatch = {
      ids: items.map((v) => v.id),
      vectors: new Float32Array(items.length * dim),
      dim,
      metadata: items.map((v) => JSON.stringify(v.metadata)),
      protect: Uint8Array.from(items, (v) => (v.delete_protection ? 1 : 0)),
    };
    items.forEach((v, i) => {
      if (v.embedding.length !== dim) throw new Error("every vector of a batch must have the same dimension");
      batch.vectors.set(v.embedding, i * dim);
    });
    const done = await this.writer.write<UpsertDone>(
      { op: "upsert", indexId, batch, check: admit !== undefined },
      admit && ((q) => q.kind === "admit" && admit(q.added)),
      [batch.vectors.buffer as ArrayBuffer],
    );
    this.tally(done.tenantId, { indexes: 0, ...done.added });
    this.counts.set(indexId, (this.counts.get(indexId) ?? 0) + done.added.vectors);
    return done.written;
  }

  /** Deletes by id in one transaction; returns the labels that were removed. */
  async delete(
    indexId: string,
    ids: string[],
    refuseProtected?: (protectedIds: string[]) => void,
  ): Promise<Array<{ id: string; label: number; seq: number }>> {
    const done = await this.writer.write<DeleteDone>(
      { op: "delete", indexId, ids, check: refuseProtected !== undefined },
      refuseProtected && ((q) => q.kind === "protected" && refuseProtected(q.ids)),
    );
    this.tally(done.tenantId, { indexes: 0, vectors: -done.gone.length, bytes: -done.freed });
    this.counts.set(indexId, (this.counts.get(indexId) ?? 0) - done.gone.length);
    return done.gone;
  }

  async get(indexId: string, id: string): Promise<RecordRow | undefined> {
    return this.st.getVector.get(indexId, id);
  }
  async getMany(indexId: string, ids: string[]): Promise<RecordRow[]> {
    const out: RecordRow[] = [];
    for (const id of ids) {
      const row = this.st.getVector.get(indexId, id);
      if (row) out.push(row);
    }
    return out;
  }
  async byLabel(indexId: string, label: number): Promise<RecordRow | undefined> {
    return this.st.getByLabel.get(indexId, label);
  }
  async list(indexId: string, limit: number, offset: number): Promise<RecordRow[]> {
    return this.st.listVectors.all(indexId, limit, offset);
  }
  /** Vectors in the index (kept in memory with each write: counting a large index is slow). */
  count(indexId: string): number {
    return this.counts.get(indexId) ?? 0;
  }
  /** Bytes of the index's vectors (kept with each write, as recordBytes counts them). */
  async byteCount(indexId: string): Promise<number> {
    return this.st.counters.get(indexId)?.bytes ?? 0;
  }
  /** One more than the highest label given out in the index. */
  async nextLabel(indexId: string): Promise<number> {
    return this.st.counters.get(indexId)?.next_label ?? 0;
  }
  async seq(indexId: string): Promise<number> {
    return this.st.counters.get(indexId)?.seq ?? 0;
  }
  async tombstonesAfter(indexId: string, seq: number): Promise<number[]> {
    return this.st.tombstonesAfter.all(indexId, seq).map((r) => r.label);
  }
  /** Tombstones a saved graph already accounts for are no longer needed. */
  async pruneTombstones(indexId: string, seq: number): Promise<void> {
    await this.writer.write({ op: "pruneTombstones", indexId, seq });
  }
  /** Replaces a vector's metadata and protection in one transaction; `admit` gets the bytes it adds
   * (throwing refuses it). False when the vector does not exist. */
  async updateVector(
    indexId: string,
    id: string,
    metadata: string,
    deleteProtection: boolean,
    at: string,
    admit?: Admit,
  ): Promise<boolean> {
    const done = await this.writer.write<UpdateDone>(
      { op: "updateVector", indexId, vectorId: id, metadata, deleteProtection, at, check: admit !== undefined },
      admit && ((q) => q.kind === "admit" && admit(q.added)),
    );
    if (done.done) this.tally(done.tenantId, { indexes: 0, vectors: 0, bytes: done.added });
    return done.done;
  }

  async close(): Promise<void> {
    await this.writer.close();
    if (this.db.open) this.db.close();
  }
}
