// Server-wide configuration: the AGENTBOX_* settings of the service itself (where it listens and
// keeps its data, who may call it, requests and connections), declared once with their defaults.
// Each area declares and reads its own (src/<area>/settings.ts); this file imports no area.
import crypto from "node:crypto";
import os from "node:os";
import path from "node:path";
import { defineSettings, type Machine, readSettings, settingsOf } from "./settings/kernel.js";

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** The SQLite database file (default: agentbox.db in the data dir). */
  databaseFile: string;
  /** Where sandbox workspaces are mounted; must be traversable by unprivileged uids. */
  workspaceDir: string;
  bootstrapApiKey: string | undefined;
  logLevel: string;
  maxCodeBytes: number;
  bodyLimitBytes: number;
  maxUploadBytes: number;
  /** Largest file `files/read` returns inside JSON; bigger files are for `download`. */
  maxFileReadBytes: number;
  maxDownloadBytes: number;
  /** Requests per minute per API key (0: no limit); a key's own value overrides it. */
  rateLimitPerMinute: number;
  /** code/run + commands/run executing at once per API key (0: no limit); a key's own value overrides it. */
  maxConcurrentRunsPerKey: number;
  /** Deepest nesting of arrays/objects accepted in a JSON body. */
  maxJsonDepth: number;
  /** Bytes of request line + headers Node accepts (larger: 431). */
  maxHeaderBytes: number;
  /** Time a client has to send a whole request (headers and body), ms. */
  requestTimeoutMs: number;
  /** Entries files/list returns per call at most. */
  maxListFiles: number;
  /** On SIGTERM, how long running requests get to finish before sandboxes are stopped, seconds. */
  shutdownGraceS: number;
  mountRootAliases: boolean;
  reaperIntervalMs: number;
  /** The operator's admin key from the environment; unset: one generated at first start, stored hashed. */
  adminApiKey: string | undefined;
  /** Open client connections at once, over all addresses (past it new ones are closed at once). */
  maxConnections: number;
  /** Open client connections at once from one address; the difference to maxConnections is the others' reserve. */
  maxConnectionsPerAddress: number;
  /** Time a client has to send a request's headers, ms (also closes connections that send nothing). */
  headerTimeoutMs: number;
  /** Directory watches (E2B's files.watchDir, each a listing every 250 ms) open at once per sandbox. */
  e2bMaxWatchers: number;
  e2bMaxWatchersPerTenant: number;
  e2bWatcherIdleS: number;
  e2bWatcherEventBytes: number;
  /** PostgreSQL for every area's durable records instead of the embedded SQLite; unset: SQLite. */
  databaseUrl: string | undefined;
  /** Connections this node keeps open to PostgreSQL at most. */
  databasePoolSize: number;
  /** How long opening a PostgreSQL connection (or waiting for a free one) may take before a 503. */
  databaseConnectTimeoutMs: number;
  /** This node's name: the owner written on each sandbox record it creates. */
  nodeId: string;
}

const server = settingsOf("server");

