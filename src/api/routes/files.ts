// File routes. Every operation is done by the supervisor inside the sandbox (runtime/supervisor.py
// `file_op`), so paths resolve in the sandbox's own filesystem view: `../../etc/passwd` or a
// symlink to /etc reach the sandbox's tiny /etc, never the host's. Text travels as JSON
// (files/read, files/write); bytes travel raw (upload as multipart, download as the body).
import multipart from "@fastify/multipart";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { ApiError, invalid } from "../../errors.js";
import type { Box } from "../../sandbox/box.js";
import type { Frame } from "../../sandbox/link.js";
import type { Services } from "../services.js";
import { errors, SandboxIdParams } from "../schemas/common.js";
import {
  DownloadQuery,
  FileListBody,
  FileListResult,
  FileMessageResult,
  FilePathBody,
  FileReadResult,
  FileWriteBody,
  FileWriteResult,
  UploadQuery,
  UploadResult,
} from "../schemas/files.js";

const HOME = "/home/user";
const MiB = 2 ** 20;

/** Asks the supervisor for one file operation and turns its refusals into API errors. */
async function fileOp(box: Box, header: Record<string, unknown>, body?: Buffer): Promise<Frame> {
  const path = String(header.path);
  if (path.includes("\0")) throw invalid("'path' must not contain NUL bytes");
  const frame = await box.file(header, body);
  const h = frame.header;
  const where = typeof h.path === "string" ? h.path : path;
  if (h.ev !== "file") {
    throw new ApiError(
      "invalid_state",
      "The sandbox's processes ended during the file operation; it was restarted (files are kept), retry",
    );
  }
  switch (h.status) {
    case "ok":
      return frame;
    case "not_found":
      throw new ApiError("file_not_found", `File '${where}' was not found`);
    case "is_dir":
      throw new ApiError("file_not_found", `'${where}' is a directory, not a file`);
    case "too_large":
      throw new ApiError("payload_too_large", `'${where}' is ${h.size} bytes, more than this operation returns`);
    case "no_space":
      throw new ApiError("payload_too_large", `Not enough space in the sandbox to write '${where}'`);
    default:
      throw invalid(typeof h.message === "string" ? h.message : `The file operation on '${where}' failed`);
  }
}

