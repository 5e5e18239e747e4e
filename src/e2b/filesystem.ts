// envd's filesystem.Filesystem service (Stat, ListDir, MakeDir, Move, Remove, WatchDir and the polled
// watchers) and its REST side (GET/POST /files, GET /health), mapped onto the sandbox's file
// operations (src/sandbox/files.ts): paths resolve inside the sandbox exactly as they do for the
// native file routes.
import multipart from "@fastify/multipart";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Services } from "../api/services.js";
import { ApiError, invalid } from "../errors.js";
import { download, type FileEntry, listDir, makeDir, removePath, statPath, Upload } from "../sandbox/files.js";
import { sandboxPath } from "../sandbox/service.js";
import { installConnect, serverStreaming, unary } from "./connect.js";
import { ConnectError, installControlErrors } from "./errors.js";
import { sandboxIdOf as namedSandbox, targetResolver } from "./target.js";
import { Watchers } from "./watch.js";

function pathOf(message: Record<string, unknown>, name = "path"): string {
  const p = message[name];
  if (typeof p !== "string" || p === "") throw invalid(`'${name}' is required`);
  return p;
}

/** A watcher's id, as proto3 JSON names it (`watcherId`) or as the proto does (`watcher_id`). */
function watcherIdOf(message: Record<string, unknown>): string {
  const id = message.watcherId ?? message.watcher_id;
  if (typeof id !== "string" || id === "") throw invalid("'watcherId' is required");
  return id;
}

const baseName = (p: string) => p.split("/").filter(Boolean).pop() ?? "/";
const parentOf = (p: string) => p.slice(0, p.lastIndexOf("/")) || "/";
const fileType = (isDir: boolean) => (isDir ? "FILE_TYPE_DIRECTORY" : "FILE_TYPE_FILE");

/** An entry as envd's EntryInfo (JSON): int64 size as a string, the mode as a number. */
function entryInfo(e: FileEntry) {
  const mode = Number.parseInt(e.mode, 8);
  return {
    name: e.name,
    type: fileType(e.is_dir),
    path: e.path,
    size: String(e.size),
    mode: Number.isNaN(mode) ? 0 : mode,
    permissions: e.mode,
    owner: "user",
    group: "user",
    modifiedTime: e.modified_at,
  };
}

