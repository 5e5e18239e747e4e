// Stored files: /v1/files (multipart upload streamed to storage, list, get, content/download with
// ranges, delete) and the sandbox routes that copy a stored file in (files/import) or a sandbox
// file out as a new stored file (files/export). The work is in src/files/service.ts.
import type { Readable } from "node:stream";
import multipart from "@fastify/multipart";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { ApiError, invalid } from "../errors.js";
import { cleanFilename, type FileService, type Staged } from "./service.js";
import type { ByteRange } from "./storage.js";
import type { FileRecord } from "./store.js";
import { errors, SandboxIdParams } from "../api/schemas/common.js";
import {
  ExportBody,
  FileDeleteResult,
  FileIdParams,
  FileListQuery,
  FileListResult,
  FileObject,
  ImportBody,
  ImportResult,
  UploadFileResult,
} from "./schemas.js";
import { discardBody } from "../sandbox/routes/files.js";

const MiB = 2 ** 20;

export interface StoredFileRouteOptions {
  files: FileService;
  maxFileBytes: number;
}

export function fileObject(f: FileRecord) {
  const created = Math.floor(f.createdAt / 1000);
  return {
    id: f.id,
    object: "file" as const,
    bytes: f.bytes,
    created_at: created,
    filename: f.filename,
    purpose: f.purpose,
    sha256: f.sha256,
    expires_at: f.expiresAt === null ? null : Math.floor(f.expiresAt / 1000),
    expires_after: f.expiresAt === null ? null : Math.round((f.expiresAt - f.createdAt) / 1000),
    status: "processed" as const,
  };
}

/**
 * The one range of a `Range: bytes=...` header, "unsatisfiable" for a range outside the file, or
 * undefined for no header or one this server answers with the whole file (several ranges, other units).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | undefined {
  if (header === undefined) return undefined;
  const m = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/.exec(header.trim());
  if (!m) return undefined;
  const [, first, last] = m as unknown as [string, string, string];
  if (first === "" && last === "") return undefined;
  if (first === "") {
    // A suffix: the last N bytes.
    const n = Number(last);
    if (n === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1);
  if (start >= size || (last !== "" && Number(last) < start)) return "unsatisfiable";
  return { start, end };
}

const tags = ["stored files"];

export const storedFileRoutes: FastifyPluginAsyncTypebox<StoredFileRouteOptions> = async (app, { files, maxFileBytes }) => {
  await app.register(uploadRoute, { files, maxFileBytes });

  app.get(
    "/files",
    {
      schema: {
        tags,
        summary: "List stored files",
        description: "The caller's files, newest first by default; page with `limit` and `after` (the last id of the previous page).",
        querystring: FileListQuery,
        response: { 200: FileListResult, ...errors(400, 401) },
      },
    },
    async (request) => {
      const q = request.query;
      const limit = Math.min(10_000, Math.max(1, Number(q.limit ?? 1000)));
      const page = await files.list(request.apiKey.tenantId, { limit, after: q.after, order: q.order ?? "desc", purpose: q.purpose });
      const data = page.files.map(fileObject);
      return { object: "list" as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore };
    },
  );

  app.get(
    "/files/:file_id",
    {
      schema: {
        tags,
        summary: "Get a stored file's record",
        params: FileIdParams,
        response: { 200: FileObject, ...errors(400, 401, 404) },
      },
    },
    async (request) => fileObject(await files.get(request.apiKey.tenantId, request.params.file_id)),
  );

  for (const action of ["content", "download"]) {
    app.get(
      `/files/:file_id/${action}`,
      {
        schema: {
          tags,
          summary: `The file's bytes (${action})`,
          description:
            "Raw bytes with Content-Length and the SHA-256 as ETag. A single `Range: bytes=a-b` (or `a-`, `-n`) is answered with 206 " +
            "and Content-Range; a range outside the file with 416; several ranges with the whole file.",
          produces: ["application/octet-stream"],
          params: FileIdParams,
          response: {
            200: Type.Unsafe<Readable>({ type: "string", format: "binary", description: "The file's bytes" }),
            206: Type.Unsafe<Readable>({ type: "string", format: "binary", description: "The requested range" }),
            ...errors(400, 401, 404, 416),
          },
        },
      },
      async (request, reply) => {
        const tenant = request.apiKey.tenantId;
        const record = await files.get(tenant, request.params.file_id);
        const range = parseRange(request.headers.range, record.bytes);
        reply.header("accept-ranges", "bytes");
        reply.header("etag", `"${record.sha256}"`);
        if (range === "unsatisfiable") {
          reply.header("content-range", `bytes */${record.bytes}`);
          throw new ApiError("range_not_satisfiable", `The range '${request.headers.range}' is outside the file (${record.bytes} bytes)`);
        }
        const { stream } = await files.open(tenant, record.id, range);
        reply.header("content-type", "application/octet-stream");
        reply.header("content-disposition", `attachment; filename*=UTF-8''${encodeURIComponent(record.filename)}`);
        if (range) {
          reply.code(206);
          reply.header("content-range", `bytes ${range.start}-${range.end}/${record.bytes}`);
          reply.header("content-length", String(range.end - range.start + 1));
        } else {
          reply.header("content-length", String(record.bytes));
        }
        reply.raw.once("close", () => stream.destroy());
        reply.holdOpen();
        return reply.send(stream);
      },
    );
  }

  app.delete(
    "/files/:file_id",
    {
      schema: {
        tags,
        summary: "Delete a stored file",
        params: FileIdParams,
        response: { 200: FileDeleteResult, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const f = await files.delete(request.apiKey.tenantId, request.params.file_id);
      return {
        message: "File deleted successfully",
        file_id: f.id,
        file_name: f.filename,
        id: f.id,
        object: "file" as const,
        deleted: true as const,
      };
    },
  );
};

/** The upload, in its own context: the multipart parser with this route's limits. */
const uploadRoute: FastifyPluginAsyncTypebox<StoredFileRouteOptions> = async (app, { files, maxFileBytes }) => {
  // One byte over the limit reaches the service's meter, which refuses it with a clear 413.
  await app.register(multipart, { limits: { fileSize: maxFileBytes + 1, files: 1, fields: 16, fieldSize: 64 * 1024, parts: 32 } });
  app.post(
    "/files",
    {
      // Multipart streams are not held to the body limit; raised anyway so that no other limit cuts an upload short.
      bodyLimit: maxFileBytes + MiB,
      schema: {
        tags,
        summary: "Upload a file (multipart/form-data)",
        description:
          "Form fields: `file` (the bytes), `purpose` (assistants, batch, batch_output, fine-tune, vision, user_data, evals) and " +
          "optionally `expires_after` (seconds until the file is deleted). The bytes stream to storage and are checksummed " +
          `(sha256); up to ${Math.round(maxFileBytes / MiB)} MiB per file (413 past it) and the tenant's storage quota (429).`,
        consumes: ["multipart/form-data"],
        response: { 200: UploadFileResult, ...errors(400, 401, 413, 429) },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) throw invalid("Send the file as multipart/form-data with 'file' and 'purpose' fields");
      const tenant = request.apiKey.tenantId;
      // A client that goes away mid-upload: what was received is dropped at once.
      const cut = new AbortController();
      const onClose = () => {
        if (!request.raw.complete) cut.abort();
      };
      request.raw.once("close", onClose);
      // Revoking the key drops the connection, which cuts the upload as above.
      reply.holdOpen();
      let source: Readable | undefined;
      let staged: Staged | undefined;
      let purpose: string | undefined;
      let expires: string | undefined;
      let filename = "";
      try {
        for await (const part of request.parts()) {
          if (part.type === "file") {
            source = part.file;
            if (part.fieldname !== "file") throw invalid(`The file part must be named 'file', not '${part.fieldname.slice(0, 64)}'`);
            // Fields sent before the file are checked before any byte is stored.
            if (purpose !== undefined) files.checkPurpose(purpose);
            if (expires !== undefined) files.parseExpiry(expires);
            filename = cleanFilename(part.filename, "upload");
            staged = await files.receive(tenant, part.file, cut.signal);
          } else if (typeof part.value === "string") {
            if (part.fieldname === "purpose") purpose = part.value;
            else if (part.fieldname === "expires_after" || part.fieldname === "expires_after[seconds]") expires = part.value;
          }
        }
        if (!staged) throw invalid("The upload has no 'file' part");
        const expiresAfterS = expires === undefined || expires === "" ? undefined : files.parseExpiry(expires);
        const done = staged;
        staged = undefined;
        const record = await files.commit(tenant, done, { filename, purpose, expiresAfterS });
        return { message: "File uploaded successfully", file_name: record.filename, ...fileObject(record) };
      } catch (err) {
        source?.resume();
        if (staged) await files.discard(staged);
        await discardBody(request.raw, reply);
        const code = (err as { code?: string }).code;
        if (code === "FST_FILES_LIMIT") throw invalid("Send exactly one file per upload");
        if (code === "FST_PARTS_LIMIT" || code === "FST_FIELDS_LIMIT") throw invalid("Too many form fields in the upload");
        throw err;
      } finally {
        request.raw.off("close", onClose);
      }
    },
  );
};

