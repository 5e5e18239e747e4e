// File routes: HTTP in and out of the file operations of src/sandbox/files.ts (done by the
// supervisor inside the sandbox's own filesystem view). Text travels as JSON (files/read,
// files/write); bytes travel raw and streamed (upload as multipart, download as the body).
import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
import multipart from "@fastify/multipart";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import { Type } from "@sinclair/typebox";
import { ApiError, invalid } from "../../errors.js";
import { type Download, download, listDir, makeDir, readFile, removePath, Upload, writeFile } from "../files.js";
import type { Config } from "../../config.js";
import type { SandboxManager } from "../manager.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
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

/** What the file routes use: each sandbox's box, and the size limits of the config. */
interface FileRouteOptions {
  sandboxes: Pick<SandboxManager, "box">;
  config: Pick<Config, "maxFileReadBytes" | "maxListFiles" | "maxDownloadBytes" | "maxUploadBytes">;
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

export const fileRoutes: FastifyPluginAsyncTypebox<FileRouteOptions> = async (app, { sandboxes, config }) => {
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
        response: { 200: FileReadResult, ...errors(400, 401, 404, 413, 503) },
      },
    },
    async (request) => {
      const box = await sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      const file = await readFile(box, request.body.path, config.maxFileReadBytes);
      return { content: file.data.toString("utf8"), path: file.path, size: file.data.length };
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
        response: { 200: FileWriteResult, ...errors(400, 401, 404, 413, 503) },
      },
    },
    async (request) => {
      const box = await sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      const data = Buffer.from(request.body.content, "utf8");
      const written = await writeFile(box, request.body.path, data);
      return { message: "File written", path: written.path, bytes_written: data.length };
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
        response: { 200: FileListResult, ...errors(400, 401, 404, 503) },
      },
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
    },
    async (request) => {
      const box = await sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      return { files: await listDir(box, request.body?.path ?? HOME, config.maxListFiles) };
    },
  );

  // delete and mkdir: a path in, {message, path} out.
  const pathOnly = [
    { action: "delete", summary: "Delete a file or a directory (with its contents)", message: "Deleted", op: removePath },
    { action: "mkdir", summary: "Create a directory (and its parents)", message: "Directory created", op: makeDir },
  ] as const;
  for (const { action, summary, message, op } of pathOnly) {
    app.post(
      `/sandboxes/:sandbox_id/files/${action}`,
      {
        schema: {
          tags,
          summary,
          params: SandboxIdParams,
          body: FilePathBody,
          response: { 200: FileMessageResult, ...errors(400, 401, 404, 503) },
        },
      },
      async (request) => {
        const box = await sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
        return { message, path: await op(box, request.body.path) };
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
          200: Type.Unsafe<Readable>({ type: "string", format: "binary", description: "The file's bytes" }),
          ...errors(400, 401, 404, 413, 503),
        },
      },
    },
    async (request, reply) => {
      const box = await sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      const read = (path: string) => download(box, path, config.maxDownloadBytes);
      let file: Download;
      try {
        file = await read(request.query.path);
      } catch (err) {
        // Clients that paste the path into the URL unencoded send a literal '+', which the query
        // parser reads as a space: when that name does not exist, try the '+' as written.
        const literal = literalPlusPath(request.url);
        if (!(err instanceof ApiError && err.code === "file_not_found") || literal === undefined) throw err;
        file = await read(literal);
      }
      const name = basename(file.path) || "download";
      reply.header("content-type", "application/octet-stream");
      reply.header("content-length", String(file.size));
      reply.header("content-disposition", `attachment; filename*=UTF-8''${encodeURIComponent(name)}`);
      // A client that goes away mid-download closes the file in the sandbox; so does revoking the key.
      reply.raw.once("close", () => file.stream.destroy());
      reply.holdOpen();
      return reply.send(file.stream);
    },
  );

  // Uploads: multipart parsing only in this child context, with its own size limit.
  await app.register(uploadRoutes, { sandboxes, config });
};