export async function filesystemRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  const { sandboxes, sandbox, config } = services;
  const sandboxIdOf = targetResolver(services.sandboxes);
  const boxOf = (request: FastifyRequest) => sandboxes.box(request.apiKey.tenantId, sandboxIdOf(request));
  const watchers = new Watchers({
    perSandbox: config.e2bMaxWatchers,
    perTenant: config.e2bMaxWatchersPerTenant,
    eventBytes: config.e2bWatcherEventBytes,
    idleMs: config.e2bWatcherIdleS * 1000,
  });
  sandboxes.onEnded((id) => watchers.dropSandbox(id));
  app.addHook("onClose", async () => watchers.close());
  services.metrics?.watchWatchers(watchers);

  /** The entry at `path` (its parent's listing has the details), or not_found. */
  const entryAt = async (request: FastifyRequest, path: string) => {
    const box = await boxOf(request);
    const st = await statPath(box, path);
    if (!st.exists) throw new ApiError("file_not_found", `'${st.path}' does not exist`);
    const name = baseName(st.path);
    const listed = st.path === "/" ? undefined : (await listDir(box, parentOf(st.path), config.maxListFiles)).find((e) => e.name === name);
    return listed ? entryInfo(listed) : { name, type: fileType(st.isDir), path: st.path, size: "0" };
  };

  await app.register(async (rpc) => {
    installConnect(rpc);
    unary(rpc, "/filesystem.Filesystem/Stat", async (message, request) => ({ entry: await entryAt(request, pathOf(message)) }));

    unary(rpc, "/filesystem.Filesystem/ListDir", async (message, request) => {
      const st = await statPath(await boxOf(request), pathOf(message));
      if (!st.exists) throw new ApiError("file_not_found", `'${st.path}' does not exist`);
      if (!st.isDir) throw invalid(`'${st.path}' is not a directory`);
      return { entries: (await listDir(await boxOf(request), st.path, config.maxListFiles)).map(entryInfo) };
    });

    unary(rpc, "/filesystem.Filesystem/MakeDir", async (message, request) => {
      const path = pathOf(message);
      const st = await statPath(await boxOf(request), path);
      if (st.exists) throw new ConnectError("already_exists", `'${st.path}' already exists`);
      await makeDir(await boxOf(request), path);
      return { entry: await entryAt(request, path) };
    });

    unary(rpc, "/filesystem.Filesystem/Remove", async (message, request) => {
      await removePath(await boxOf(request), pathOf(message));
      return {};
    });

    // No move among the sandbox's file operations: `mv` runs in the sandbox, as any command does.
    unary(rpc, "/filesystem.Filesystem/Move", async (message, request) => {
      const source = sandboxPath(pathOf(message, "source"));
      const destination = sandboxPath(pathOf(message, "destination"));
      if (!(await statPath(await boxOf(request), source)).exists) throw new ApiError("file_not_found", `'${source}' does not exist`);
      const id = sandboxIdOf(request);
      const r = await sandbox.runCommand(request.apiKey, id, { command: "mv", args: ["-T", "--", source, destination] });
      if (r.exit_code !== 0) throw invalid(`Could not move '${source}' to '${destination}': ${r.stderr.trim().slice(0, 500)}`);
      return { entry: await entryAt(request, destination) };
    });

    serverStreaming(
      rpc,
      "/filesystem.Filesystem/WatchDir",
      async (message, request, stream) => {
        const recursive = message.recursive === true;
        await watchers.watch(
          await boxOf(request),
          request.apiKey.tenantId,
          sandboxIdOf(request),
          pathOf(message),
          config.maxListFiles,
          stream,
          recursive,
        );
      },
      { keepalive: {} },
    );

    // Polled watchers (the Python SDK's synchronous watch_dir): the same polling watch, its events
    // kept until the client asks for them.
    unary(rpc, "/filesystem.Filesystem/CreateWatcher", async (message, request) => {
      const id = sandboxIdOf(request);
      const boxOf = () => sandboxes.box(request.apiKey.tenantId, id);
      return {
        watcherId: await watchers.create(
          boxOf,
          request.apiKey.tenantId,
          id,
          pathOf(message),
          config.maxListFiles,
          message.recursive === true,
        ),
      };
    });

    unary(rpc, "/filesystem.Filesystem/GetWatcherEvents", async (message, request) => ({
      events: watchers.events(sandboxIdOf(request), watcherIdOf(message)),
    }));

    unary(rpc, "/filesystem.Filesystem/RemoveWatcher", async (message, request) => {
      watchers.remove(sandboxIdOf(request), watcherIdOf(message));
      return {};
    });
  });

  await app.register(async (rest) => {
    installControlErrors(rest);
    await rest.register(multipart, {
      preservePath: true,
      limits: { fileSize: config.maxUploadBytes, fields: 16, fieldSize: 64 * 1024, parts: 64 },
    });

    // The sandbox's health as envd tells it: 204 while it runs, 502 (what the SDKs read as "not running") otherwise.
    rest.get("/health", async (request, reply) => {
      const id = namedSandbox(request);
      let running = false;
      try {
        running = (await sandbox.getSandbox(request.apiKey, id)).status === "running";
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 404) throw err;
      }
      return reply.status(running ? 204 : 502).send(running ? undefined : `Sandbox '${id}' is not running`);
    });

    rest.get<{ Querystring: { path?: string } }>("/files", async (request, reply) => {
      const path = request.query.path;
      if (!path) throw invalid("'path' is required");
      const file = await download(await boxOf(request), path, config.maxDownloadBytes);
      reply.header("content-type", "application/octet-stream").header("content-length", String(file.size));
      reply.raw.once("close", () => file.stream.destroy());
      reply.holdOpen();
      return reply.send(file.stream);
    });

    // Multipart: one `file` part per file, named by ?path= or else by the part's filename (a path).
    rest.post<{ Querystring: { path?: string } }>("/files", { bodyLimit: config.maxUploadBytes + 2 ** 20 }, async (request, reply) => {
      if (!request.isMultipart()) throw invalid("Send the files as multipart/form-data");
      reply.holdOpen();
      const box = await boxOf(request);
      const written: { name: string; type: "file"; path: string }[] = [];
      for await (const part of request.parts()) {
        if (part.type !== "file") continue;
        const target = request.query.path || part.filename;
        if (!target) throw invalid("A file part has no filename; send ?path=");
        const upload = await Upload.open(box, target);
        try {
          await upload.pump(part.file);
          if (part.file.truncated) throw new ApiError("payload_too_large", `A file is larger than ${config.maxUploadBytes} bytes`);
        } catch (err) {
          await upload.abort();
          throw err;
        }
        const done = await upload.commit(target);
        written.push({ name: baseName(done.path), type: "file", path: done.path });
      }
      if (written.length === 0) throw invalid("The upload has no file part");
      return written;
    });
  });
}
