// The vectors service: indexes per tenant (the catalog in store.ts) and the vectors in them (through
// the VectorEngine). Every input is checked before anything is written, and the quotas inside the
// write (limits.ts), so a refused request changes nothing. Knows nothing of HTTP.
import crypto from "node:crypto";
import { ApiError, invalid } from "../errors.js";
import type { Filter, Hit, IndexHealth, IndexSpec, Metric, NewVector, VectorEngine, VectorRecord } from "./engine.js";
import { compileFilter, type Metadata } from "./filter.js";
import type { VectorLimits } from "./limits.js";
import type { IndexRow, VectorCatalog } from "./store.js";

export const MAX_DIMENSION = 2000;
export const MAX_TOP_K = 1000;
export const MAX_BATCH = 1000;
/** Serialized metadata per vector (and per index). */
export const MAX_METADATA_BYTES = 40 * 1024;
export const MAX_SEARCH_WIDTH = 4096;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Turns texts into vectors for the text routes (the gateway's embeddings service). */
export interface TextEmbedder {
  embed(
    who: { tenantId: string; keyId: string },
    model: string | undefined,
    texts: string[],
  ): Promise<{ vectors: Float32Array[]; model: string; tokens: number }>;
}

export interface IndexView {
  id: string;
  name: string;
  dimension: number;
  metric: Metric;
  vector_type: string;
  cloud_provider: string | null;
  region: string | null;
  index_type: string | null;
  metadata: Metadata;
  delete_protection: boolean;
  created_at: string;
  updated_at: string;
  /** "loading" while its records are read after a start (writes are accepted; searches are exact,
   * answered from the stored records), "building" while
   * its graph loads or is rebuilt (searches are exact), "indexing" while recent writes are still
   * joining the graph (they are searchable already), else "ready". */
  status: IndexHealth["status"];
  vector_count: number;
  /** Candidates an unfiltered search walks (adapted to target_recall). */
  search_width: number;
  target_recall: number;
  /** recall@10 measured at search_width on a sample of the index's own vectors; null until measured. */
  estimated_recall: number | null;
  recall_measured_at: string | null;
}

export interface CreateIndex {
  name: string;
  dimension: number;
  metric?: string;
  vector_type?: string;
  cloud_provider?: string;
  region?: string;
  index_type?: string;
  metadata?: Metadata;
  delete_protection?: boolean;
  target_recall?: number;
}

export interface VectorIn {
  id?: string;
  /** JSON's numbers; a Float64Array when the body was parsed off the event loop (batch-parser.ts). */
  embedding?: number[] | Float64Array;
  text?: string;
  model?: string;
  metadata?: Metadata;
  delete_protection?: boolean;
}

export interface SearchIn {
  top_k?: number;
  filter?: unknown;
  include_metadata?: boolean;
  include_values?: boolean;
  exact?: boolean;
  search_width?: number;
}

export interface UpsertResult {
  ids: string[];
  count: number;
  upserted_count: number;
  failed_count: number;
  errors: string[];
  usage?: { prompt_tokens: number; total_tokens: number };
}

/**
 * Whose index it is in a cluster (src/vectors/holding.ts): this node's, another node's, or nobody's
 * (no node serves vectors now). One node alone owns every index.
 */
export type Ownership = (indexId: string) => "mine" | "theirs" | "none";

function metricOf(m: string | undefined): Metric {
  if (m === undefined || m === "cosine") return "cosine";
  if (m === "euclidean") return "euclidean";
  if (m === "dotproduct" || m === "dot_product") return "dotproduct";
  throw invalid(`metric must be cosine, euclidean or dotproduct, got ${JSON.stringify(m)}`);
}

function checkMetadata(m: unknown, where: string): Metadata {
  if (m === undefined || m === null) return {};
  if (typeof m !== "object" || Array.isArray(m)) throw invalid(`${where}: metadata must be an object`);
  // Bytes, not characters: what is stored (and held in memory) is the UTF-8 JSON.
  if (Buffer.byteLength(JSON.stringify(m)) > MAX_METADATA_BYTES)
    throw invalid(`${where}: metadata is larger than ${MAX_METADATA_BYTES} bytes (as JSON)`);
  return m as Metadata;
}

function checkTarget(t: number | undefined): number | undefined {
  if (t === undefined) return undefined;
  if (typeof t !== "number" || !Number.isFinite(t) || t < 0.5 || t > 1) throw invalid("target_recall must be a number from 0.5 to 1");
  return t;
}

export class VectorService {
  /** Which node owns each index (set by the cluster's holding); a new index is made in memory only by its owner. */
  ownership: Ownership = () => "mine";

  constructor(
    private readonly store: VectorCatalog,
    readonly engine: VectorEngine,
    private readonly limits: VectorLimits,
    private readonly embedder?: TextEmbedder,
  ) {}

  private view(row: IndexRow): IndexView {
    const health = this.engine.health(this.spec(row));
    // An index another node owns is not loaded here, and is not loading either: a list through
    // this node says "ready" (its owner answers GET /indexes/{id} with its own state).
    if (health.status === "loading" && this.ownership(row.id) === "theirs") health.status = "ready";
    return {
      id: row.id,
      name: row.name,
      dimension: row.dimension,
      metric: row.metric,
      vector_type: row.vector_type,
      cloud_provider: row.cloud_provider,
      region: row.region,
      index_type: row.index_type,
      metadata: JSON.parse(row.metadata) as Metadata,
      delete_protection: row.delete_protection === 1,
      created_at: row.created_at,
      updated_at: row.updated_at,
      status: health.status,
      vector_count: this.engine.count(this.spec(row)),
      search_width: health.searchWidth,
      target_recall: health.targetRecall,
      estimated_recall: health.estimatedRecall ?? null,
      recall_measured_at: health.recallMeasuredAt ?? null,
    };
  }

  private spec(row: IndexRow): IndexSpec {
    return { id: row.id, dimension: row.dimension, metric: row.metric, targetRecall: row.target_recall ?? undefined };
  }

  /** An index by id or by name, of this tenant only (another tenant's is not found). */
  private row(tenantId: string, ref: string): IndexRow {
    const row = this.store.indexById(tenantId, ref) ?? this.store.indexByName(tenantId, ref);
    if (!row) throw new ApiError("index_not_found", `Vector index '${ref}' was not found`);
    return row;
  }

  /**
   * The tenant's index `ref` as this node must see it: with a database other nodes write too, its
   * row is read again and an in-memory copy made stale by another node's writes is dropped (the
   * next use loads it again from the records). One process alone (SQLite): nothing to do.
   */
  private async fresh(tenantId: string, ref: string): Promise<IndexRow> {
    await this.sync(tenantId, ref);
    return this.row(tenantId, ref);
  }

  private async sync(tenantId: string, ref: string): Promise<void> {
    if (this.store.sync) for (const stale of await this.store.sync(tenantId, ref)) await this.engine.dropCopy(this.spec(stale));
  }

  /**
   * The id of the tenant's index `ref` (an id or a name), undefined when there is none: where a
   * cluster routes its requests. An id known here is final (ids are never reused); a name is read
   * again from the records (the index may have been deleted and made again elsewhere).
   */
  async indexIdOf(tenantId: string, ref: string): Promise<string | undefined> {
    const known = this.store.indexById(tenantId, ref);
    if (known) return known.id;
    await this.sync(tenantId, ref);
    return (this.store.indexById(tenantId, ref) ?? this.store.indexByName(tenantId, ref))?.id;
  }

  /** Every index's engine spec (for loading them all after start). */
  async allSpecs(): Promise<IndexSpec[]> {
    return (await this.store.allIndexes()).map((r) => this.spec(r));
  }

  async createIndex(tenantId: string, req: CreateIndex): Promise<IndexView> {
    if (!NAME.test(req.name)) throw invalid("name must be 1-128 letters, digits, '_', '.', '-', starting with a letter or digit");
    if (!Number.isInteger(req.dimension) || req.dimension < 1 || req.dimension > MAX_DIMENSION)
      throw invalid(`dimension must be an integer from 1 to ${MAX_DIMENSION}`);
    const metric = metricOf(req.metric);
    if (req.vector_type !== undefined && req.vector_type !== "dense") throw invalid("vector_type must be 'dense'");
    const metadata = checkMetadata(req.metadata, "index");
    const targetRecall = checkTarget(req.target_recall);
    await this.sync(tenantId, req.name);
    if (this.store.indexByName(tenantId, req.name)) throw new ApiError("conflict", `A vector index named '${req.name}' already exists`);
    const now = new Date().toISOString();
    const row: IndexRow = {
      id: `vi_${crypto.randomUUID().replaceAll("-", "")}`,
      tenant_id: tenantId,
      name: req.name,
      dimension: req.dimension,
      metric,
      vector_type: "dense",
      cloud_provider: req.cloud_provider ?? null,
      region: req.region ?? null,
      index_type: req.index_type ?? null,
      metadata: JSON.stringify(metadata),
      delete_protection: req.delete_protection ? 1 : 0,
      created_at: now,
      updated_at: now,
      target_recall: targetRecall ?? null,
    };
    try {
      await this.store.insertIndex(row, this.limits.admitIndex(tenantId));
    } catch (err) {
      if (String(err).includes("UNIQUE")) throw new ApiError("conflict", `A vector index named '${req.name}' already exists`);
      throw err;
    }
    // Another node owns it: made in memory there, at its first use (a new index has nothing to load).
    if (this.ownership(row.id) !== "theirs") this.engine.createIndex(this.spec(row));
    return this.view(row);
  }

  async listIndexes(tenantId: string, page: number, pageSize: number) {
    const { rows, total } = await this.store.listIndexes(tenantId, pageSize, (page - 1) * pageSize);
    return {
      indexes: rows.map((r) => this.view(r)),
      pagination: { page, page_size: pageSize, total, total_pages: Math.ceil(total / pageSize) },
    };
  }

  async getIndex(tenantId: string, ref: string): Promise<IndexView> {
    return this.view(await this.fresh(tenantId, ref));
  }

  async updateIndex(
    tenantId: string,
    ref: string,
    change: { metadata?: Metadata; delete_protection?: boolean; target_recall?: number },
  ): Promise<IndexView> {
    const row = await this.fresh(tenantId, ref);
    const metadata = change.metadata === undefined ? row.metadata : JSON.stringify(checkMetadata(change.metadata, "index"));
    const protect = change.delete_protection ?? row.delete_protection === 1;
    const target = change.target_recall === undefined ? row.target_recall : checkTarget(change.target_recall);
    await this.store.updateIndex(row.id, metadata, protect, target ?? null, new Date().toISOString());
    const after = this.row(tenantId, row.id);
    if (target !== row.target_recall && target != null) this.engine.setTargetRecall(this.spec(after), target);
    return this.view(after);
  }

  async deleteIndex(tenantId: string, ref: string): Promise<{ message: string; id: string }> {
    const row = await this.fresh(tenantId, ref);
    if (row.delete_protection === 1)
      throw new ApiError(
        "conflict",
        `Vector index '${row.name}' has delete protection on; turn it off first (PUT with delete_protection: false)`,
      );
    await this.store.deleteIndex(row.id);
    await this.engine.dropIndex(this.spec(row));
    return { message: `Vector index '${row.name}' deleted`, id: row.id };
  }

  /** Checks one vector against its index; every check runs before anything is written. `into`:
   * where its 32-bit copy goes (a batch's copies share one buffer: a thousand small ones per batch
   * were a thousand buffers for the garbage collector to track under a bulk load). */
  private checkVector(row: IndexRow, v: VectorIn, i: number, embedding: ArrayLike<number>, into?: Float32Array): NewVector {
    const where = `vectors[${i}]`;
    if (v.id !== undefined && (typeof v.id !== "string" || v.id.length === 0 || v.id.length > 512))
      throw invalid(`${where}: id must be a string of 1-512 characters`);
    if (embedding.length !== row.dimension)
      throw invalid(`${where}: the embedding has ${embedding.length} dimensions; index '${row.name}' has ${row.dimension}`);
    const f = into ?? new Float32Array(embedding.length);
    for (let j = 0; j < embedding.length; j++) {
      const x = embedding[j] as number;
      if (typeof x !== "number" || !Number.isFinite(x)) throw invalid(`${where}: embedding[${j}] is not a finite number`);
      f[j] = x;
      if (!Number.isFinite(f[j])) throw invalid(`${where}: embedding[${j}] overflows a 32-bit float`);
    }
    return {
      id: v.id ?? crypto.randomUUID(),
      embedding: f,
      metadata: checkMetadata(v.metadata, where),
      delete_protection: v.delete_protection === true,
    };
  }

  private checkBatch(vectors: VectorIn[]): void {
    if (vectors.length === 0) throw invalid("vectors must not be empty");
    if (vectors.length > MAX_BATCH) throw invalid(`at most ${MAX_BATCH} vectors per request`);
  }

  async upsert(tenantId: string, ref: string, vectors: VectorIn[]): Promise<UpsertResult> {
    this.checkBatch(vectors);
    const row = await this.fresh(tenantId, ref);
    const d = row.dimension;
    const packed = new Float32Array(vectors.length * d);
    const items = vectors.map((v, i) => {
      if (!Array.isArray(v.embedding) && !(v.embedding instanceof Float64Array))
        throw invalid(`vectors[${i}]: embedding is required (or use the text routes)`);
      return this.checkVector(row, v, i, v.embedding, packed.subarray(i * d, (i + 1) * d));
    });
    await this.engine.upsert(this.spec(row), items, this.limits.admit(tenantId));
    const ids = items.map((v) => v.id);
    return { ids, count: ids.length, upserted_count: ids.length, failed_count: 0, errors: [] };
  }

  private embedder_(): TextEmbedder {
    if (!this.embedder) throw new ApiError("model_not_found", "No embedding model is configured");
    return this.embedder;
  }

  async upsertText(tenantId: string, keyId: string, ref: string, vectors: VectorIn[]): Promise<UpsertResult> {
    this.checkBatch(vectors);
    const row = await this.fresh(tenantId, ref);
    const model = vectors[0]?.model;
    vectors.forEach((v, i) => {
      if (typeof v.text !== "string" || v.text.length === 0) throw invalid(`vectors[${i}]: text is required`);
      if (v.model !== model) throw invalid(`vectors[${i}]: every vector of a batch must use the same model`);
      checkMetadata(v.metadata, `vectors[${i}]`);
    });
    const out = await this.embedder_().embed(
      { tenantId, keyId },
      model,
      vectors.map((v) => v.text as string),
    );
    const items = vectors.map((v, i) => this.checkVector(row, v, i, out.vectors[i] as Float32Array));
    // The index may have been deleted while the texts were being embedded.
    const now = this.row(tenantId, row.id);
    await this.engine.upsert(this.spec(now), items, this.limits.admit(tenantId));
    const ids = items.map((v) => v.id);
    return {
      ids,
      count: ids.length,
      upserted_count: ids.length,
      failed_count: 0,
      errors: [],
      usage: { prompt_tokens: out.tokens, total_tokens: out.tokens },
    };
  }

  private async searchWith(row: IndexRow, query: ArrayLike<number>, req: SearchIn): Promise<{ hits: Hit[]; query_time_ms: number }> {
    const started = performance.now();
    const topK = req.top_k ?? 10;
    if (!Number.isInteger(topK) || topK < 1 || topK > MAX_TOP_K) throw invalid(`top_k must be an integer from 1 to ${MAX_TOP_K}`);
    if (query.length !== row.dimension)
      throw invalid(`the query vector has ${query.length} dimensions; index '${row.name}' has ${row.dimension}`);
    const q = new Float32Array(query.length);
    for (let j = 0; j < query.length; j++) {
      const x = query[j] as number;
      if (typeof x !== "number" || !Number.isFinite(x)) throw invalid(`vector[${j}] is not a finite number`);
      q[j] = x;
    }
    const width = req.search_width;
    if (width !== undefined && (!Number.isInteger(width) || width < 1 || width > MAX_SEARCH_WIDTH))
      throw invalid(`search_width must be an integer from 1 to ${MAX_SEARCH_WIDTH}`);
    const predicate = compileFilter(req.filter);
    const filter: Filter | undefined = predicate ? { doc: req.filter, predicate } : undefined;
    const hits = await this.engine.search(this.spec(row), q, {
      topK,
      filter,
      includeMetadata: req.include_metadata !== false,
      includeValues: req.include_values === true,
      exact: req.exact === true,
      searchWidth: width,
    });
    return { hits, query_time_ms: Math.round((performance.now() - started) * 1000) / 1000 };
  }

  async search(tenantId: string, ref: string, req: SearchIn & { vector: number[] }) {
    return this.searchWith(await this.fresh(tenantId, ref), req.vector, req);
  }

  async searchText(tenantId: string, keyId: string, ref: string, req: SearchIn & { query: string; model?: string }) {
    const row = await this.fresh(tenantId, ref);
    compileFilter(req.filter); // a bad filter is refused before the embedding is paid for
    const out = await this.embedder_().embed({ tenantId, keyId }, req.model, [req.query]);
    const result = await this.searchWith(this.row(tenantId, row.id), out.vectors[0] as Float32Array, req);
    return { ...result, usage: { prompt_tokens: out.tokens, total_tokens: out.tokens } };
  }

  async fetch(tenantId: string, ref: string, ids: string[]): Promise<{ vectors: VectorRecord[] }> {
    if (ids.length > MAX_BATCH) throw invalid(`at most ${MAX_BATCH} ids per request`);
    return { vectors: await this.engine.fetch(this.spec(await this.fresh(tenantId, ref)), ids) };
  }

  async list(tenantId: string, ref: string, page: number, pageSize: number) {
    const { vectors, total } = await this.engine.list(this.spec(await this.fresh(tenantId, ref)), (page - 1) * pageSize, pageSize);
    return { vectors, pagination: { page, page_size: pageSize, total, total_pages: Math.ceil(total / pageSize) } };
  }

  async get(tenantId: string, ref: string, id: string): Promise<VectorRecord> {
    const [v] = await this.engine.fetch(this.spec(await this.fresh(tenantId, ref)), [id]);
    if (!v) throw new ApiError("vector_not_found", `Vector '${id}' was not found`);
    return v;
  }

  async update(
    tenantId: string,
    ref: string,
    id: string,
    change: { metadata?: Metadata; delete_protection?: boolean },
  ): Promise<VectorRecord> {
    const row = await this.fresh(tenantId, ref);
    const metadata = change.metadata === undefined ? undefined : checkMetadata(change.metadata, "vector");
    const v = await this.engine.update(
      this.spec(row),
      id,
      { metadata, delete_protection: change.delete_protection },
      this.limits.admit(tenantId),
    );
    if (!v) throw new ApiError("vector_not_found", `Vector '${id}' was not found`);
    return v;
  }

  async delete(tenantId: string, ref: string, ids: string[]): Promise<{ deleted_count: number; message: string }> {
    if (ids.length === 0) throw invalid("vector_ids must not be empty");
    if (ids.length > MAX_BATCH) throw invalid(`at most ${MAX_BATCH} ids per request`);
    const spec = this.spec(await this.fresh(tenantId, ref));
    // Checked inside the delete itself: no protection can be turned on between the check and the delete.
    const n = await this.engine.delete(spec, ids, (protectedIds) => {
      throw new ApiError("conflict", `Vectors with delete protection on cannot be deleted: ${protectedIds.slice(0, 10).join(", ")}`);
    });
    return { deleted_count: n, message: `${n} vectors deleted` };
  }
}
