// Every write to the vectors database, run by the writer thread (writer-main.ts) on its own
// connection: index rows, batches of vectors (with tombstones for what they replace), deletes,
// metadata updates. Each write is one transaction; the question it must ask the main thread before
// committing (the quota check, the protected ids of a delete) is awaited inside it, and a refusal
// rolls it back, so a refused write keeps nothing.
import type Database from "better-sqlite3";
import { type Counters, RECORD_BYTES_SQL, recordBytes, type Written } from "./rows.js";
import type { UpsertBatch, WriteOp, WriterQuestion } from "./writer-protocol.js";

export type { Written } from "./rows.js";

/** Asks the main thread; rejects when it refuses (the write is then rolled back). */
export type Ask = (q: WriterQuestion) => Promise<void>;

export interface UpsertDone {
  written: Written[];
  tenantId: string;
  added: { vectors: number; bytes: number };
}
export interface DeleteDone {
  gone: Array<{ id: string; label: number; seq: number }>;
  tenantId: string;
  freed: number;
}
export interface UpdateDone {
  done: boolean;
  tenantId: string;
  added: number;
}

export class RecordWrites {
  private readonly st;

  constructor(private readonly db: Database.Database) {
    this.st = {
      insertIndex: db.prepare(
        `INSERT INTO vector_indexes (id, tenant_id, name, dimension, metric, vector_type, cloud_provider, region, index_type,
           metadata, delete_protection, created_at, updated_at, target_recall)
         VALUES (@id, @tenant_id, @name, @dimension, @metric, @vector_type, @cloud_provider, @region, @index_type,
           @metadata, @delete_protection, @created_at, @updated_at, @target_recall)`,
      ),
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
      putVector: db.prepare(
        `INSERT OR REPLACE INTO vectors (index_id, id, label, embedding, metadata, delete_protection, created_at, updated_at, seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      tombstone: db.prepare<[string, number, number]>("INSERT INTO vector_tombstones (index_id, label, seq) VALUES (?, ?, ?)"),
      deleteVector: db.prepare<[string, string]>("DELETE FROM vectors WHERE index_id = ? AND id = ?"),
      pruneTombstones: db.prepare<[string, number]>("DELETE FROM vector_tombstones WHERE index_id = ? AND seq <= ?"),
      updateVector: db.prepare<[string, number, string, string, string]>(
        "UPDATE vectors SET metadata = ?, delete_protection = ?, updated_at = ? WHERE index_id = ? AND id = ?",
      ),
      setBytes: db.prepare<[number, string]>("UPDATE vector_indexes SET bytes = ? WHERE id = ?"),
      isProtected: db.prepare<[string, string], { one: number }>(
        "SELECT 1 AS one FROM vectors WHERE index_id = ? AND id = ? AND delete_protection = 1",
      ),
    };
  }

  /** Runs `body` in one transaction that may await the main thread; rolled back if it throws. */
  private async tx<T>(body: () => Promise<T> | T): Promise<T> {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      const out = await body();
      this.db.exec("COMMIT");
      return out;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      throw err;
    }
  }

  run(op: WriteOp, ask: Ask): Promise<unknown> {
    switch (op.op) {
      case "insertIndex":
        return this.tx(() => void this.st.insertIndex.run(op.row));
      case "updateIndex":
        return this.tx(() => void this.st.updateIndex.run(op.metadata, op.deleteProtection ? 1 : 0, op.targetRecall, op.at, op.indexId));
      case "deleteIndex":
        return this.tx(() => this.deleteIndex(op.indexId));
      case "upsert":
        return this.tx(() => this.upsert(op.indexId, op.batch, op.check ? ask : undefined));
      case "delete":
        return this.tx(() => this.delete(op.indexId, op.ids, op.check ? ask : undefined));
      case "updateVector":
        return this.tx(() => this.updateVector(op, op.check ? ask : undefined));
      case "pruneTombstones":
        return this.tx(() => void this.st.pruneTombstones.run(op.indexId, op.seq));
    }
  }

  private deleteIndex(id: string): Counters | undefined {
    const c = this.st.counters.get(id);
    this.st.deleteAllVectors.run(id);
    this.st.deleteAllTombstones.run(id);
    this.st.deleteIndex.run(id);
    return c;
  }

  private async upsert(indexId: string, b: UpsertBatch, ask: Ask | undefined): Promise<UpsertDone> {
    const c = this.st.counters.get(indexId);
    if (!c) throw new Error(`index ${indexId} vanished`);
    let { next_label: label, seq, vector_count: count, bytes } = c;
    const now = new Date().toISOString();
    const written: Written[] = [];
    const size = b.dim * 4;
    for (let i = 0; i < b.ids.length; i++) {
      const id = b.ids[i] as string;
      seq++;
      const prev = this.st.existing.get(indexId, id);
      if (prev) {
        this.st.tombstone.run(indexId, prev.label, seq);
        bytes -= prev.bytes;
      } else count++;
      const created = prev?.created_at ?? now;
      const blob = Buffer.from(b.vectors.buffer, b.vectors.byteOffset + i * size, size);
      const metadata = b.metadata[i] as string;
      bytes += recordBytes(id, size, metadata);
      this.st.putVector.run(indexId, id, label, blob, metadata, b.protect[i] ?? 0, created, now, seq);
      written.push({ id, label, seq, replaced: prev?.label, created_at: created, updated_at: now });
      label++;
    }
    const added = { vectors: count - c.vector_count, bytes: bytes - c.bytes };
    await ask?.({ kind: "admit", added });
    this.st.setCounters.run(label, seq, count, bytes, indexId);
    return { written, tenantId: c.tenant_id, added };
  }

  private async delete(indexId: string, ids: string[], ask: Ask | undefined): Promise<DeleteDone> {
    const c = this.st.counters.get(indexId);
    if (!c) throw new Error(`index ${indexId} vanished`);
    if (ask) {
      const locked = ids.filter((id) => this.st.isProtected.get(indexId, id) !== undefined);
      if (locked.length > 0) await ask({ kind: "protected", ids: locked });
    }
    let seq = c.seq;
    let freed = 0;
    const gone: DeleteDone["gone"] = [];
    for (const id of ids) {
      const prev = this.st.existing.get(indexId, id);
      if (!prev) continue;
      seq++;
      freed += prev.bytes;
      this.st.deleteVector.run(indexId, id);
      this.st.tombstone.run(indexId, prev.label, seq);
      gone.push({ id, label: prev.label, seq });
    }
    this.st.setCounters.run(c.next_label, seq, c.vector_count - gone.length, c.bytes - freed, indexId);
    return { gone, tenantId: c.tenant_id, freed };
  }

  private async updateVector(op: Extract<WriteOp, { op: "updateVector" }>, ask: Ask | undefined): Promise<UpdateDone> {
    const c = this.st.counters.get(op.indexId);
    const prev = this.st.existing.get(op.indexId, op.vectorId);
    if (!c || !prev) return { done: false, tenantId: "", added: 0 };
    const added = recordBytes(op.vectorId, prev.embedding_bytes, op.metadata) - prev.bytes;
    await ask?.({ kind: "admit", added: { vectors: 0, bytes: added } });
    this.st.updateVector.run(op.metadata, op.deleteProtection ? 1 : 0, op.at, op.indexId, op.vectorId);
    this.st.setBytes.run(c.bytes + added, op.indexId);
    return { done: true, tenantId: c.tenant_id, added };
  }
}
