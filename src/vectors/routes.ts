// The /v1/vectors routes: thin adapters from HTTP to the VectorService (indexes, upserts, search,
// reads, deletes). The caller's tenant scopes every index.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { parseJsonBody } from "../api/json-body.js";
import { errors } from "../api/schemas/common.js";
import { BatchParser } from "./batch-parser.js";
import {
  BatchBody,
  CreateIndexBody,
  Deleted,
  DeletedVectors,
  DeleteVectorsBody,
  Fetched,
  FetchQuery,
  IndexList,
  IndexParams,
  IndexSchema,
  PageQuery,
  pageOf,
  SearchBody,
  SearchResult,
  TextBatchBody,
  TextSearchBody,
  TextUpsertBody,
  UpdateIndexBody,
  UpdateVectorBody,
  UpsertBody,
  UpsertResult,
  VectorIndexParams,
  VectorList,
  VectorParams,
  VectorSchema,
} from "./schemas.js";
import type { VectorIn, VectorService } from "./service.js";

const tags = ["vectors"];
/** Write routes take a full batch: 1,000 vectors of 2,000 dimensions at JSON's full precision. */
const BATCH_BODY_LIMIT = 64 * 2 ** 20;
/** Upsert bodies from this size on are parsed in a worker thread (a smaller one parses here in
 * less time than the round trip takes; 1,000 vectors of 128 dimensions are ~1.3 MB). */
const OFF_THREAD_MIN = 64 * 1024;

/** A single vector or {vectors: [...]}, as a list. */
function listOf(body: { vectors: VectorIn[] } | VectorIn): VectorIn[] {
  return "vectors" in body && Array.isArray(body.vectors) ? body.vectors : [body as VectorIn];
}