/** How long a refused upload's remaining body is read (and dropped) so that the client gets the answer. */
const DISCARD_MS = 10_000;

/**
 * Reads and drops what is left of a request body before an error is answered: a client still
 * sending would otherwise see a reset instead of the answer, and a kept-alive connection would
 * stall on the unread bytes. A body not done within DISCARD_MS gets the answer with the
 * connection closed.
 */
export async function discardBody(raw: IncomingMessage, reply: FastifyReply): Promise<void> {
  const over = () => raw.complete || raw.readableEnded || raw.destroyed;
  if (over()) return;
  raw.resume();
  const ended = await new Promise<boolean>((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      clearInterval(poll);
      raw.off("end", finish);
      raw.off("close", finish);
      raw.off("error", finish);
      resolve(raw.complete || raw.readableEnded);
    };
    const timer = setTimeout(finish, DISCARD_MS);
    // The multipart parser may let go of the stream later (unpipe pauses it): keep it flowing.
    const poll = setInterval(() => {
      if (over()) finish();
      else if (!raw.readableFlowing) raw.resume();
    }, 20);
    raw.once("end", finish);
    raw.once("close", finish);
    raw.once("error", finish);
  });
  if (!ended) reply.header("connection", "close");
}

const uploadRoutes: FastifyPluginAsyncTypebox<FileRouteOptions> = async (app, { sandboxes, config }) => {
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
    response: { 200: UploadResult, ...errors(400, 401, 404, 413, 503) },
  };
  // Fastify's body limit does not apply to multipart streams (the part size limit above does);
  // it is raised here all the same so that no other limit can cut an upload short.
  const bodyLimit = config.maxUploadBytes + MiB;
  const tooLarge = () => new ApiError("payload_too_large", `The file is larger than the upload limit of ${config.maxUploadBytes} bytes`);
  for (const url of ["/sandboxes/:sandbox_id/upload", "/sandboxes/:sandbox_id/files/upload"]) {
    app.post(url, { schema, bodyLimit }, async (request, reply) => {
      const box = await sandboxes.box(request.apiKey.tenantId, request.params.sandbox_id);
      if (!request.isMultipart()) throw invalid("Send the file as multipart/form-data with a 'file' field (and optionally 'path')");
      // Revoking the key drops the connection: the upload fails and is removed like a cut one.
      reply.holdOpen();
      // The file part streams into the sandbox as it arrives; `path` may come before or after it.
      let upload: Upload | undefined;
      let file: Readable | undefined;
      let name = "";
      let path = request.query.path;
      try {
        for await (const part of request.parts()) {
          if (part.type === "file") {
            if (upload) throw invalid("Send exactly one file per upload");
            name = basename(part.filename ?? "");
            file = part.file;
            upload = await Upload.open(box, path && !path.endsWith("/") ? path : undefined);
            await upload.pump(part.file);
            if (part.file.truncated) throw tooLarge();
          } else if (part.fieldname === "path" && typeof part.value === "string" && part.value !== "") {
            path = part.value;
          }
        }
        if (!upload) throw invalid("The upload has no 'file' part");
        if (path !== undefined && path.length > 4096) throw invalid("'path' is longer than 4096 characters");
        if (!path && !name) throw invalid("The file part has no filename; send 'path'");
        let target = path ?? `${HOME}/${name}`;
        if (target.endsWith("/") && name) target += name;
        const done = await upload.commit(target, name || undefined);
        return { message: "File uploaded", path: done.path, size: done.size };
      } catch (err) {
        file?.resume();
        await Promise.all([upload?.abort(), discardBody(request.raw, reply)]);
        const code = (err as { code?: string }).code;
        if (code === "FST_REQ_FILE_TOO_LARGE") throw tooLarge();
        if (code === "FST_FILES_LIMIT") throw invalid("Send exactly one file per upload");
        throw err;
      }
    });
  }
};
