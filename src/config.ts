// Configuration: every setting the service reads from the environment, with its default, in one place.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { e2bDomain } from "./e2b/hosts.js";
import { type DeploymentsConfig, loadDeploymentsConfig } from "./deployments/config.js";
import { openFileLimit } from "./fd-limit.js";
import { type FilesConfig, loadFilesConfig } from "./files/config.js";
import { type EmbeddingsConfig, loadEmbeddingsConfig } from "./inference/embeddings-config.js";
import { type NetworkSettings, networkSettings } from "./network/settings.js";
import type { EffectiveQuotas } from "./store/tenants.js";

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got '${raw}'`);
  return value;
}

function bool(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  return ["1", "true", "yes", "on"].includes(raw.toLowerCase());
}

export interface Limits {
  /** Memory cap of one sandbox (all its processes and its tmpfs files), MiB. */
  memoryMb: number;
  /** Processes and threads one sandbox may hold at once. */
  pids: number;
  /** CPU cores one sandbox may use. */
  cpus: number;
  /** Size of the sandbox's /home/user, MiB. */
  diskMb: number;
  /** Size of the sandbox's /tmp, MiB. */
  tmpMb: number;
  /** Captured bytes per stream per run; past it output is cut and the run stopped. */
  outputBytes: number;
}

export interface Config {
  /** Egress policy defaults and limits, port URLs and share links (src/network/settings.ts). */
  network: NetworkSettings;
  host: string;
  port: number;
  dataDir: string;
  /** Where sandbox workspaces are mounted; must be traversable by unprivileged uids. */
  workspaceDir: string;
  bootstrapApiKey: string | undefined;
  logLevel: string;
  limits: Limits;
  defaultSandboxTimeoutS: number;
  maxSandboxTimeoutS: number;
  defaultRunTimeoutS: number;
  maxRunTimeoutS: number;
  maxCodeBytes: number;
  bodyLimitBytes: number;
  maxUploadBytes: number;
  /** Largest file `files/read` returns inside JSON; bigger files are for `download`. */
  maxFileReadBytes: number;
  maxDownloadBytes: number;
  warmPool: number;
  maxSandboxes: number;
  maxSandboxesPerTenant: number;
  maxConcurrentRuns: number;
  maxContextsPerSandbox: number;
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
  providersFile: string | undefined;
  /** AGENTBOX_MODEL: one GGUF file served as a local model (no providers file needed). */
  model: string | undefined;
  /** The built-in embedding model: preload, deadline, per-tenant bound, job size (src/inference/embeddings-config.ts). */
  embeddings: EmbeddingsConfig;
  /** How local models without a providers entry (pulled ones, AGENTBOX_MODEL) are run. */
  localModel: { contextSize: number; parallel: number; gpu: boolean };
  reaperIntervalMs: number;
  /** Default tenant quota: memory of all of one tenant's sandboxes together (its parent cgroup), MiB. */
  tenantMemoryMb: number;
  /** Default tenant quota: processes and threads of all of one tenant's sandboxes together. */
  tenantProcesses: number;
  /** Default tenant quota: stored bytes of one tenant, MiB. */
  tenantStorageMb: number;
  /** Default tenant quota: vector indexes of one tenant. */
  tenantVectorIndexes: number;
  /** Default tenant quota: vectors in all of one tenant's indexes. */
  tenantVectors: number;
  /** Default tenant quota: bytes of one tenant's vectors (embedding + metadata JSON + id), MiB. */
  tenantVectorStorageMb: number;
  /** Bytes of all tenants' vectors together that this node holds in memory, MiB; past it upserts are 503. */
  vectorMemoryMb: number;
  /** Most warm sandboxes the pool grows to under a burst of creates (it starts at `warmPool`). */
  warmPoolMax: number;
  /** Pool sandboxes (the next to be handed out) that pre-import the data stack while they wait. */
  poolPreImport: number;
  /** Sandbox starts (pool refills and cold creates) running at once. */
  maxParallelStarts: number;
  /**
   * A fixed cap on creates waiting for a start (0: none; the queue is sized from the measured
   * start speed and createWaitMs). Past it a create is 503 at once.
   */
  startQueue: number;
  /** The longest a create may be expected to wait for a sandbox start, ms: the queue holds what starts serve in it. */
  createWaitMs: number;
  /** Sandbox teardowns (kill leftovers, remove cgroups, unmount the workspace) running at once. */
  maxParallelTeardowns: number;
  /** Memory of all sandboxes together (the service's own cgroup), MiB. */
  sandboxesMemoryMb: number;
  /** CPU weight of all sandboxes together against the host's own processes, in busy host processes. */
  sandboxesCpuWeight: number;
  /** Host memory kept free: below it creates are 503 and the pool stops growing, MiB. */
  memoryReserveMb: number;
  /** The operator's admin key from the environment; unset: one generated at first start, stored hashed. */
  adminApiKey: string | undefined;
  /** Open client connections at once, over all addresses (past it new ones are closed at once). */
  maxConnections: number;
  /** Open client connections at once from one address; the difference to maxConnections is the others' reserve. */
  maxConnectionsPerAddress: number;
  /** Time a client has to send a request's headers, ms (also closes connections that send nothing). */
  headerTimeoutMs: number;
  /** Background processes running at once per sandbox (exited ones are kept for inspection up to the same number). */
  maxBackgroundProcesses: number;
  /** Directory watches (E2B's files.watchDir, each a listing every 250 ms) open at once per sandbox. */
  e2bMaxWatchers: number;
  /** E2B's sandbox domain: {port}-{sandboxID}.{domain} and api.{domain} host names are served (src/e2b/hosts.ts). */
  e2bDomain: string | undefined;
  /** Output retained per stream of a background process: its latest bytes, a ring. */
  backgroundOutputBytes: number;
  /** Largest single write to a background process's stdin (413 past it). */
  maxStdinBytes: number;
  /** Stored files (/v1/files): backend, size limit, default quota, expiry (src/files/config.ts). */
  files: FilesConfig;
  /** Deployments (/v1/deployments): replicas, queue, autoscaling, allowed servers (src/deployments/config.ts). */
  deployments: DeploymentsConfig;
  /** Where snapshots of sandbox workspaces are kept (one tar file each). */
  snapshotDir: string;
  /** Largest snapshot (its archive), bytes; a workspace with more is refused. */
  snapshotMaxBytes: number;
  /** Snapshots one tenant may keep at once. */
  snapshotsPerTenant: number;
  /** Copies one fork call may make. */
  maxForkCount: number;
  /** A sandbox paused longer than this is snapshotted and its processes ended, seconds. */
  pausedMaxS: number;
}

/** The tenant quotas a tenant gets for every quota its record leaves unset. */
export function tenantQuotaDefaults(config: Config): EffectiveQuotas {
  return {
    maxSandboxes: config.maxSandboxesPerTenant,
    // No tenant cap below the machine's by default: the gates' fair share keeps tenants apart
    // (src/sandbox/gates.ts); an operator's quota caps one tenant further.
    maxConcurrentRuns: config.maxConcurrentRuns,
    memoryMb: config.tenantMemoryMb,
    maxProcesses: config.tenantProcesses,
    storageMb: config.tenantStorageMb,
    maxVectorIndexes: config.tenantVectorIndexes,
    maxVectors: config.tenantVectors,
    vectorStorageMb: config.tenantVectorStorageMb,
  };
}

/** Live sandboxes that fit: an idle one with a warm python kernel costs ~11 MiB (bench/density.ts); a quarter of the machine is kept for what runs in them. */
function sandboxCap(memMb: number): number {
  return Math.max(8, Math.floor((memMb * 0.75) / 12));
}

/** The host's process table size (the smaller of pid_max and threads-max): every thread takes a pid. */
function hostPids(): number {
  const read = (file: string) => {
    try {
      return Number(fs.readFileSync(file, "utf8").trim()) || Number.POSITIVE_INFINITY;
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  };
  const n = Math.min(read("/proc/sys/kernel/pid_max"), read("/proc/sys/kernel/threads-max"));
  return Number.isFinite(n) ? n : 32768;
}

export function loadConfig(): Config {
  const memMb = os.totalmem() / 2 ** 20;
  const cores = os.availableParallelism();
  const limits: Limits = {
    memoryMb: num("AGENTBOX_SANDBOX_MEMORY_MB", 1024),
    pids: num("AGENTBOX_SANDBOX_PIDS", 256),
    cpus: num("AGENTBOX_SANDBOX_CPUS", 1),
    diskMb: num("AGENTBOX_SANDBOX_DISK_MB", 1024),
    tmpMb: num("AGENTBOX_SANDBOX_TMP_MB", 256),
    outputBytes: num("AGENTBOX_OUTPUT_LIMIT_BYTES", 10 * 2 ** 20),
  };
  const dataDir = path.resolve(process.env.AGENTBOX_DATA_DIR || "./data");
  return {
    network: networkSettings(),
    host: process.env.AGENTBOX_HOST || "127.0.0.1",
    port: num("AGENTBOX_PORT", 8080),
    dataDir,
    workspaceDir: path.resolve(
      process.env.AGENTBOX_WORKSPACE_DIR ||
        path.join("/run/agentbox", crypto.createHash("sha256").update(dataDir).digest("hex").slice(0, 16)),
    ),
    bootstrapApiKey: process.env.AGENTBOX_API_KEY || undefined,
    logLevel: process.env.AGENTBOX_LOG_LEVEL || "info",
    limits,
    defaultSandboxTimeoutS: num("AGENTBOX_SANDBOX_TIMEOUT_S", 300),
    maxSandboxTimeoutS: num("AGENTBOX_MAX_SANDBOX_TIMEOUT_S", 24 * 3600),
    defaultRunTimeoutS: 30,
    maxRunTimeoutS: num("AGENTBOX_MAX_RUN_TIMEOUT_S", 600),
    maxCodeBytes: num("AGENTBOX_MAX_CODE_BYTES", 2 ** 20),
    bodyLimitBytes: num("AGENTBOX_BODY_LIMIT_BYTES", 8 * 2 ** 20),
    maxUploadBytes: num("AGENTBOX_MAX_UPLOAD_BYTES", 100 * 2 ** 20),
    maxFileReadBytes: num("AGENTBOX_MAX_FILE_READ_BYTES", 16 * 2 ** 20),
    maxDownloadBytes: num("AGENTBOX_MAX_DOWNLOAD_BYTES", 100 * 2 ** 20),
    // A pool sandbox costs ~11 MiB and no CPU while it waits: keep enough that a burst of creates
    // after a quiet spell is served from memory (a 25th of the sandbox cap, 4..64).
    warmPool: num("AGENTBOX_WARM_POOL", Math.min(64, Math.max(4, Math.floor(sandboxCap(memMb) / 25)))),
    // An idle sandbox with a warm python kernel costs ~11 MiB (bench/density.ts); keep a quarter of
    // the machine for what runs inside them.
    maxSandboxes: num("AGENTBOX_MAX_SANDBOXES", sandboxCap(memMb)),
    maxSandboxesPerTenant: num("AGENTBOX_MAX_SANDBOXES_PER_TENANT", 200),
    maxConcurrentRuns: num("AGENTBOX_MAX_CONCURRENT_RUNS", Math.max(8, cores * 32)),
    maxContextsPerSandbox: num("AGENTBOX_MAX_CONTEXTS_PER_SANDBOX", 16),
    // A guard against a runaway client, not the capacity limit (admission control is: the
    // execution gates and the start queue answer 503/429 from what the machine can do). Above what
    // this machine can answer (~400 answers/s per core), so one key used by a whole team is
    // never throttled by it: 30,000 a minute per core.
    rateLimitPerMinute: num("AGENTBOX_RATE_LIMIT_PER_MINUTE", cores * 30_000),
    maxConcurrentRunsPerKey: num("AGENTBOX_MAX_CONCURRENT_RUNS_PER_KEY", 64),
    maxJsonDepth: num("AGENTBOX_MAX_JSON_DEPTH", 64),
    maxHeaderBytes: num("AGENTBOX_MAX_HEADER_BYTES", 16 * 1024),
    requestTimeoutMs: num("AGENTBOX_REQUEST_TIMEOUT_MS", 300_000),
    maxListFiles: num("AGENTBOX_MAX_LIST_FILES", 1000),
    shutdownGraceS: num("AGENTBOX_SHUTDOWN_GRACE_S", 30),
    mountRootAliases: bool("AGENTBOX_ROOT_ALIASES", false),
    providersFile: process.env.AGENTBOX_PROVIDERS_FILE || undefined,
    model: process.env.AGENTBOX_MODEL || undefined,
    embeddings: loadEmbeddingsConfig(num, bool),
    localModel: {
      contextSize: num("AGENTBOX_MODEL_CONTEXT_SIZE", 4096),
      parallel: Math.max(1, num("AGENTBOX_MODEL_PARALLEL", 1)),
      gpu: bool("AGENTBOX_MODEL_GPU", false),
    },
    reaperIntervalMs: num("AGENTBOX_REAPER_INTERVAL_MS", 1000),
    // One tenant may take half the host's memory and a quarter of its process table: the rest is
    // left to the other tenants and the host, whatever one tenant does.
    tenantMemoryMb: num("AGENTBOX_TENANT_MEMORY_MB", Math.floor(memMb / 2)),
    tenantProcesses: num("AGENTBOX_TENANT_PROCESSES", Math.floor(hostPids() / 4)),
    // Workspaces are tmpfs: their files are memory, so the same share as memory.
    tenantStorageMb: num("AGENTBOX_TENANT_STORAGE_MB", Math.floor(memMb / 2)),
    ...vectorLimits(memMb),
    poolPreImport: num("AGENTBOX_POOL_PREIMPORT", 4),
    warmPoolMax: num("AGENTBOX_WARM_POOL_MAX", Math.min(256, Math.max(16, Math.floor(sandboxCap(memMb) / 10)))),
    // A start is ~30 ms of CPU (fork, exec, bubblewrap, python start-up) spread over several
    // processes: two per core keeps the cores busy without starving request handling.
    maxParallelStarts: num("AGENTBOX_MAX_PARALLEL_STARTS", Math.max(2, cores * 2)),
    // No fixed count: the queue holds what the measured start speed serves within createWaitMs.
    startQueue: num("AGENTBOX_START_QUEUE", 0),
    // A create accepted into the start queue is served within about this (the queue is sized from
    // the measured start speed; one still waiting at twice this is 503).
    createWaitMs: num("AGENTBOX_CREATE_WAIT_MS", 1000),
    maxParallelTeardowns: num("AGENTBOX_MAX_PARALLEL_TEARDOWNS", Math.max(2, cores * 2)),
    // Sandboxes together never push the host into its own OOM killer: past this the kernel picks a
    // victim among sandbox processes, never the service or the rest of the host.
    sandboxesMemoryMb: num("AGENTBOX_SANDBOXES_MEMORY_MB", Math.floor(memMb * 0.85)),
    memoryReserveMb: num("AGENTBOX_MEMORY_RESERVE_MB", Math.floor(memMb * 0.1)),
    // On cgroup v1 every busy host process weighs as much as the whole sandbox tree by default, so
    // a few of them starve every sandbox. The tree weighs as much as two busy processes per core:
    // the service's main thread still gets a third of a core when sandboxes use everything.
    sandboxesCpuWeight: num("AGENTBOX_SANDBOXES_CPU_WEIGHT", cores * 2),
    adminApiKey: process.env.AGENTBOX_ADMIN_KEY || undefined,
    ...connectionLimits(),
    maxBackgroundProcesses: num("AGENTBOX_MAX_BACKGROUND_PROCESSES", 16),
    e2bMaxWatchers: num("AGENTBOX_E2B_MAX_WATCHERS", 8),
    e2bDomain: e2bDomain(process.env.AGENTBOX_E2B_DOMAIN),
    backgroundOutputBytes: num("AGENTBOX_BACKGROUND_OUTPUT_BYTES", 2 ** 20),
    maxStdinBytes: num("AGENTBOX_MAX_STDIN_BYTES", 2 ** 20),
    files: loadFilesConfig(num, dataDir),
    deployments: loadDeploymentsConfig(num),
    snapshotDir: path.resolve(process.env.AGENTBOX_SNAPSHOT_DIR || path.join(dataDir, "snapshots")),
    snapshotMaxBytes: num("AGENTBOX_SNAPSHOT_MAX_BYTES", 2 * 2 ** 30),
    snapshotsPerTenant: num("AGENTBOX_SNAPSHOTS_PER_TENANT", 100),
    maxForkCount: num("AGENTBOX_MAX_FORK_COUNT", 10),
    pausedMaxS: num("AGENTBOX_PAUSED_MAX_S", 3600),
  };
}

/**
 * Vector memory: every vector of every index is held in memory (its exact copy, its metadata for
 * filters, its graph node; docs/design.md, Vectors). The vectors' accounted bytes together may take
 * an eighth of RAM: what the process holds is up to ~3x that (parsed metadata objects, the graph).
 * One tenant may take half of it; the vector count caps the fixed cost per vector (~0.5 KB of graph
 * links and bookkeeping) that the byte count does not see, at a 32nd of RAM.
 */
function vectorLimits(memMb: number) {
  const vectorMemoryMb = num("AGENTBOX_VECTOR_MEMORY_MB", Math.max(64, Math.floor(memMb / 8)));
  return {
    vectorMemoryMb,
    tenantVectorIndexes: num("AGENTBOX_TENANT_VECTOR_INDEXES", 100),
    tenantVectors: num("AGENTBOX_TENANT_VECTORS", Math.max(10_000, Math.floor(memMb * 64))),
    tenantVectorStorageMb: num("AGENTBOX_TENANT_VECTOR_STORAGE_MB", Math.max(16, Math.floor(vectorMemoryMb / 2))),
  };
}

/**
 * Connection caps sized under the process's open-file limit: client sockets may take half of it,
 * the rest is for sandboxes (pipes, sockets), the database and logs. One address may hold an
 * eighth of the client share, so one noisy client leaves seven eighths to everyone else.
 */
function connectionLimits(): { maxConnections: number; maxConnectionsPerAddress: number; headerTimeoutMs: number } {
  const maxConnections = num("AGENTBOX_MAX_CONNECTIONS", Math.max(64, Math.floor(openFileLimit() / 2)));
  return {
    maxConnections,
    maxConnectionsPerAddress: num("AGENTBOX_MAX_CONNECTIONS_PER_ADDRESS", Math.max(16, Math.floor(maxConnections / 8))),
    headerTimeoutMs: num("AGENTBOX_HEADER_TIMEOUT_MS", 10_000),
  };
}

export { openFileLimit };