export async function vectorRoutes(app: FastifyInstance, opts: { vectors: VectorService; maxJsonDepth?: number }): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const svc = opts.vectors;

  api.post(
    "/indexes",
    { schema: { tags, summary: "Create a vector index", body: CreateIndexBody, response: { 200: IndexSchema, ...errors(400, 401, 409) } } },
    async (request) => svc.createIndex(request.apiKey.tenantId, request.body),
  );
  api.get(
    "/indexes",
    { schema: { tags, summary: "List vector indexes", querystring: PageQuery, response: { 200: IndexList, ...errors(400, 401) } } },
    async (request) => {
      const { page, pageSize } = pageOf(request.query);
      return svc.listIndexes(request.apiKey.tenantId, page, pageSize);
    },
  );
  api.get(
    "/indexes/:index_id",
    {
      schema: {
        tags,
        summary: "Get a vector index (by id or name)",
        params: IndexParams,
        response: { 200: IndexSchema, ...errors(401, 404) },
      },
    },
    async (request) => svc.getIndex(request.apiKey.tenantId, request.params.index_id),
  );
  api.put(
    "/indexes/:index_id",
    {
      schema: {
        tags,
        summary: "Update a vector index's metadata or delete protection",
        params: IndexParams,
        body: UpdateIndexBody,
        response: { 200: IndexSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => svc.updateIndex(request.apiKey.tenantId, request.params.index_id, request.body),
  );
  api.delete(
    "/indexes/:index_id",
    {
      schema: {
        tags,
        summary: "Delete a vector index and its vectors",
        description: "Refused (409) while delete_protection is on.",
        params: IndexParams,
        response: { 200: Deleted, ...errors(401, 404, 409) },
      },
    },
    async (request) => svc.deleteIndex(request.apiKey.tenantId, request.params.index_id),
  );

  const upsertSchema = (summary: string, body: typeof UpsertBody | typeof BatchBody) => ({
    bodyLimit: BATCH_BODY_LIMIT,
    schema: { tags, summary, params: VectorIndexParams, body, response: { 200: UpsertResult, ...errors(400, 401, 404, 413) } },
  });
  // The upsert routes, with their own JSON parser: a large body is parsed and checked against the
  // schema in a worker; its vectors are kept for the handler and Fastify validates an empty batch
  // in their place (a body the worker finds invalid is parsed here and validated as usual).
  await app.register(async (scope) => {
    const maxDepth = opts.maxJsonDepth ?? 64;
    const parser = new BatchParser(maxDepth);
    const parsed = new WeakMap<object, VectorIn[]>();
    scope.addHook("onClose", () => parser.close());
    scope.removeContentTypeParser("application/json");
    scope.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
      const bytes = body as Buffer;
      if (bytes.length < OFF_THREAD_MIN) return parseJsonBody(bytes.toString("utf8"), maxDepth, done);
      parser.parse(bytes).then((vectors) => {
        if (!vectors) return parseJsonBody(bytes.toString("utf8"), maxDepth, done);
        parsed.set(request, vectors);
        done(null, { vectors: [] });
      }, done);
    });
    const s = scope.withTypeProvider<TypeBoxTypeProvider>();
    s.post("/:index/upsert", upsertSchema("Upsert vectors", UpsertBody), async (request) =>
      svc.upsert(request.apiKey.tenantId, request.params.index, parsed.get(request) ?? listOf(request.body)),
    );
    s.post("/:index/batch", upsertSchema("Upsert a batch of vectors (up to 1000)", BatchBody), async (request) =>
      svc.upsert(request.apiKey.tenantId, request.params.index, parsed.get(request) ?? (request.body as { vectors: VectorIn[] }).vectors),
    );
  });
  const textSchema = (summary: string, body: typeof TextUpsertBody | typeof TextBatchBody) => ({
    schema: {
      tags,
      summary,
      description: "The texts are embedded by the gateway (the default embedding model when `model` is absent).",
      params: VectorIndexParams,
      body,
      response: { 200: UpsertResult, ...errors(400, 401, 404, 413, 502, 503) },
    },
  });
  api.post("/:index/text/upsert", textSchema("Upsert texts as vectors", TextUpsertBody), async (request) =>
    svc.upsertText(request.apiKey.tenantId, request.apiKey.id, request.params.index, listOf(request.body)),
  );
  api.post("/:index/text/batch", textSchema("Upsert a batch of texts as vectors", TextBatchBody), async (request) =>
    svc.upsertText(request.apiKey.tenantId, request.apiKey.id, request.params.index, (request.body as { vectors: VectorIn[] }).vectors),
  );
  api.post(
    "/:index/search",
    {
      schema: {
        tags,
        summary: "Search by vector",
        description: "Nearest first. A filter is applied during the search: the result is the best top_k among matching vectors.",
        params: VectorIndexParams,
        body: SearchBody,
        response: { 200: SearchResult, ...errors(400, 401, 404) },
      },
    },
    async (request) => svc.search(request.apiKey.tenantId, request.params.index, request.body),
  );
  api.post(
    "/:index/search/text",
    {
      schema: {
        tags,
        summary: "Search by text",
        params: VectorIndexParams,
        body: TextSearchBody,
        response: { 200: SearchResult, ...errors(400, 401, 404, 502, 503) },
      },
    },
    async (request) => svc.searchText(request.apiKey.tenantId, request.apiKey.id, request.params.index, request.body),
  );
  api.post(
    "/:index/delete",
    {
      schema: {
        tags,
        summary: "Delete vectors by id",
        description: "All or nothing: refused (409) if any of them has delete protection on.",
        params: VectorIndexParams,
        body: DeleteVectorsBody,
        response: { 200: DeletedVectors, ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => svc.delete(request.apiKey.tenantId, request.params.index, request.body.vector_ids),
  );
  api.get(
    "/:index/list",
    {
      schema: {
        tags,
        summary: "List vectors (by id)",
        params: VectorIndexParams,
        querystring: PageQuery,
        response: { 200: VectorList, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { page, pageSize } = pageOf(request.query);
      return svc.list(request.apiKey.tenantId, request.params.index, page, pageSize);
    },
  );
  api.get(
    "/:index/fetch",
    {
      schema: {
        tags,
        summary: "Fetch vectors by id",
        params: VectorIndexParams,
        querystring: FetchQuery,
        response: { 200: Fetched, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const ids = request.query.vector_ids.split(",").filter((s) => s !== "");
      return svc.fetch(request.apiKey.tenantId, request.params.index, ids);
    },
  );
  api.get(
    "/:index/:vector_id",
    { schema: { tags, summary: "Get one vector", params: VectorParams, response: { 200: VectorSchema, ...errors(401, 404) } } },
    async (request) => svc.get(request.apiKey.tenantId, request.params.index, request.params.vector_id),
  );
  api.put(
    "/:index/:vector_id",
    {
      schema: {
        tags,
        summary: "Update a vector's metadata or delete protection",
        params: VectorParams,
        body: UpdateVectorBody,
        response: { 200: VectorSchema, ...errors(400, 401, 404) },
      },
    },
    async (request) => svc.update(request.apiKey.tenantId, request.params.index, request.params.vector_id, request.body),
  );
}