/** The `path` query parameter with '+' kept as a plus sign, when the raw URL has one there. */
export function literalPlusPath(url: string): string | undefined {
  const query = url.split("?", 2)[1] ?? "";
  for (const pair of query.split("&")) {
    if (!pair.startsWith("path=") || !pair.includes("+")) continue;
    try {
      return decodeURIComponent(pair.slice(5));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function basename(name: string): string {
  const base = name.split(/[/\\]/).pop() ?? "";
  return base === "." || base === ".." ? "" : base;
}

export const fileRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { sandboxes, config } = services;
  const tags = ["files"];

  app.post(
    "/sandboxes/:sandbox_id/files/read",
    {
      schema: {
        tags,
        summary: "Read a text file",
        description: `Returns the file as UTF-8 text (invalid bytes become U+FFFD); up to ${config.maxFileReadBytes} bytes, use download for larger or binary files.`,
        params: SandboxIdParams,
        body: FilePathBody,
        response: { 200: FileReadResult, ...errors(400, 401, 404, 413) },
      },
    },
    async (request) => {
      const box = sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      const frame = await fileOp(box, { action: "read", path: request.body.path, limit: config.maxFileReadBytes });
      return { content: frame.body.toString("utf8"), path: String(frame.header.path), size: frame.body.length };
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/files/write",
    {
      schema: {
        tags,
        summary: "Write a text file",
        description: "Creates or replaces the file with `content` (UTF-8); missing parent directories are created.",
        params: SandboxIdParams,
        body: FileWriteBody,
        response: { 200: FileWriteResult, ...errors(400, 401, 404, 413) },
      },
    },
    async (request) => {
      const box = sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      const data = Buffer.from(request.body.content, "utf8");
      const frame = await fileOp(box, { action: "write", path: request.body.path }, data);
      return { message: "File written", path: String(frame.header.path), bytes_written: data.length };
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/files/list",
    {
      schema: {
        tags,
        summary: "List a directory",
        description: `Entries of the directory (default /home/user), sorted by name, the first ${config.maxListFiles} at most; symlinks are listed, not followed.`,
        params: SandboxIdParams,
        body: Type.Optional(FileListBody),
        response: { 200: FileListResult, ...errors(400, 401, 404) },
      },
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
    },
    async (request) => {
      const box = sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      const frame = await fileOp(box, { action: "list", path: request.body?.path ?? HOME, limit: config.maxListFiles });
      const files = (frame.header.files ?? []) as Record<string, unknown>[];
      return {
        files: files.map((f) => ({
          name: String(f.name),
          path: String(f.path),
          size: Number(f.size),
          is_dir: f.is_dir === true,
          modified_at: String(f.modified_at),
          mode: String(f.mode),
        })),
      };
    },
  );

  // delete and mkdir: a path in, {message, path} out.
  const pathOnly = [
    { action: "delete", summary: "Delete a file or a directory (with its contents)", message: "Deleted" },
    { action: "mkdir", summary: "Create a directory (and its parents)", message: "Directory created" },
  ] as const;
  for (const { action, summary, message } of pathOnly) {
    app.post(
      `/sandboxes/:sandbox_id/files/${action}`,
      {
        schema: {
          tags,
          summary,
          params: SandboxIdParams,
          body: FilePathBody,
          response: { 200: FileMessageResult, ...errors(400, 401, 404) },
        },
      },
      async (request) => {
        const box = sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
        const frame = await fileOp(box, { action, path: request.body.path });
        return { message, path: String(frame.header.path) };
      },
    );
  }

  app.get(
    "/sandboxes/:sandbox_id/download",
    {
      schema: {
        tags,
        summary: "Download a file (raw bytes)",
        description: `The file's bytes as application/octet-stream, up to ${config.maxDownloadBytes} bytes.`,
        produces: ["application/octet-stream"],
        params: SandboxIdParams,
        querystring: DownloadQuery,
        response: {
          200: Type.Unsafe<Buffer>({ type: "string", format: "binary", description: "The file's bytes" }),
          ...errors(400, 401, 404, 413),
        },
      },
    },
    async (request, reply) => {
      const box = sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      const read = (path: string) => fileOp(box, { action: "read", path, limit: config.maxDownloadBytes });
      let frame: Frame;
      try {
        frame = await read(request.query.path);
      } catch (err) {
        // Clients that paste the path into the URL unencoded send a literal '+', which the query
        // parser reads as a space: when that name does not exist, try the '+' as written.
        const literal = literalPlusPath(request.url);
        if (!(err instanceof ApiError && err.code === "file_not_found") || literal === undefined) throw err;
        frame = await read(literal);
      }
      const name = basename(String(frame.header.path)) || "download";
      reply.header("content-type", "application/octet-stream");
      reply.header("content-disposition", `attachment; filename*=UTF-8''${encodeURIComponent(name)}`);
      return reply.send(frame.body);
    },
  );

  // Uploads: multipart parsing only in this child context, with its own size limit.
  await app.register(uploadRoutes, { services });
};

const uploadRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { sandboxes, config } = services;
  await app.register(multipart, {
    limits: { fileSize: config.maxUploadBytes, files: 1, fields: 16, fieldSize: 64 * 1024, parts: 32 },
  });
  const schema = {
    tags: ["files"],
    summary: "Upload a file (multipart/form-data)",
    description:
      "Form fields: `file` (the bytes, required) and `path` (optional, also accepted as a query parameter; default " +
      "/home/user/<filename>; an existing directory or a path ending in / receives the file under its own name). " +
      `Up to ${Math.round(config.maxUploadBytes / MiB)} MiB.`,
    consumes: ["multipart/form-data"],
    params: SandboxIdParams,
    querystring: UploadQuery,
    response: { 200: UploadResult, ...errors(400, 401, 404, 413) },
  };
  // Fastify's body limit does not apply to multipart streams (the part size limit above does);
  // it is raised here all the same so that no other limit can cut an upload short.
  const bodyLimit = config.maxUploadBytes + MiB;
  for (const url of ["/sandboxes/:sandbox_id/upload", "/sandboxes/:sandbox_id/files/upload"]) {
    app.post(url, { schema, bodyLimit }, async (request) => {
      const box = sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      if (!request.isMultipart()) throw invalid("Send the file as multipart/form-data with a 'file' field (and optionally 'path')");
      let file: { name: string; data: Buffer } | undefined;
      let path = request.query.path;
      try {
        for await (const part of request.parts()) {
          if (part.type === "file") {
            const data = await part.toBuffer();
            if (!file || part.fieldname === "file") file = { name: basename(part.filename ?? ""), data };
          } else if (part.fieldname === "path" && typeof part.value === "string" && part.value !== "") {
            path = part.value;
          }
        }
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === "FST_REQ_FILE_TOO_LARGE") {
          throw new ApiError("payload_too_large", `The file is larger than the upload limit of ${config.maxUploadBytes} bytes`);
        }
        if (code === "FST_FILES_LIMIT") throw invalid("Send exactly one file per upload");
        throw err;
      }
      if (!file) throw invalid("The upload has no 'file' part");
      if (path !== undefined && path.length > 4096) throw invalid("'path' is longer than 4096 characters");
      if (!path && !file.name) throw invalid("The file part has no filename; send 'path'");
      let target = path ?? `${HOME}/${file.name}`;
      if (target.endsWith("/") && file.name) target += file.name;
      const frame = await fileOp(box, { action: "write", path: target, default_name: file.name || undefined }, file.data);
      return { message: "File uploaded", path: String(frame.header.path), size: file.data.length };
    });
  }
};
