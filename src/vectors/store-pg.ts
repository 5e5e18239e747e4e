// The vector catalog and records in PostgreSQL (the twin of store.ts's VectorDb, with a database URL
// set): the same tables, counters, tombstones and all-or-nothing batches, so any node can rebuild an
// index's in-memory graph from the records. Each write is one transaction holding its index's row
// lock (labels and seqs are handed out under it); a write with a quota check first takes the
// tenant's advisory lock and reads the tenant's usage from the database, so quotas hold over every
// node writing at once. The catalog is cached in memory as VectorDb caches it (lookups answer
// synchronously); the records are read back a chunk at a time in write order (by seq).
import type { PgClient, PgMigration, PgPool } from "../store/pg.js";
import { inTransaction, migratePg } from "../store/pg.js";
import type { Admit } from "./engine.js";
import type { Metadata } from "./filter.js";
import type { RecordChunk } from "./record-protocol.js";
import { type Counters, type IndexRow, type RecordRow, recordBytes, type VectorUsage, type Written } from "./rows.js";
import type { VectorCatalog } from "./store.js";
import { UsageTally } from "./usage-tally.js";

export const PG_VECTOR_MIGRATIONS: PgMigration[] = [
  {
    area: "vectors",
    version: 1,
    sql: `CREATE TABLE vector_indexes (
       id TEXT COLLATE "C" PRIMARY KEY,
       tenant_id TEXT COLLATE "C" NOT NULL,
       name TEXT COLLATE "C" NOT NULL,
       dimension INTEGER NOT NULL,
       metric TEXT COLLATE "C" NOT NULL,
       vector_type TEXT COLLATE "C" NOT NULL,
       cloud_provider TEXT COLLATE "C",
       region TEXT COLLATE "C",
       index_type TEXT COLLATE "C",
       metadata TEXT COLLATE "C" NOT NULL,
       delete_protection INTEGER NOT NULL,
       created_at TEXT COLLATE "C" NOT NULL,
       updated_at TEXT COLLATE "C" NOT NULL,
       target_recall DOUBLE PRECISION,
       next_label BIGINT NOT NULL DEFAULT 0,
       seq BIGINT NOT NULL DEFAULT 0,
       vector_count BIGINT NOT NULL DEFAULT 0,
       bytes BIGINT NOT NULL DEFAULT 0,
       -- Raised by every write to the index's records (metadata updates too): a node whose
       -- in-memory copy was made at another count rebuilds it (sync()).
       changes BIGINT NOT NULL DEFAULT 0,
       UNIQUE (tenant_id, name)
     );
     CREATE TABLE vectors (
       index_id TEXT COLLATE "C" NOT NULL,
       id TEXT COLLATE "C" NOT NULL,
       label BIGINT NOT NULL,
       embedding BYTEA NOT NULL,
       metadata TEXT COLLATE "C" NOT NULL,
       delete_protection INTEGER NOT NULL,
       created_at TEXT COLLATE "C" NOT NULL,
       updated_at TEXT COLLATE "C" NOT NULL,
       seq BIGINT NOT NULL,
       PRIMARY KEY (index_id, id)
     );
     CREATE INDEX vectors_seq ON vectors (index_id, seq);
     CREATE INDEX vectors_label ON vectors (index_id, label);
     CREATE TABLE vector_tombstones (
       index_id TEXT COLLATE "C" NOT NULL,
       label BIGINT NOT NULL,
       seq BIGINT NOT NULL
     );
     CREATE INDEX vector_tombstones_seq ON vector_tombstones (index_id, seq);`,
  },
];

/** A stored record's bytes as recordBytes() counts them, in SQL. */
const RECORD_BYTES_PG = "length(embedding) + octet_length(metadata) + octet_length(id)";
const INDEX_COLUMNS =
  "id, tenant_id, name, dimension, metric, vector_type, cloud_provider, region, index_type, metadata, delete_protection, created_at, updated_at, target_recall";
const RECORD_COLUMNS = "id, label, embedding, metadata, delete_protection, created_at, updated_at, seq";

/** Two transactions of a tenant that both check its quota take turns (any constant namespace). */
const TENANT_LOCK = 0x76656374; // "vect"

