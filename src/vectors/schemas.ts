// Request and response schemas of the /v1/vectors routes (validation and the OpenAPI document).
// Range checks that depend on the index (dimension, finite values) are the service's.
import { type TSchema, Type } from "@sinclair/typebox";

const Meta = Type.Record(Type.String(), Type.Unknown(), { description: "Free-form JSON object (at most 40 KB serialized)" });
const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);
const TargetRecall = Type.Number({
  minimum: 0.5,
  maximum: 1,
  description:
    "recall@10 the index's graph searches should reach (default 0.97): the index measures its recall on a sample of its own vectors and widens or narrows its search width to keep it",
});

export const IndexParams = Type.Object({ index_id: Type.String({ minLength: 1, maxLength: 256 }) });
export const VectorParams = Type.Object({
  index: Type.String({ minLength: 1, maxLength: 256 }),
  vector_id: Type.String({ minLength: 1, maxLength: 512 }),
});
export const VectorIndexParams = Type.Object({ index: Type.String({ minLength: 1, maxLength: 256 }) });

export const PageQuery = Type.Object({
  page: Type.Optional(Type.String({ pattern: "^[1-9][0-9]{0,8}$", description: "Page number, from 1 (default 1)" })),
  page_size: Type.Optional(Type.String({ pattern: "^[0-9]{1,4}$", description: "Items per page, 1-1000 (default 100)" })),
});

export function pageOf(q: { page?: string; page_size?: string }): { page: number; pageSize: number } {
  return { page: Number(q.page ?? 1), pageSize: Math.min(1000, Math.max(1, Number(q.page_size ?? 100))) };
}

export const CreateIndexBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 128 }),
  dimension: Type.Integer({ minimum: 1, maximum: 2000 }),
  metric: Type.Optional(
    Type.Union([Type.Literal("cosine"), Type.Literal("euclidean"), Type.Literal("dotproduct"), Type.Literal("dot_product")], {
      description: "Default cosine",
    }),
  ),
  vector_type: Type.Optional(Type.Literal("dense")),
  cloud_provider: Type.Optional(Type.String({ maxLength: 64, description: "Accepted and echoed" })),
  region: Type.Optional(Type.String({ maxLength: 64, description: "Accepted and echoed" })),
  index_type: Type.Optional(Type.String({ maxLength: 64, description: "Accepted and echoed" })),
  metadata: Type.Optional(Meta),
  delete_protection: Type.Optional(Type.Boolean()),
  target_recall: Type.Optional(TargetRecall),
});

export const UpdateVectorBody = Type.Object({
  metadata: Type.Optional(Meta),
  delete_protection: Type.Optional(Type.Boolean()),
});
export const UpdateIndexBody = Type.Object({
  metadata: Type.Optional(Meta),
  delete_protection: Type.Optional(Type.Boolean()),
  target_recall: Type.Optional(TargetRecall),
});

export const IndexSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  dimension: Type.Integer(),
  metric: Type.String(),
  vector_type: Type.String(),
  cloud_provider: Nullable(Type.String()),
  region: Nullable(Type.String()),
  index_type: Nullable(Type.String()),
  metadata: Meta,
  delete_protection: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
  status: Type.Union([Type.Literal("loading"), Type.Literal("building"), Type.Literal("indexing"), Type.Literal("ready")], {
    description:
      "loading: its records are being read after a start (writes are accepted; searches are exact, answered from the stored records); building: its graph is loading or being rebuilt (searches are exact meanwhile); indexing: recent writes are joining the graph (they are searched exactly meanwhile); ready",
  }),
  vector_count: Type.Integer(),
  search_width: Type.Integer({ description: "Candidates an unfiltered graph search walks (adapted to target_recall)" }),
  target_recall: Type.Number(),
  estimated_recall: Nullable(
    Type.Number({
      description: "recall@10 measured at search_width on a sample of the index's own vectors (null until measured: at 1,000 vectors)",
    }),
  ),
  recall_measured_at: Nullable(Type.String()),
});

