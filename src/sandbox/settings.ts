// The sandbox area's settings: the limits of one sandbox, the node's sandbox capacity (derived from
// the machine), pause/snapshot/fork limits, and the tenant quotas a tenant gets where its record
// leaves one unset (the sandbox area resolves a tenant's effective quotas; they derive from the same
// capacity). Read once at start-up and handed to the sandbox area beside the server-wide Config.
import path from "node:path";
import type { Config } from "../config.js";
import { defineSettings, type Machine, readSettings, settingsOf } from "../settings/kernel.js";
import type { EffectiveQuotas } from "../tenancy/store/tenants.js";

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

export interface SandboxSettings {
  limits: Limits;
  defaultSandboxTimeoutS: number;
  maxSandboxTimeoutS: number;
  defaultRunTimeoutS: number;
  maxRunTimeoutS: number;
  warmPool: number;
  maxSandboxes: number;
  maxSandboxesPerTenant: number;
  maxConcurrentRuns: number;
  maxContextsPerSandbox: number;
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
  /** A tenant template's warm pool empties once the template has not been asked for this long, seconds. */
  templatePoolIdleS: number;
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
  serviceCpuWeight: number;
  /** Host memory kept free: below it creates are 503 and the pool stops growing, MiB. */
  memoryReserveMb: number;
  /** Background processes running at once per sandbox (exited ones are kept for inspection up to the same number). */
  maxBackgroundProcesses: number;
  /** Output retained per stream of a background process: its latest bytes, a ring. */
  backgroundOutputBytes: number;
  /** Largest single write to a background process's stdin (413 past it). */
  maxStdinBytes: number;
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

/** What the sandbox area reads: the server-wide settings and its own. */
export type SandboxConfig = Config & SandboxSettings;

/** The tenant quotas a tenant gets for every quota its record leaves unset. */
export function tenantQuotaDefaults(config: SandboxSettings): EffectiveQuotas {
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

const sandbox = settingsOf("sandbox");
const tenants = settingsOf("tenants");

export const sandboxSettingsSchema = defineSettings({
  memoryMb: sandbox.number("AGENTBOX_SANDBOX_MEMORY_MB", {
    table: "sandbox",
    default: 1024,
    doc: "Memory of all the sandbox's processes and its files in tmpfs. A run that hits it returns 200 with `error` = `Out of memory: ...`.",
  }),
  pids: sandbox.number("AGENTBOX_SANDBOX_PIDS", {
    table: "sandbox",
    default: 256,
    doc: "Processes/threads at once; `fork` fails inside the sandbox.",
  }),
  cpus: sandbox.number("AGENTBOX_SANDBOX_CPUS", { table: "sandbox", default: 1, doc: "CPU cores (a quota, not a pinning)." }),
  diskMb: sandbox.number("AGENTBOX_SANDBOX_DISK_MB", {
    table: "sandbox",
    default: 1024,
    doc: 'Size of `/home/user`; writes fail with "no space" (`files/write`: 413 `payload_too_large`).',
  }),
  tmpMb: sandbox.number("AGENTBOX_SANDBOX_TMP_MB", {
    table: "sandbox",
    default: 256,
    doc: "Size of `/tmp`, and of `/dev/shm` (the only writable place under the read-only `/dev`).",
  }),
  outputBytes: sandbox.number("AGENTBOX_OUTPUT_LIMIT_BYTES", {
    table: "sandbox",
    default: 10 * 2 ** 20,
    defaultDoc: "`10485760` (10 MiB)",
    doc: "Output captured per stream per run. Past it the output is cut with a `[output truncated at N bytes]` marker, the run is stopped and `error` says so (a 200).",
  }),
  maxContextsPerSandbox: sandbox.number("AGENTBOX_MAX_CONTEXTS_PER_SANDBOX", {
    table: "sandbox",
    default: 16,
    doc: 'Code contexts per sandbox: 400 `invalid_state` ("delete one first").',
  }),
  defaultSandboxTimeoutS: sandbox.number("AGENTBOX_SANDBOX_TIMEOUT_S", {
    table: "sandbox",
    default: 300,
    doc: "Life of a sandbox when `timeout` is not given at create. Then it is `timed_out` and removed.",
  }),
  maxSandboxTimeoutS: sandbox.number("AGENTBOX_MAX_SANDBOX_TIMEOUT_S", {
    table: "sandbox",
    default: 24 * 3600,
    doc: "Largest `timeout` a create or `/timeout` accepts: 400 `invalid_request`.",
  }),
  maxRunTimeoutS: sandbox.number("AGENTBOX_MAX_RUN_TIMEOUT_S", {
    table: "sandbox",
    default: 600,
    doc: "Largest `timeout` of one code run (commands: the same in milliseconds): 400 `invalid_request`. The default run timeout is 30 s (fixed by the API).",
  }),
  maxBackgroundProcesses: sandbox.number("AGENTBOX_MAX_BACKGROUND_PROCESSES", {
    table: "sandbox",
    default: 16,
    doc: "Background processes running at once per sandbox (exited ones are kept for inspection up to the same number): the next start is 429 `rate_limited`. See [api.md](api.md).",
  }),
  backgroundOutputBytes: sandbox.number("AGENTBOX_BACKGROUND_OUTPUT_BYTES", {
    table: "sandbox",
    default: 2 ** 20,
    defaultDoc: "`1048576` (1 MiB)",
    doc: "Output retained per stream of a background process: its latest bytes (a ring); `*_truncated` says earlier output was dropped.",
  }),
  maxStdinBytes: sandbox.number("AGENTBOX_MAX_STDIN_BYTES", {
    table: "sandbox",
    default: 2 ** 20,
    defaultDoc: "`1048576` (1 MiB)",
    doc: "One write to a background process's stdin: 413 `payload_too_large`.",
  }),
  // The node: capacity derived from the machine.
  // An idle sandbox with a warm python kernel costs ~11 MiB (bench/density.ts); keep a quarter of
  // the machine for what runs inside them.
  maxSandboxes: sandbox.number("AGENTBOX_MAX_SANDBOXES", {
    table: "node",
    default: (m) => sandboxCap(m.memoryMb),
    defaultDoc:
      "`max(8, ¾ of RAM in MiB / 12)` [1506]: an idle sandbox with a warm python kernel costs ~11 MiB (`bench/density.ts`), a quarter of RAM is left for what runs in them",
    doc: "Live sandboxes: create is 503 `at_capacity`, `Retry-After: 5`.",
  }),
  // Sandboxes together never push the host into its own OOM killer: past this the kernel picks a
  // victim among sandbox processes, never the service or the rest of the host.
  sandboxesMemoryMb: sandbox.number("AGENTBOX_SANDBOXES_MEMORY_MB", {
    table: "node",
    default: (m) => Math.floor(m.memoryMb * 0.85),
    defaultDoc: "85% of RAM [20489]",
    doc: "Memory of all sandboxes together: a memory limit on the service's own cgroup, so that however many sandboxes fill up, the kernel's OOM killer picks a sandbox process, never the service or the rest of the host.",
  }),
  // On cgroup v1 every busy host process weighs as much as the whole sandbox tree by default, so
  // a few of them starve every sandbox. The tree weighs as much as two busy processes per core:
  // the service's main thread still gets a third of a core when sandboxes use everything.
  sandboxesCpuWeight: sandbox.number("AGENTBOX_SANDBOXES_CPU_WEIGHT", {
    table: "node",
    default: (m) => m.cores * 2,
    defaultDoc: "`2 × cores` [4]",
    doc: "CPU weight of all sandboxes together against the host's own processes, counted in busy host processes (cgroup v1 `cpu.shares` of the shared `agentbox` group: 1024 per unit; v2 `cpu.weight`: 100 per unit). On v1 each busy host process otherwise weighs as much as every sandbox together: a few busy host processes made a sandbox's first javascript run take 1.4 s instead of 0.1 s. At 2 per core the service's own main thread still gets about a third of a core when sandboxes use everything.",
  }),
  // Beside the sandboxes' group, the service's own process weighs as much as all of them: it is
  // what reads requests and refuses what cannot be served, and it takes only what it needs.
  serviceCpuWeight: sandbox.number("AGENTBOX_SERVICE_CPU_WEIGHT", {
    table: "node",
    default: (m) => m.cores * 2,
    defaultDoc: "`2 × cores` [4]",
    doc: "CPU weight of the service's own process (HTTP, admission, its worker threads; not the sandbox spawner, whose launches and teardowns are weighed with the sandboxes), in busy host processes, in a cgroup of its own beside the sandboxes' (`agentbox-services/<service>`, cpu controller only). Outside a group it weighed one busy process against the sandboxes' 2 per core: on a saturated host the service got a sixth of the CPU and accepted requests waited seconds unread (one-key load on a loaded 2-core host: accepted creates' p99 19.7 s, 2.4 s with the group). It uses only what it needs (~0.3–0.6 core at 800 answers/s on 2 cores). 0: the service stays in the cgroup it was started in.",
  }),
  memoryReserveMb: sandbox.number("AGENTBOX_MEMORY_RESERVE_MB", {
    table: "node",
    default: (m) => Math.floor(m.memoryMb * 0.1),
    defaultDoc: "10% of RAM [2410]",
    doc: "Host memory (`MemAvailable`) kept free: below it, creates are 503 `at_capacity` (`Retry-After: 5`) and the warm pool stops growing (checked every second).",
  }),
  // Vector memory: every vector of every index is held in memory (its exact copy, its metadata for
  // filters, its graph node; docs/design.md, Vectors). The vectors' accounted bytes together may take
  // an eighth of RAM: what the process holds is up to ~3x that (parsed metadata objects, the graph).
  vectorMemoryMb: sandbox.number("AGENTBOX_VECTOR_MEMORY_MB", {
    table: "node",
    default: (m) => Math.max(64, Math.floor(m.memoryMb / 8)),
    defaultDoc:
      "`max(64, RAM / 8)` [3013]: every vector is held in memory (its copy, its metadata for filters, its graph node), and what the process holds for them is up to ~3× their counted bytes (parsed metadata objects, see [design.md](design.md#vectors))",
    doc: "Bytes of all tenants' vectors together (embedding, metadata JSON and id of each, as `vector_storage_mb` counts them): an upsert or metadata update that would pass it is 503 `at_capacity`, `Retry-After: 30`, and keeps nothing. Deletes always pass.",
  }),
  maxConcurrentRuns: sandbox.number("AGENTBOX_MAX_CONCURRENT_RUNS", {
    table: "node",
    default: (m) => Math.max(8, m.cores * 32),
    defaultDoc: "`max(8, 32 × cores)` [64]",
    doc: "Executions at once (see [Execution slots](#execution-slots-and-fair-shares)).",
  }),
  // A start is ~30 ms of CPU (fork, exec, bubblewrap, python start-up) spread over several
  // processes: two per core keeps the cores busy without starving request handling.
  maxParallelStarts: sandbox.number("AGENTBOX_MAX_PARALLEL_STARTS", {
    table: "node",
    default: (m) => Math.max(2, m.cores * 2),
    defaultDoc: "`max(2, 2 × cores)` [4]",
    doc: "Sandboxes starting at once (warm-pool refills). A start is ~30 ms of CPU over several processes (bubblewrap, the supervisor's python); two per core keep the cores busy without starving requests.",
  }),
  // No fixed count: the queue holds what the measured start speed serves within createWaitMs.
  startQueue: sandbox.number("AGENTBOX_START_QUEUE", {
    table: "node",
    default: 0,
    defaultDoc: "`0`: no fixed count",
    doc: "A fixed cap on creates waiting for a start when the warm pool is empty. By default a create may wait if its place is expected within `AGENTBOX_CREATE_WAIT_MS`, from the measured start time and the starts running now (~8–10 places on a quiet 2-core host, a few or none on a crowded one; when nothing is starting, the first create is let in: it sets a start going); past it, 503 `at_capacity` at once, with `Retry-After` (the time between two starts, at least 1 s). A tenant alone may fill the queue; when several want it, one holding less than its equal part takes the newest place of the tenant holding most (that create gets the 503).",
  }),
  // A create accepted into the start queue is served within about this (the queue is sized from
  // the measured start speed; one still waiting at 1.8 times this is 503, its sandbox going to the pool).
  // Half a second: with 1 s, clients on a loaded 2-core host saw accepted creates' p99 at 2.0–2.5 s
  // (the reply and the client's own scheduling come on top of the bound); with 0.5 s, 1.5 s, and as
  // many creates served (README, load benchmark).
  createWaitMs: sandbox.number("AGENTBOX_CREATE_WAIT_MS", {
    table: "node",
    default: 500,
    doc: "The longest a create may be expected to wait for a sandbox start to be let into the start queue. A create still waiting at 1.8 times this is 503 `at_capacity`, `Retry-After: 1` (its sandbox goes to the pool for the retry), so an accepted create is answered within twice this (the last tenth is left for the record and the reply), whatever the machine.",
  }),
  // A pool sandbox costs ~11 MiB and no CPU while it waits: keep enough that a burst of creates
  // after a quiet spell is served from memory (a 25th of the sandbox cap, 4..64).
  warmPool: sandbox.number("AGENTBOX_WARM_POOL", {
    table: "node",
    default: (m) => Math.min(64, Math.max(4, Math.floor(sandboxCap(m.memoryMb) / 25))),
    defaultDoc: "a 25th of the sandbox cap, 4..64 [60]",
    doc: "Started sandboxes kept ready while the service is quiet, so that a burst of 100 creates is served from memory (p50 ≤ 20 ms needs about half of them ready). Each costs ~70 ms of CPU to start and ~11 MiB. They count against nothing until handed out. Lower it on a small host.",
  }),
  poolPreImport: sandbox.number("AGENTBOX_POOL_PREIMPORT", {
    table: "node",
    default: 4,
    doc: "How many pool sandboxes (the next to be handed out) pre-import the python data stack while they wait, once no create has come for 1 s: ~0.6 s of CPU once and ~58 MiB more each (see [design.md](design.md)). 0 turns the head start off.",
  }),
  warmPoolMax: sandbox.number("AGENTBOX_WARM_POOL_MAX", {
    table: "node",
    default: (m) => Math.min(256, Math.max(16, Math.floor(sandboxCap(m.memoryMb) / 10))),
    defaultDoc: "a 10th of the sandbox cap, 16..256 [150]",
    doc: "The pool grows with demand: its target is the creates served in the last second (measured over 5 s), between `AGENTBOX_WARM_POOL` and this; past the target it gives one sandbox back per second.",
  }),
  templatePoolIdleS: sandbox.number("AGENTBOX_TEMPLATE_POOL_IDLE_S", {
    table: "node",
    default: 300,
    doc: "Each of the tenants' own templates has a warm pool from its first create on: one started sandbox while the template was asked for in the last this many seconds, more under a stream of creates (the creates served in the last second, as for the built-ins). All template pools together hold at most `AGENTBOX_WARM_POOL_MAX` sandboxes and only the room the sandbox cap leaves; a template not asked for this long gives its sandboxes back (one per second), down to none. 0: no pools for templates (every create from one starts a sandbox).",
  }),
  apiStandby: sandbox.boolean("AGENTBOX_API_STANDBY", {
    table: "node",
    default: true,
    doc: "Under the sandbox host (`npm start`): keep one standby API process with its modules loaded, which takes over at once when the API process dies (the sandboxes keep running either way). Costs one idle Node process's memory (~150 MB measured from source); off, a dead API process is replaced by a whole start (seconds more).",
  }),
  maxParallelTeardowns: sandbox.number("AGENTBOX_MAX_PARALLEL_TEARDOWNS", {
    table: "node",
    default: (m) => Math.max(2, m.cores * 2),
    defaultDoc: "`max(2, 2 × cores)` [4]",
    doc: "Ended sandboxes being cleaned up at once (kill leftovers, remove cgroups, unmount the workspace). A kill is answered once the processes are killed; the cleanup runs in the background, a few at a time, so a burst of kills does not take the CPU and I/O threads requests need.",
  }),
  // Pause, snapshots and forks.
  pausedMaxS: sandbox.number("AGENTBOX_PAUSED_MAX_S", {
    table: "snapshots",
    default: 3600,
    doc: "A sandbox paused longer than this is snapshotted and its processes ended (it stays `paused`; a resume restores its files, not its memory). Also the retry period when that snapshot fails, e.g. over the tenant's storage quota: the sandbox then stays frozen with its memory (held to the tenant's `memory_mb`), resumable as it was, and a `paused` event with `reason: \"hibernate_failed\"` says why.",
  }),
  snapshotDir: sandbox.string("AGENTBOX_SNAPSHOT_DIR", {
    table: "snapshots",
    defaultDoc: "`<data dir>/snapshots`",
    doc: "Where snapshot archives live (one `snap_<uuid>.tar` each, mode 0600). Keep it on persistent disk with the database; a full disk makes snapshots fail with 507 and leaves no partial file. With `AGENTBOX_FILES_BACKEND=s3` it holds only archives being written and forks' archives: a snapshot's archive is kept in the object store (`AGENTBOX_S3_SNAPSHOTS_PREFIX`).",
  }),
  snapshotMaxBytes: sandbox.number("AGENTBOX_SNAPSHOT_MAX_BYTES", {
    table: "snapshots",
    default: 2 * 2 ** 30,
    defaultDoc: "`2147483648` (2 GiB)",
    doc: "Largest snapshot: a workspace whose files add up to more is refused (413) before anything is copied, and the copy stops at this many bytes.",
  }),
  snapshotsPerTenant: sandbox.number("AGENTBOX_SNAPSHOTS_PER_TENANT", {
    table: "snapshots",
    default: 100,
    doc: "Snapshots one tenant keeps at once (429 past it; snapshots of long-paused sandboxes are not counted).",
  }),
  maxForkCount: sandbox.number("AGENTBOX_MAX_FORK_COUNT", {
    table: "snapshots",
    default: 10,
    doc: "Copies one `fork` call may make (400 past it); each copy also counts against the tenant's sandbox quota.",
  }),
  maxSandboxesPerTenant: tenants.number("AGENTBOX_MAX_SANDBOXES_PER_TENANT", {
    table: "tenants",
    default: 200,
    doc: "`max_sandboxes` of a tenant without its own.",
  }),
  // One tenant may take half the host's memory and a quarter of its process table: the rest is
  // left to the other tenants and the host, whatever one tenant does.
  tenantMemoryMb: tenants.number("AGENTBOX_TENANT_MEMORY_MB", {
    table: "tenants",
    default: (m) => Math.floor(m.memoryMb / 2),
    defaultDoc: "half of RAM",
    doc: "`memory_mb` of a tenant without its own, MiB.",
  }),
  tenantProcesses: tenants.number("AGENTBOX_TENANT_PROCESSES", {
    table: "tenants",
    default: (m) => Math.floor(m.processTable / 4),
    defaultDoc: "a quarter of the host's process table",
    doc: "`max_processes` of a tenant without its own.",
  }),
  // Workspaces are tmpfs: their files are memory, so the same share as memory.
  tenantStorageMb: tenants.number("AGENTBOX_TENANT_STORAGE_MB", {
    table: "tenants",
    default: (m) => Math.floor(m.memoryMb / 2),
    defaultDoc: "half of RAM",
    doc: "`storage_mb` of a tenant without its own (its workspaces), MiB.",
  }),
  tenantVectorIndexes: tenants.number("AGENTBOX_TENANT_VECTOR_INDEXES", {
    table: "tenants",
    default: 100,
    doc: "`max_vector_indexes` of a tenant without its own.",
  }),
  // One tenant may take half of the vector memory; the vector count caps the fixed cost per vector
  // (~0.5 KB of graph links and bookkeeping) that the byte count does not see, at a 32nd of RAM.
  tenantVectors: tenants.number("AGENTBOX_TENANT_VECTORS", {
    table: "tenants",
    default: (m) => Math.max(10_000, Math.floor(m.memoryMb * 64)),
    defaultDoc: "`max(10000, RAM in MiB × 64)`",
    doc: "`max_vectors` of a tenant without its own.",
  }),
  tenantVectorStorageMb: tenants.number("AGENTBOX_TENANT_VECTOR_STORAGE_MB", {
    table: "tenants",
    default: (_m, get) => Math.max(16, Math.floor((get("vectorMemoryMb") as number) / 2)),
    defaultDoc: "half of `AGENTBOX_VECTOR_MEMORY_MB`, at least 16",
    doc: "`vector_storage_mb` of a tenant without its own, MiB.",
  }),
});

/** The sandbox settings from the environment; `dataDir` (the server's, resolved) places the snapshots by default. */
export function sandboxSettings(dataDir: string, env: NodeJS.ProcessEnv = process.env, machine?: Machine): SandboxSettings {
  const s = readSettings(sandboxSettingsSchema, env, machine);
  const { memoryMb, pids, cpus, diskMb, tmpMb, outputBytes, ...rest } = s;
  return {
    ...rest,
    snapshotDir: path.resolve(s.snapshotDir ?? path.join(dataDir, "snapshots")),
    limits: { memoryMb, pids, cpus, diskMb, tmpMb, outputBytes },
    defaultRunTimeoutS: 30,
  };
}