/** The SQLite store's message for a name already taken (the service maps it to 409 conflict). */
class NameTaken extends Error {
  constructor() {
    super("UNIQUE constraint failed: vector_indexes.tenant_id, vector_indexes.name");
  }
}

export class PgVectorCatalog implements VectorCatalog {
  /** No SQLite file: a search of an index still loading waits for its records. */
  readonly scanFile = undefined;
  private readonly rows = new Map<string, IndexRow>();
  private readonly names = new Map<string, string>();
  private readonly counts = new Map<string, number>();
  private readonly sums = new UsageTally();
  /** Each index's `changes` as this node's in-memory copy of its records knows them (-1: unknown). */
  private readonly known = new Map<string, number>();
  /** Writes under way (close() waits for them). */
  private readonly pending = new Set<Promise<unknown>>();

  private constructor(private readonly pool: PgPool) {}

  static async open(pool: PgPool): Promise<PgVectorCatalog> {
    await migratePg(pool, PG_VECTOR_MIGRATIONS);
    const c = new PgVectorCatalog(pool);
    const { rows } = await pool.query<IndexRow & { vector_count: number; bytes: number; changes: number }>(
      `SELECT ${INDEX_COLUMNS}, vector_count, bytes, changes FROM vector_indexes`,
    );
    for (const row of rows) {
      c.remember(row);
      c.known.set(row.id, row.changes);
      c.counts.set(row.id, row.vector_count);
      c.tally(row.tenant_id, { indexes: 1, vectors: row.vector_count, bytes: row.bytes });
    }
    return c;
  }

  usageOf(tenantId: string): VectorUsage {
    return this.sums.of(tenantId);
  }

  totalBytes(): number {
    return this.sums.total;
  }

  private tally(tenantId: string, change: VectorUsage): void {
    this.sums.add(tenantId, change);
  }

  /** The index row as the service sees it (the row from the database carries its counters too). */
  private remember(row: IndexRow): void {
    const clean: IndexRow = {
      id: row.id,
      tenant_id: row.tenant_id,
      name: row.name,
      dimension: row.dimension,
      metric: row.metric,
      vector_type: row.vector_type,
      cloud_provider: row.cloud_provider,
      region: row.region,
      index_type: row.index_type,
      metadata: row.metadata,
      delete_protection: row.delete_protection,
      created_at: row.created_at,
      updated_at: row.updated_at,
      target_recall: row.target_recall,
    };
    this.rows.set(row.id, clean);
    this.names.set(`${row.tenant_id}\0${row.name}`, row.id);
  }

  private forget(id: string): void {
    const row = this.rows.get(id);
    if (row) this.names.delete(`${row.tenant_id}\0${row.name}`);
    this.rows.delete(id);
    this.counts.delete(id);
    this.known.delete(id);
  }

  /** Runs a write in one transaction, counted as under way until it settles. */
  private write<T>(body: (client: PgClient) => Promise<T>): Promise<T> {
    const p = inTransaction(this.pool, body);
    this.pending.add(p);
    const done = () => this.pending.delete(p);
    p.then(done, done);
    return p;
  }