const PaginationSchema = Type.Object({
  page: Type.Integer(),
  page_size: Type.Integer(),
  total: Type.Integer(),
  total_pages: Type.Integer(),
});

export const IndexList = Type.Object({ indexes: Type.Array(IndexSchema), pagination: PaginationSchema });
export const Deleted = Type.Object({ message: Type.String(), id: Type.String() });

const Embedding = Type.Array(Type.Number(), { minItems: 1, maxItems: 2000 });
const VectorIn = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: "Generated when absent" })),
  embedding: Embedding,
  metadata: Type.Optional(Meta),
  delete_protection: Type.Optional(Type.Boolean()),
});
const TextVectorIn = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: "Generated when absent" })),
  text: Type.String({ minLength: 1, maxLength: 100_000 }),
  model: Type.Optional(Type.String({ maxLength: 256, description: "Embedding model; the default model when absent" })),
  metadata: Type.Optional(Meta),
  delete_protection: Type.Optional(Type.Boolean()),
});

export const UpsertBody = Type.Union([Type.Object({ vectors: Type.Array(VectorIn, { maxItems: 1000 }) }), VectorIn]);
export const BatchBody = Type.Object({ vectors: Type.Array(VectorIn, { maxItems: 1000 }) });
export const TextUpsertBody = Type.Union([Type.Object({ vectors: Type.Array(TextVectorIn, { maxItems: 1000 }) }), TextVectorIn]);
export const TextBatchBody = Type.Object({ vectors: Type.Array(TextVectorIn, { maxItems: 1000 }) });

const Usage = Type.Object({ prompt_tokens: Type.Integer(), total_tokens: Type.Integer() });
export const UpsertResult = Type.Object({
  ids: Type.Array(Type.String()),
  count: Type.Integer(),
  upserted_count: Type.Integer(),
  failed_count: Type.Integer(),
  errors: Type.Array(Type.String()),
  usage: Type.Optional(Usage),
});

const SearchCommon = {
  top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: "Default 10" })),
  filter: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description: "Metadata filter: {field: value}, {field: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin|$exists: ...}}, $and/$or arrays",
    }),
  ),
  include_metadata: Type.Optional(Type.Boolean({ description: "Default true" })),
  include_values: Type.Optional(Type.Boolean({ description: "Default false" })),
  exact: Type.Optional(Type.Boolean({ description: "Score every vector exactly instead of searching the graph (slower; default false)" })),
  search_width: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 4096,
      description: "Candidates the graph walks for this search instead of the index's search_width (higher: better recall, slower)",
    }),
  ),
};
export const SearchBody = Type.Object({ vector: Embedding, ...SearchCommon });
export const TextSearchBody = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 100_000 }),
  model: Type.Optional(Type.String({ maxLength: 256 })),
  ...SearchCommon,
});

const HitSchema = Type.Object({
  id: Type.String(),
  score: Type.Number({ description: "Cosine similarity, dot product, or Euclidean distance (by the index's metric)" }),
  values: Type.Optional(Type.Array(Type.Number())),
  metadata: Type.Optional(Meta),
});
export const SearchResult = Type.Object({ hits: Type.Array(HitSchema), query_time_ms: Type.Number(), usage: Type.Optional(Usage) });

export const VectorSchema = Type.Object({
  id: Type.String(),
  embedding: Type.Array(Type.Number()),
  metadata: Meta,
  delete_protection: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export const FetchQuery = Type.Object({
  vector_ids: Type.String({ minLength: 1, maxLength: 600_000, description: "Comma-separated ids" }),
});
export const VectorList = Type.Object({ vectors: Type.Array(VectorSchema), pagination: PaginationSchema });
export const Fetched = Type.Object({ vectors: Type.Array(VectorSchema) });
export const DeleteVectorsBody = Type.Object({ vector_ids: Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 1000 }) });
export const DeletedVectors = Type.Object({ deleted_count: Type.Integer(), message: Type.String() });