export const serverSettingsSchema = defineSettings({
  // Server-wide: where the service listens and keeps its data, who may call it, how it logs and stops.
  host: server.string("AGENTBOX_HOST", { table: "service", default: "127.0.0.1", doc: "Address to listen on." }),
  port: server.number("AGENTBOX_PORT", { table: "service", default: 8080, doc: "Port to listen on." }),
  dataDir: server.string("AGENTBOX_DATA_DIR", {
    table: "service",
    default: "./data",
    doc: "Database (keys, sandbox records, usage). Keep it on persistent disk; a restart on the same directory re-adopts its sandboxes.",
  }),
  databaseFile: server.string("AGENTBOX_DATABASE_FILE", {
    table: "service",
    defaultDoc: "`<AGENTBOX_DATA_DIR>/agentbox.db`",
    doc: "The SQLite database (keys, tenants, sandbox records, events). Several services on one host may share one file (WAL) while each keeps its own data dir, e.g. the nodes of a cluster tried on one machine.",
  }),
  workspaceDir: server.string("AGENTBOX_WORKSPACE_DIR", {
    table: "service",
    defaultDoc: "`/run/agentbox/<hash of the data dir>`",
    doc: "Where each sandbox's `/home/user` (a tmpfs) is mounted. Must be traversable by unprivileged uids. Two services must not share one.",
  }),
  bootstrapApiKey: server.string("AGENTBOX_API_KEY", {
    table: "service",
    defaultDoc: "unset",
    doc: "Optional bootstrap key for the `default` tenant (never stored). Real keys: the admin API or `npm run cli -- keys create` (see [Admin key](#admin-key)).",
  }),
  adminApiKey: server.string("AGENTBOX_ADMIN_KEY", {
    table: "service",
    defaultDoc: "unset: generated at first start",
    doc: "The operator's key for `/v1/admin` (keys, tenant quotas). Unset, the service makes one at first start, prints it once on stderr and keeps only its hash (see [Admin key](#admin-key)).",
  }),
  logLevel: server.string("AGENTBOX_LOG_LEVEL", {
    table: "service",
    default: "info",
    doc: "pino level: `trace`, `debug`, `info`, `warn`, `error`, `fatal`.",
  }),
  mountRootAliases: server.boolean("AGENTBOX_ROOT_ALIASES", {
    table: "service",
    default: false,
    doc: "Also serve the sandbox routes without the `/v1/agents` prefix.",
  }),
  reaperIntervalMs: server.number("AGENTBOX_REAPER_INTERVAL_MS", {
    table: "service",
    default: 1000,
    doc: "How often the periodic sweep runs (host memory check, pool shrink, and a safety net for deadlines; sandboxes end at their `timeout_at` by a per-deadline timer, not by this sweep).",
  }),
  shutdownGraceS: server.number("AGENTBOX_SHUTDOWN_GRACE_S", {
    table: "service",
    default: 30,
    doc: "On SIGTERM/SIGINT, how long running requests get to finish (see [Stopping](#stopping-sigterm)).",
  }),
  // Where durable records live: the embedded SQLite file (the default) or a PostgreSQL database.
  databaseUrl: server.custom<string | undefined>("AGENTBOX_DATABASE_URL", {
    table: "database",
    default: undefined,
    defaultDoc: "unset: SQLite in `AGENTBOX_DATA_DIR`",
    doc: "A PostgreSQL 15+ database (`postgres://user:password@host:5432/name`) for every area's durable records (keys, tenants, sandbox records, snapshots' metadata, network policies, usage, stored-file metadata, events, webhooks and deliveries, deployments), migrated at start. Templates and vector indexes stay in `AGENTBOX_DATA_DIR`. See [cluster.md](cluster.md#durable-state-postgresql).",
    parse: (raw) => {
      if (!/^postgres(ql)?:\/\//.test(raw)) throw new Error("must be a postgres:// or postgresql:// URL");
      return raw;
    },
  }),
  databasePoolSize: server.integer("AGENTBOX_DATABASE_POOL_SIZE", {
    table: "database",
    default: 10,
    minimum: 1,
    doc: "Connections this node opens to PostgreSQL at most; a query past them waits for one to be free. Only with `AGENTBOX_DATABASE_URL`.",
  }),
  databaseConnectTimeoutMs: server.integer("AGENTBOX_DATABASE_CONNECT_TIMEOUT_MS", {
    table: "database",
    default: 5000,
    minimum: 100,
    doc: "How long opening a connection to PostgreSQL, or waiting for a free one of the pool, may take; past it (and at once when the database refuses or drops connections) the request is 503 `database_unavailable` with `Retry-After: 2`, and nothing was done. Only with `AGENTBOX_DATABASE_URL`.",
  }),
  nodeId: server.string("AGENTBOX_NODE_ID", {
    table: "database",
    default: os.hostname(),
    defaultDoc: "the host name",
    doc: "This node's name, written as the owner (`node_id`) of every sandbox record it creates and of every deployment it runs; at start a node re-adopts or ends only the running sandboxes it owns (and in a cluster starts only its own deployments). Unique per node sharing one database.",
  }),
  // Requests and connections.
  bodyLimitBytes: server.number("AGENTBOX_BODY_LIMIT_BYTES", {
    table: "requests",
    default: 8 * 2 ** 20,
    defaultDoc: "`8388608` (8 MiB)",
    doc: "413 `payload_too_large`.",
  }),
  maxCodeBytes: server.number("AGENTBOX_MAX_CODE_BYTES", {
    table: "requests",
    default: 2 ** 20,
    defaultDoc: "`1048576` (1 MiB)",
    doc: "`code` of a run, or the command line of `commands/run`: 413 `payload_too_large`.",
  }),
  maxJsonDepth: server.number("AGENTBOX_MAX_JSON_DEPTH", {
    table: "requests",
    default: 64,
    doc: 'Nesting of arrays/objects in a JSON body, checked before parsing: 400 `invalid_request` ("nested deeper than 64 levels").',
  }),
  maxHeaderBytes: server.number("AGENTBOX_MAX_HEADER_BYTES", {
    table: "requests",
    default: 16 * 1024,
    doc: "Request line plus headers (Node's `maxHeaderSize`): 431 `headers_too_large`.",
  }),
  requestTimeoutMs: server.number("AGENTBOX_REQUEST_TIMEOUT_MS", {
    table: "requests",
    default: 300_000,
    doc: "Time a client has to send the whole request (headers and body); a slower one gets 408 `request_timeout` and the connection is closed (checked every second). Does not limit how long a run takes.",
  }),
  maxUploadBytes: server.number("AGENTBOX_MAX_UPLOAD_BYTES", {
    table: "requests",
    default: 100 * 2 ** 20,
    defaultDoc: "`104857600` (100 MiB)",
    doc: "One upload: 413 `payload_too_large`.",
  }),
  maxFileReadBytes: server.number("AGENTBOX_MAX_FILE_READ_BYTES", {
    table: "requests",
    default: 16 * 2 ** 20,
    defaultDoc: "`16777216` (16 MiB)",
    doc: "A file `files/read` returns inside JSON: 413 (use `download`).",
  }),
  maxDownloadBytes: server.number("AGENTBOX_MAX_DOWNLOAD_BYTES", {
    table: "requests",
    default: 100 * 2 ** 20,
    defaultDoc: "`104857600` (100 MiB)",
    doc: "A file `download` returns: 413.",
  }),
  maxListFiles: server.number("AGENTBOX_MAX_LIST_FILES", {
    table: "requests",
    default: 1000,
    doc: "Entries one `files/list` call returns at most.",
  }),
  e2bMaxWatchers: server.number("AGENTBOX_E2B_MAX_WATCHERS", {
    table: "requests",
    default: 8,
    doc: "Directory watches (E2B's `files.watchDir`, each a listing of the directory, or with `recursive` of its whole tree up to `AGENTBOX_MAX_LIST_FILES` entries, every 250 ms) open at once per sandbox: the next is refused with Connect `resource_exhausted` (the SDK's `RateLimitError`; the native 429 `rate_limited`), Retry-After 1. See [e2b.md](e2b.md).",
  }),
  e2bMaxWatchersPerTenant: server.number("AGENTBOX_E2B_MAX_WATCHERS_PER_TENANT", {
    table: "requests",
    default: 32,
    doc: "Directory watches open at once over all of one tenant's sandboxes (streamed and polled together; a recursive one lists a whole tree every 250 ms): the next is refused as at AGENTBOX_E2B_MAX_WATCHERS.",
  }),
  e2bWatcherIdleS: server.number("AGENTBOX_E2B_WATCHER_IDLE_S", {
    table: "requests",
    default: 300,
    doc: "A polled watcher (`CreateWatcher`) whose events nobody asked for (`GetWatcherEvents`) this long is stopped and forgotten, its place freed; a watch that ended by itself (its directory removed) keeps only its error, this long.",
  }),
  e2bWatcherEventBytes: server.number("AGENTBOX_E2B_WATCHER_EVENT_BYTES", {
    table: "requests",
    default: 1024 * 1024,
    defaultDoc: "`1048576` (1 MiB)",
    doc: "Bytes of events (their names, and 32 per event) a polled watcher keeps between two asks, beside at most AGENTBOX_MAX_LIST_FILES events: over either, the oldest are dropped first.",
  }),
  // Client connections sized under the process's open-file limit: client sockets may take half of it,
  // the rest is for sandboxes (pipes, sockets), the database and logs. One address may hold an eighth
  // of the client share, so one noisy client leaves seven eighths to everyone else.
  maxConnections: server.number("AGENTBOX_MAX_CONNECTIONS", {
    table: "connections",
    default: (m) => Math.max(64, Math.floor(m.openFiles / 2)),
    defaultDoc: "half the process's open-file limit (soft `RLIMIT_NOFILE`, read from `/proc/self/limits`; at least 64)",
    doc: "Open client connections at once, all addresses together: a new connection is closed at once (the client sees a reset).",
  }),
  maxConnectionsPerAddress: server.number("AGENTBOX_MAX_CONNECTIONS_PER_ADDRESS", {
    table: "connections",
    default: (_m, get) => Math.max(16, Math.floor((get("maxConnections") as number) / 8)),
    defaultDoc: "an eighth of `AGENTBOX_MAX_CONNECTIONS` (at least 16)",
    doc: "Open connections from one client address (IPv4 address, or IPv6 /64): a new one from that address is closed at once.",
  }),
  headerTimeoutMs: server.number("AGENTBOX_HEADER_TIMEOUT_MS", {
    table: "connections",
    default: 10_000,
    doc: "Time a connection has to send a request's complete headers, counted from when it connects or its previous request ends: 408 `request_timeout`, then the connection is closed. Checked every second, so a slow or silent client is gone within the timeout plus a second.",
  }),
  // A guard against a runaway client, not the capacity limit (admission control is: the execution
  // gates and the start queue answer 503/429 from what the machine can do). Above what this machine
  // can answer (~400 answers/s per core), so one key used by a whole team is never throttled by it:
  // 30,000 a minute per core.
  rateLimitPerMinute: server.number("AGENTBOX_RATE_LIMIT_PER_MINUTE", {
    table: "requests-per-key",
    default: (m) => m.cores * 30_000,
    defaultDoc: "`30000 × cores` [60000]",
    doc: "Requests per minute per API key (fixed one-minute window); `0` turns it off. Per key: `keys create --rate-limit N`. A guard against a runaway client, not the capacity limit: it is above what the machine can answer (~400 answers/s per core), so one key shared by a whole team of agents is limited by the admission rules (execution slots, the start queue: 503/429 with `Retry-After`), never by this count. Set it lower per key for untrusted clients.",
  }),
  maxConcurrentRunsPerKey: server.number("AGENTBOX_MAX_CONCURRENT_RUNS_PER_KEY", {
    table: "requests-per-key",
    default: 64,
    doc: "`code/run` + `commands/run` executing at once per API key; `0` turns it off. Per key: `keys create --max-concurrent N`.",
  }),
});

export function loadConfig(env: NodeJS.ProcessEnv = process.env, machine?: Machine): Config {
  const s = readSettings(serverSettingsSchema, env, machine);
  const dataDir = path.resolve(s.dataDir);
  return {
    ...s,
    dataDir,
    databaseFile: path.resolve(s.databaseFile ?? path.join(dataDir, "agentbox.db")),
    workspaceDir: path.resolve(
      s.workspaceDir ?? path.join("/run/agentbox", crypto.createHash("sha256").update(dataDir).digest("hex").slice(0, 16)),
    ),
  };
}