  /**
   * Takes the tenant's lock for the rest of the transaction and reads its usage from the database
   * (every node's writes counted), so a quota check that follows sees what is committed everywhere.
   */
  private async lockTenant(client: PgClient, tenantId: string): Promise<void> {
    await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [TENANT_LOCK, tenantId]);
    const { rows } = await client.query<{ indexes: number; vectors: number | null; bytes: number | null }>(
      "SELECT COUNT(*) AS indexes, SUM(vector_count) AS vectors, SUM(bytes) AS bytes FROM vector_indexes WHERE tenant_id = $1",
      [tenantId],
    );
    const now = { indexes: rows[0]?.indexes ?? 0, vectors: rows[0]?.vectors ?? 0, bytes: rows[0]?.bytes ?? 0 };
    const known = this.usageOf(tenantId);
    this.tally(tenantId, { indexes: now.indexes - known.indexes, vectors: now.vectors - known.vectors, bytes: now.bytes - known.bytes });
  }

  /** The index's counters, its row locked until the transaction ends (writes to one index take turns). */
  private async counters(client: PgClient, indexId: string): Promise<(Counters & { changes: number }) | undefined> {
    const { rows } = await client.query<Counters & { changes: number }>(
      "SELECT tenant_id, next_label, seq, vector_count, bytes, changes FROM vector_indexes WHERE id = $1 FOR UPDATE",
      [indexId],
    );
    return rows[0];
  }

  /** Writes the counters after a write to the records (one more change). */
  private async setCounters(client: PgClient, indexId: string, c: Omit<Counters, "tenant_id">): Promise<void> {
    await client.query(
      "UPDATE vector_indexes SET next_label = $1, seq = $2, vector_count = $3, bytes = $4, changes = changes + 1 WHERE id = $5",
      [c.next_label, c.seq, c.vector_count, c.bytes, indexId],
    );
  }

  /** After a committed write that found `before` changes: this node's copy is current only if it knew them all. */
  private wrote(indexId: string, before: number): void {
    this.known.set(indexId, this.known.get(indexId) === before ? before + 1 : -1);
  }

  async insertIndex(row: IndexRow, admit?: (usage: VectorUsage) => void): Promise<void> {
    try {
      await this.write(async (client) => {
        if (admit) {
          await this.lockTenant(client, row.tenant_id);
          admit(this.usageOf(row.tenant_id));
        }
        await client.query(
          `INSERT INTO vector_indexes (${INDEX_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
          [
            row.id,
            row.tenant_id,
            row.name,
            row.dimension,
            row.metric,
            row.vector_type,
            row.cloud_provider,
            row.region,
            row.index_type,
            row.metadata,
            row.delete_protection,
            row.created_at,
            row.updated_at,
            row.target_recall,
          ],
        );
      });
    } catch (err) {
      if ((err as { code?: string }).code === "23505") throw new NameTaken();
      throw err;
    }
    this.remember(row);
    this.counts.set(row.id, 0);
    this.known.set(row.id, 0);
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

  count(indexId: string): number {
    return this.counts.get(indexId) ?? 0;
  }

  async allIndexes(): Promise<IndexRow[]> {
    return [...this.rows.values()];
  }

  async listIndexes(tenantId: string, limit: number, offset: number): Promise<{ rows: IndexRow[]; total: number }> {
    const [page, total] = await Promise.all([
      this.pool.query<IndexRow>(
        `SELECT ${INDEX_COLUMNS} FROM vector_indexes WHERE tenant_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
        [tenantId, limit, offset],
      ),
      this.pool.query<{ n: number }>("SELECT COUNT(*) AS n FROM vector_indexes WHERE tenant_id = $1", [tenantId]),
    ]);
    return { rows: page.rows, total: total.rows[0]?.n ?? 0 };
  }

  async updateIndex(id: string, metadata: string, deleteProtection: boolean, targetRecall: number | null, at: string): Promise<void> {
    const { rows } = await this.write((client) =>
      client.query<IndexRow>(
        `UPDATE vector_indexes SET metadata = $1, delete_protection = $2, target_recall = $3, updated_at = $4 WHERE id = $5 RETURNING ${INDEX_COLUMNS}`,
        [metadata, deleteProtection ? 1 : 0, targetRecall, at, id],
      ),
    );
    if (rows[0]) this.remember(rows[0]);
  }

  async deleteIndex(id: string): Promise<void> {
    const c = await this.write(async (client) => {
      const c = await this.counters(client, id);
      await client.query("DELETE FROM vectors WHERE index_id = $1", [id]);
      await client.query("DELETE FROM vector_tombstones WHERE index_id = $1", [id]);
      await client.query("DELETE FROM vector_indexes WHERE id = $1", [id]);
      return c;
    });
    this.forget(id);
    if (c) this.tally(c.tenant_id, { indexes: -1, vectors: -c.vector_count, bytes: -c.bytes });
  }

  async upsert(
    indexId: string,
    items: Array<{ id: string; embedding: Float32Array; metadata: Metadata; delete_protection: boolean }>,
    admit?: Admit,
  ): Promise<Written[]> {
    const dim = items[0]?.embedding.length ?? 0;
    for (const v of items) if (v.embedding.length !== dim) throw new Error("every vector of a batch must have the same dimension");
    const done = await this.write(async (client) => {
      const tenantId = this.rows.get(indexId)?.tenant_id;
      if (admit && tenantId !== undefined) await this.lockTenant(client, tenantId);
      const c = await this.counters(client, indexId);
      if (!c) throw new Error(`index ${indexId} vanished`);
      const ids = [...new Set(items.map((v) => v.id))];
      const { rows: existing } = await client.query<{ id: string; label: number; created_at: string; bytes: number }>(
        `SELECT id, label, created_at, ${RECORD_BYTES_PG} AS bytes FROM vectors WHERE index_id = $1 AND id = ANY($2)`,
        [indexId, ids],
      );
      // What each id holds as the batch goes on (an id twice in a batch: the second replaces the first).
      const held = new Map(existing.map((r) => [r.id, r]));
      let { next_label: label, seq, vector_count: count, bytes } = c;
      const now = new Date().toISOString();
      const written: Written[] = [];
      const tombstones: { label: number; seq: number }[] = [];
      const rows = new Map<string, { label: number; embedding: Buffer; metadata: string; protect: number; created: string; seq: number }>();
      for (const v of items) {
        seq++;
        const prev = held.get(v.id);
        if (prev) {
          tombstones.push({ label: prev.label, seq });
          bytes -= prev.bytes;
        } else count++;
        const created = prev?.created_at ?? now;
        const metadata = JSON.stringify(v.metadata);
        const size = recordBytes(v.id, dim * 4, metadata);
        bytes += size;
        const embedding = Buffer.from(v.embedding.buffer, v.embedding.byteOffset, dim * 4);
        rows.set(v.id, { label, embedding, metadata, protect: v.delete_protection ? 1 : 0, created, seq });
        held.set(v.id, { id: v.id, label, created_at: created, bytes: size });
        written.push({ id: v.id, label, seq, replaced: prev?.label, created_at: created, updated_at: now });
        label++;
      }
      const added = { vectors: count - c.vector_count, bytes: bytes - c.bytes };
      admit?.(added);
      const final = [...rows.entries()];
      await client.query(
        `INSERT INTO vectors (index_id, id, label, embedding, metadata, delete_protection, created_at, updated_at, seq)
         SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::bytea[], $5::text[], $6::int[], $7::text[], $8::text[], $9::bigint[])
         ON CONFLICT (index_id, id) DO UPDATE SET label = EXCLUDED.label, embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata,
           delete_protection = EXCLUDED.delete_protection, updated_at = EXCLUDED.updated_at, seq = EXCLUDED.seq`,
        [
          indexId,
          final.map(([id]) => id),
          final.map(([, r]) => r.label),
          final.map(([, r]) => r.embedding),
          final.map(([, r]) => r.metadata),
          final.map(([, r]) => r.protect),
          final.map(([, r]) => r.created),
          final.map(() => now),
          final.map(([, r]) => r.seq),
        ],
      );
      await this.tombstone(client, indexId, tombstones);
      await this.setCounters(client, indexId, { next_label: label, seq, vector_count: count, bytes });
      return { written, tenantId: c.tenant_id, added, before: c.changes };
    });
    this.wrote(indexId, done.before);
    this.tally(done.tenantId, { indexes: 0, ...done.added });
    this.counts.set(indexId, (this.counts.get(indexId) ?? 0) + done.added.vectors);
    return done.written;
  }

  private async tombstone(client: PgClient, indexId: string, stones: { label: number; seq: number }[]): Promise<void> {
    if (stones.length === 0) return;
    await client.query("INSERT INTO vector_tombstones (index_id, label, seq) SELECT $1, * FROM unnest($2::bigint[], $3::bigint[])", [
      indexId,
      stones.map((t) => t.label),
      stones.map((t) => t.seq),
    ]);
  }

  async delete(
    indexId: string,
    ids: string[],
    refuseProtected?: (protectedIds: string[]) => void,
  ): Promise<Array<{ id: string; label: number; seq: number }>> {
    const done = await this.write(async (client) => {
      const c = await this.counters(client, indexId);
      if (!c) throw new Error(`index ${indexId} vanished`);
      if (refuseProtected) {
        const { rows } = await client.query<{ id: string }>(
          "SELECT id FROM vectors WHERE index_id = $1 AND id = ANY($2) AND delete_protection = 1",
          [indexId, ids],
        );
        const locked = new Set(rows.map((r) => r.id));
        // In the order asked, as the SQLite store reports them.
        if (locked.size > 0) refuseProtected(ids.filter((id) => locked.has(id)));
      }
      const { rows: removed } = await client.query<{ id: string; label: number; bytes: number }>(
        `DELETE FROM vectors WHERE index_id = $1 AND id = ANY($2) RETURNING id, label, ${RECORD_BYTES_PG} AS bytes`,
        [indexId, ids],
      );
      const byId = new Map(removed.map((r) => [r.id, r]));
      let seq = c.seq;
      let freed = 0;
      const gone: Array<{ id: string; label: number; seq: number }> = [];
      // Seqs in the order the ids were asked (each id once).
      for (const id of ids) {
        const r = byId.get(id);
        if (!r) continue;
        byId.delete(id);
        seq++;
        freed += r.bytes;
        gone.push({ id, label: r.label, seq });
      }
      await this.tombstone(client, indexId, gone);
      if (gone.length > 0)
        await this.setCounters(client, indexId, {
          next_label: c.next_label,
          seq,
          vector_count: c.vector_count - gone.length,
          bytes: c.bytes - freed,
        });
      return { gone, tenantId: c.tenant_id, freed, before: c.changes };
    });
    if (done.gone.length > 0) this.wrote(indexId, done.before);
    this.tally(done.tenantId, { indexes: 0, vectors: -done.gone.length, bytes: -done.freed });
    this.counts.set(indexId, (this.counts.get(indexId) ?? 0) - done.gone.length);
    return done.gone;
  }

  async updateVector(
    indexId: string,
    id: string,
    metadata: string,
    deleteProtection: boolean,
    at: string,
    admit?: Admit,
  ): Promise<boolean> {
    const done = await this.write(async (client) => {
      const tenantId = this.rows.get(indexId)?.tenant_id;
      if (admit && tenantId !== undefined) await this.lockTenant(client, tenantId);
      const c = await this.counters(client, indexId);
      if (!c) return undefined;
      const { rows } = await client.query<{ bytes: number; embedding_bytes: number }>(
        `SELECT ${RECORD_BYTES_PG} AS bytes, length(embedding) AS embedding_bytes FROM vectors WHERE index_id = $1 AND id = $2`,
        [indexId, id],
      );
      const prev = rows[0];
      if (!prev) return undefined;
      const added = recordBytes(id, prev.embedding_bytes, metadata) - prev.bytes;
      admit?.({ vectors: 0, bytes: added });
      await client.query("UPDATE vectors SET metadata = $1, delete_protection = $2, updated_at = $3 WHERE index_id = $4 AND id = $5", [
        metadata,
        deleteProtection ? 1 : 0,
        at,
        indexId,
        id,
      ]);
      await client.query("UPDATE vector_indexes SET bytes = $1, changes = changes + 1 WHERE id = $2", [c.bytes + added, indexId]);
      return { tenantId: c.tenant_id, added, before: c.changes };
    });
    if (done) {
      this.wrote(indexId, done.before);
      this.tally(done.tenantId, { indexes: 0, vectors: 0, bytes: done.added });
    }
    return done !== undefined;
  }

  async get(indexId: string, id: string): Promise<RecordRow | undefined> {
    return (await this.pool.query<RecordRow>(`SELECT ${RECORD_COLUMNS} FROM vectors WHERE index_id = $1 AND id = $2`, [indexId, id]))
      .rows[0];
  }

  async getMany(indexId: string, ids: string[]): Promise<RecordRow[]> {
    if (ids.length === 0) return [];
    return (await this.pool.query<RecordRow>(`SELECT ${RECORD_COLUMNS} FROM vectors WHERE index_id = $1 AND id = ANY($2)`, [indexId, ids]))
      .rows;
  }

  async byLabel(indexId: string, label: number): Promise<RecordRow | undefined> {
    return (await this.pool.query<RecordRow>(`SELECT ${RECORD_COLUMNS} FROM vectors WHERE index_id = $1 AND label = $2`, [indexId, label]))
      .rows[0];
  }

  async list(indexId: string, limit: number, offset: number): Promise<RecordRow[]> {
    return (
      await this.pool.query<RecordRow>(`SELECT ${RECORD_COLUMNS} FROM vectors WHERE index_id = $1 ORDER BY id LIMIT $2 OFFSET $3`, [
        indexId,
        limit,
        offset,
      ])
    ).rows;
  }

  private async counter(indexId: string, column: "bytes" | "next_label" | "seq"): Promise<number> {
    const { rows } = await this.pool.query<Record<string, number>>(`SELECT ${column} AS v FROM vector_indexes WHERE id = $1`, [indexId]);
    return rows[0]?.v ?? 0;
  }

  byteCount(indexId: string): Promise<number> {
    return this.counter(indexId, "bytes");
  }

  nextLabel(indexId: string): Promise<number> {
    return this.counter(indexId, "next_label");
  }

  seq(indexId: string): Promise<number> {
    return this.counter(indexId, "seq");
  }

  async tombstonesAfter(indexId: string, seq: number): Promise<number[]> {
    const { rows } = await this.pool.query<{ label: number }>("SELECT label FROM vector_tombstones WHERE index_id = $1 AND seq > $2", [
      indexId,
      seq,
    ]);
    return rows.map((r) => r.label);
  }

  async pruneTombstones(indexId: string, seq: number): Promise<void> {
    await this.write((client) => client.query("DELETE FROM vector_tombstones WHERE index_id = $1 AND seq <= $2", [indexId, seq]));
  }

  /** Every record of the index in write order (by seq), a chunk per query, the embeddings packed. */
  async *readRecords(indexId: string, dim: number, chunk: number): AsyncGenerator<RecordChunk> {
    let after = -1;
    for (;;) {
      const { rows } = await this.pool.query<{ id: string; label: number; embedding: Buffer; metadata: string; seq: number }>(
        "SELECT id, label, embedding, metadata, seq FROM vectors WHERE index_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        [indexId, after, chunk],
      );
      const n = rows.length;
      const out: RecordChunk = {
        labels: new Float64Array(n),
        seqs: new Float64Array(n),
        vectors: new Float32Array(n * dim),
        ids: new Array<string>(n),
        metadata: new Array<string>(n),
      };
      const bytes = new Uint8Array(out.vectors.buffer);
      rows.forEach((r, i) => {
        if (r.embedding.length !== dim * 4)
          throw new Error(`record ${r.id} has ${r.embedding.length} bytes of embedding, expected ${dim * 4}`);
        bytes.set(r.embedding, i * dim * 4);
        out.labels[i] = r.label;
        out.seqs[i] = r.seq;
        out.ids[i] = r.id;
        out.metadata[i] = r.metadata;
      });
      if (n > 0) yield out;
      if (n < chunk) return;
      after = rows[n - 1]?.seq ?? after;
    }
  }

  /**
   * Reads the tenant's index `ref` (an id, else a name) from the database into the cache: another
   * node may have made, changed, written to or deleted it. Returns the index rows whose in-memory
   * copy on this node is no longer current (records written by another node, or the index gone).
   */
  async sync(tenantId: string, ref: string): Promise<IndexRow[]> {
    const { rows } = await this.pool.query<IndexRow & { vector_count: number; bytes: number; changes: number }>(
      `SELECT ${INDEX_COLUMNS}, vector_count, bytes, changes FROM vector_indexes WHERE tenant_id = $1 AND (id = $2 OR name = $2)
       ORDER BY (id = $2) DESC LIMIT 1`,
      [tenantId, ref],
    );
    const cached = this.indexById(tenantId, ref) ?? this.indexByName(tenantId, ref);
    const row = rows[0];
    const stale: IndexRow[] = [];
    if (cached && cached.id !== row?.id) {
      // Deleted elsewhere (or its name now another index's).
      stale.push(cached);
      this.tally(cached.tenant_id, { indexes: -1, vectors: -this.count(cached.id), bytes: 0 });
      this.forget(cached.id);
    }
    if (!row) return stale;
    const before = this.known.get(row.id);
    if (before === undefined) this.tally(tenantId, { indexes: 1, vectors: 0, bytes: 0 });
    this.tally(tenantId, { indexes: 0, vectors: row.vector_count - this.count(row.id), bytes: 0 });
    this.remember(row);
    this.counts.set(row.id, row.vector_count);
    if (before !== row.changes) {
      this.known.set(row.id, row.changes);
      stale.push(this.rows.get(row.id) as IndexRow);
    }
    return stale;
  }

  /** Lets the writes under way commit; the pool is its opener's to end. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }
}