/** files/import and files/export on a sandbox (mounted with the other sandbox routes). */
export const sandboxTransferRoutes: FastifyPluginAsyncTypebox<StoredFileRouteOptions> = async (app, { files }) => {
  app.post(
    "/sandboxes/:sandbox_id/files/import",
    {
      schema: {
        tags: ["files"],
        summary: "Copy a stored file into the sandbox",
        description: "Streams the stored file `file_id` into the sandbox at `path` (default /home/user/<filename>).",
        params: SandboxIdParams,
        body: ImportBody,
        response: { 200: ImportResult, ...errors(400, 401, 404, 413, 503) },
      },
    },
    async (request) => {
      const { path, size, file } = await files.importToSandbox(
        request.apiKey.tenantId,
        request.params.sandbox_id,
        request.body.file_id,
        request.body.path,
      );
      return { message: "File imported", file_id: file.id, path, size };
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/files/export",
    {
      schema: {
        tags: ["files"],
        summary: "Store a sandbox file as a new stored file",
        description: "Streams the sandbox file at `path` into storage as a new file object (same size limit and quota as an upload).",
        params: SandboxIdParams,
        body: ExportBody,
        response: { 200: UploadFileResult, ...errors(400, 401, 404, 413, 429, 503) },
      },
    },
    async (request) => {
      const b = request.body;
      const expiresAfterS = b.expires_after === undefined ? undefined : files.parseExpiry(b.expires_after);
      const record = await files.exportFromSandbox(request.apiKey.tenantId, request.params.sandbox_id, b.path, {
        purpose: b.purpose,
        filename: b.filename,
        expiresAfterS,
      });
      return { message: "File exported", file_name: record.filename, ...fileObject(record) };
    },
  );
};
