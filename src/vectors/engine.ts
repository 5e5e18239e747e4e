// The vector engine interface: what the vectors service needs from whatever stores records and
// answers nearest-neighbour searches. The embedded engine (embedded.ts: SQLite records + an
// in-process HNSW index) implements it; a server engine (PostgreSQL with pgvector, Qdrant) can
// implement the same methods and take over without touching the service or the routes.
import type { Metadata, Predicate } from "./filter.js";

export type Metric = "cosine" | "euclidean" | "dotproduct";

/** What an engine needs to know about an index (the catalog row lives in the service's store). */
export interface IndexSpec {
  id: string;
  dimension: number;
  metric: Metric;
  /** recall@10 the index's searches should reach (the engine's default when absent). */
  targetRecall?: number;
}

/** How an index is doing: whether it answers from its graph yet, and how well. */
export interface IndexHealth {
  /** loading: records being read (writes are accepted, searches are exact, from the stored records); building: the graph is
   * loading or being rebuilt (searches are exact); indexing: recent writes joining the graph
   * (scored exactly meanwhile); ready. */
  status: "loading" | "building" | "indexing" | "ready";
  /** Vectors not yet in the graph. */
  pending: number;
  /** Candidates an unfiltered search walks. */
  searchWidth: number;
  targetRecall: number;
  /** recall@10 measured at searchWidth on a sample of the index's own vectors; absent until measured. */
  estimatedRecall?: number;
  recallMeasuredAt?: string;
}

export interface NewVector {
  id: string;
  embedding: Float32Array;
  metadata: Metadata;
  delete_protection: boolean;
}

export interface VectorRecord {
  id: string;
  embedding: number[];
  metadata: Metadata;
  delete_protection: boolean;
  created_at: string;
  updated_at: string;
}

export interface Hit {
  id: string;
  score: number;
  values?: number[];
  metadata?: Metadata;
}

/** A validated filter: the document (for engines that translate it, e.g. to SQL) and its compiled predicate. */
export interface Filter {
  doc: unknown;
  predicate: Predicate;
}

export interface SearchOptions {
  topK: number;
  filter?: Filter;
  includeValues: boolean;
  includeMetadata: boolean;
  /** Score every vector exactly (no graph). */
  exact?: boolean;
  /** Candidates the graph walks for this search instead of the index's width. */
  searchWidth?: number;
}

/** Called inside a write before it commits, with what it adds to the index (negative when it
 * shrinks it); throwing refuses the whole write and nothing of it is kept. */
export type Admit = (added: { vectors: number; bytes: number }) => void;

export interface VectorEngine {
  /** Prepares the engine's storage for a new index. */
  createIndex(spec: IndexSpec): void;
  /** Removes every vector of the index. */
  dropIndex(spec: IndexSpec): Promise<void>;
  /** Forgets what this process holds of the index (its records were changed by another node): the
   * next use loads it again from the stored records. */
  dropCopy(spec: IndexSpec): Promise<void>;
  /** Loads these indexes into memory now, one after the other (their first searches need not wait for it). */
  warm(specs: IndexSpec[]): Promise<void>;
  /** Frees this node's in-memory copy of an index another node owns now: the next use here loads it again. */
  release(indexId: string): Promise<void>;
  /** The indexes this node holds in memory (loaded or loading). */
  loaded(): string[];
  /** How many times an index was loaded into memory from its records since the start. */
  readonly loads: number;
  /** Inserts or replaces vectors, all or none; visible to the next search once it resolves. */
  upsert(spec: IndexSpec, vectors: NewVector[], admit?: Admit): Promise<void>;
  /** Deletes by id; returns how many existed. `refuseProtected` sees the protected ids in the same step (throwing refuses all). */
  delete(spec: IndexSpec, ids: string[], refuseProtected?: (protectedIds: string[]) => void): Promise<number>;
  fetch(spec: IndexSpec, ids: string[]): Promise<VectorRecord[]>;
  list(spec: IndexSpec, offset: number, limit: number): Promise<{ vectors: VectorRecord[]; total: number }>;
  /** Replaces metadata and/or delete protection of one vector; undefined when it does not exist. */
  update(
    spec: IndexSpec,
    id: string,
    change: { metadata?: Metadata; delete_protection?: boolean },
    admit?: Admit,
  ): Promise<VectorRecord | undefined>;
  /** Nearest vectors first; with a filter, the best `topK` among the vectors that match it. */
  search(spec: IndexSpec, query: Float32Array, opts: SearchOptions): Promise<Hit[]>;
  count(spec: IndexSpec): number;
  /** Load and graph state, search width and measured recall. */
  health(spec: IndexSpec): IndexHealth;
  /** A new recall target for an index (its width adapts). */
  setTargetRecall(spec: IndexSpec, target: number): void;
  /** Persists what speeds up the next start (the ANN graph) and releases resources. */
  close(): Promise<void>;
}
