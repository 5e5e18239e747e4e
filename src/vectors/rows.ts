// The vectors database's row shapes and how a record's bytes are counted, shared by the store
// (store.ts, reads on the main thread) and its writer thread (record-writes.ts).
import type { Metric } from "./engine.js";

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

/** An index's running counters, kept in its catalog row with every write. */
export interface Counters {
  tenant_id: string;
  next_label: number;
  seq: number;
  vector_count: number;
  bytes: number;
}

/** A record's bytes as the quotas count them: what is kept for it in memory and on disk (the
 * embedding, the metadata as JSON, the id). RECORD_BYTES_SQL is the same for a stored row. */
export function recordBytes(id: string, embeddingBytes: number, metadataJson: string): number {
  return embeddingBytes + Buffer.byteLength(metadataJson) + Buffer.byteLength(id);
}
export const RECORD_BYTES_SQL = "length(embedding) + length(CAST(metadata AS BLOB)) + length(CAST(id AS BLOB))";
