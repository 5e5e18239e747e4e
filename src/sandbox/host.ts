// This host's side of sandboxes: starting and removing their processes (spawner, seccomp, cgroups,
// workspaces), the block of host uids they run as, background teardowns, the host's free memory,
// and the start-up sweep of what no live sandbox owns.
import crypto from "node:crypto";
import fs from "node:fs";
import type { Logger } from "pino";
import { Limiter } from "../common/limiter.js";
import type { SandboxConfig } from "./settings.js";
import { ApiError } from "../errors.js";
import { Box, type BoxSpec } from "./box.js";
import { CgroupManager, type TenantLimits } from "./cgroup.js";
import type { CustomTemplate, Live, SandboxHost, TemplateCatalog } from "./doors.js";
import { buildSeccompFilter } from "./seccomp.js";
import { ServiceCpuGroup } from "./service-cgroup.js";
import { Spawner } from "./spawner.js";
import { WorkspaceManager } from "./workspace.js";

/**
 * Host uids for sandboxes: each service on a host takes its own block (chosen from its workspace
 * dir), so two services never hand the same uid to two sandboxes.
 */
const UID_BASE = 200000;
const UID_BLOCKS = 400;
const UID_RANGE = 4000;

/** MemAvailable from /proc/meminfo, MiB (a small kernel-rendered file: read synchronously, once a second). */
function availableMemoryMb(): number {
  try {
    const kb = /^MemAvailable:\s+(\d+)/m.exec(fs.readFileSync("/proc/meminfo", "utf8"))?.[1];
    return kb === undefined ? Number.POSITIVE_INFINITY : Number(kb) / 1024;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

function serviceKey(workspaceDir: string): string {
  return `svc-${crypto.createHash("sha256").update(workspaceDir).digest("hex").slice(0, 12)}`;
}

function uidBlockStart(workspaceDir: string): number {
  const block = crypto.createHash("sha256").update(workspaceDir).digest().readUInt32BE(0) % UID_BLOCKS;
  return UID_BASE + block * UID_RANGE;
}

export type HostConfig = Pick<
  SandboxConfig,
  | "dataDir"
  | "workspaceDir"
  | "sandboxesMemoryMb"
  | "maxParallelStarts"
  | "sandboxesCpuWeight"
  | "serviceCpuWeight"
  | "maxParallelTeardowns"
  | "memoryReserveMb"
  | "limits"
>;

export class Host implements SandboxHost {
  readonly cgroups: CgroupManager;
  private readonly workspaces: WorkspaceManager;
  /** Does every fork sandboxes need (launchers, mount, umount) in a small process of its own. */
  private readonly spawner: Spawner;
  /** This process's own CPU group, when the host let it join one. */
  private readonly serviceGroup: ServiceCpuGroup | undefined;
  private readonly seccomp = buildSeccompFilter();
  private readonly teardownLimiter: Limiter;
  /** Host uids in use (a hibernated sandbox keeps its own until it ends). */
  private readonly usedUids = new Set<number>();
  private readonly firstUid: number;
  private nextUid: number;
  /** Cleanups of ended sandboxes still running in the background (settled() waits for them). */
  private readonly teardowns = new Set<Promise<void>>();

  constructor(
    private readonly config: HostConfig,
    private readonly log: Logger,
    /** The tenant's cgroup limits now (its quotas), for assign() without explicit limits. */
    private readonly limitsOf: (tenantId: string) => TenantLimits,
    /** A sandbox's processes were killed by the OOM killer: it ends (reason oom). */
    private readonly onOom: (id: string) => void,
  ) {
    // The sandboxes' groups first (their place is this process's cgroup before it moves), then the
    // service's own CPU group, then the spawner.
    this.cgroups = new CgroupManager(
      serviceKey(config.workspaceDir),
      config.sandboxesMemoryMb,
      Math.max(1, config.maxParallelStarts),
      config.sandboxesCpuWeight,
    );
    this.serviceGroup = joinServiceGroup(serviceKey(config.workspaceDir), config.serviceCpuWeight, log);
    // The spawner leaves the service's group at once: sandbox launches and teardowns (its forks,
    // umount, the removal of workspaces) are the sandboxes' work, weighed with theirs, not the
    // service's (in the service's group they slowed every run under load).
    this.spawner = new Spawner(
      config.dataDir,
      (err, what) => this.log.error({ err }, what),
      (pid) => this.serviceGroup?.release(pid),
    );
    this.workspaces = new WorkspaceManager(config.workspaceDir, (file, args) => this.spawner.exec(file, args));
    this.firstUid = uidBlockStart(config.workspaceDir);
    this.nextUid = this.firstUid;
    this.teardownLimiter = new Limiter(Math.max(1, config.maxParallelTeardowns));
  }

  /** Resolves once the spawner takes work. */
  get listening(): Promise<void> {
    return this.spawner.listening;
  }

  /** This API process took over from an earlier one that died under the same sandbox host. */
  get reattached(): boolean {
    return this.spawner.reattached;
  }

  /** The host's available memory is under AGENTBOX_MEMORY_RESERVE_MB. */
  lowOnMemory(): boolean {
    return availableMemoryMb() < this.config.memoryReserveMb;
  }

  allocateUid(): number {
    for (let i = 0; i < UID_RANGE; i++) {
      const uid = this.nextUid;
      this.nextUid = this.firstUid + ((this.nextUid - this.firstUid + 1) % UID_RANGE);
      if (!this.usedUids.has(uid)) {
        this.usedUids.add(uid);
        return uid;
      }
    }
    throw new ApiError("at_capacity", "No sandbox user ids are free", 5);
  }

  /** Marks a uid in use that a record holds (at start-up, before any allocation). */
  reserveUid(uid: number): void {
    this.usedUids.add(uid);
  }

  freeUid(uid: number): void {
    this.usedUids.delete(uid);
  }

  /** Tenants' own templates (set by the templates area through the façade); absent, only the built-ins. */
  private catalog: TemplateCatalog | undefined;
  private builtIns = new Set<string>();

  useTemplates(builtIns: string[], catalog: TemplateCatalog): void {
    this.builtIns = new Set(builtIns);
    this.catalog = catalog;
  }

  async templateOf(record: { tenantId: string; template: string }): Promise<CustomTemplate | undefined> {
    if (this.builtIns.size === 0 || this.builtIns.has(record.template)) return undefined;
    const custom = await this.catalog?.(record.tenantId, record.template);
    if (!custom) throw new ApiError("template_not_found", `Template '${record.template}' does not exist`);
    return custom;
  }

  /** Starts a sandbox process (for the pool, a re-adoption, or the resume of a hibernated sandbox); `custom`: on its template's root. */
  start(name: string, uid: number, custom?: CustomTemplate): Promise<Box> {
    return Box.start(this.specOf(name, uid, custom), this.cgroups, this.workspaces);
  }

  /**
   * Takes over the sandbox's process if the sandbox host kept it running from an earlier API
   * process (kernels, commands and background processes go on); undefined otherwise.
   */
  adopt(name: string, uid: number, tenantId: string, custom?: CustomTemplate): Promise<Box | undefined> {
    return Box.adopt(this.specOf(name, uid, custom), tenantId, this.cgroups, this.workspaces);
  }

  /** Ends the sandbox processes an earlier API process left with the sandbox host that nothing adopted. */
  releaseUnadopted(): Promise<void> {
    return this.spawner.releaseUnadopted();
  }

  private specOf(name: string, uid: number, custom?: CustomTemplate): BoxSpec {
    const onLog = (line: string) => this.log.warn({ sandbox_id: name }, `sandbox process: ${line}`);
    // Killed by the OOM killer, the sandbox ends (reason oom); any other death of its processes is
    // repaired by a restart at its next use.
    const onDied = (oom: boolean, exitStatus: string | undefined) => {
      if (oom) this.onOom(name);
      // Said in the log: an operator (or a failed test) can tell a crash from a kill.
      else this.log.warn({ sandbox_id: name, exit: exitStatus }, "sandbox process ended unexpectedly; it is restarted at its next use");
    };
    return {
      name,
      uid,
      limits: custom?.limits ?? this.config.limits,
      seccomp: this.seccomp,
      spawner: this.spawner,
      onLog,
      onDied,
      ...(custom?.root ? { root: custom.root } : {}),
    };
  }

  applyTenantLimits(tenantId: string, limits: TenantLimits): Promise<void> {
    return this.cgroups.applyTenantLimits(tenantId, limits);
  }

  assign(box: Box, tenantId: string, limits: TenantLimits = this.limitsOf(tenantId)): Promise<void> {
    return this.cgroups.assign(box.cgroup, tenantId, box.spec.uid, box.spec.limits, limits);
  }

  /**
   * Removes a sandbox (processes, cgroup, workspace). A few at a time: each forks umount and
   * waits on the kernel, and a burst of kills must not take the thread pool and CPU that
   * requests need. `keepUid`: the uid stays reserved (a hibernated sandbox starts again with it).
   */
  async release(box: Box, stopped = false, keepUid = false): Promise<void> {
    if (!stopped) await box.stop().catch(() => {});
    await this.teardownLimiter.run(async () => {
      try {
        await box.teardown();
      } catch (err) {
        this.log.error({ err, sandbox_id: box.spec.name }, "sandbox cleanup failed");
      } finally {
        // Only now: the uid is not handed out again while the old sandbox's files or processes may remain.
        if (!keepUid) this.usedUids.delete(box.spec.uid);
      }
    });
  }

  track(teardown: Promise<void>): void {
    const tracked = teardown.finally(() => this.teardowns.delete(tracked));
    this.teardowns.add(tracked);
  }

  /** Waits for the background cleanups running now. */
  async settled(): Promise<void> {
    await Promise.all([...this.teardowns]);
  }

  /** Removes every workspace and cgroup that belongs to no live sandbox (left by a crash). */
  async sweep(live: readonly Live[]): Promise<void> {
    const keep = new Set(live.map(({ record }) => record.id));
    const ours = new Set(await this.workspaces.existing());
    for (const name of ours) {
      if (!keep.has(name)) await this.workspaces.destroy(name).catch((err) => this.log.warn({ err, name }, "sweep: workspace"));
    }
    // Everything under the service's own group is ours: keep exactly where the live sandboxes are.
    const places = new Set(live.map(({ box }) => this.cgroups.placeOf(box.cgroup)));
    for (const place of await this.cgroups.existing()) {
      if (!places.has(place)) await this.cgroups.removeByName(place).catch((err) => this.log.warn({ err, place }, "sweep: cgroup"));
    }
    await this.cgroups.removeEmptyTenants().catch((err) => this.log.warn({ err }, "sweep: tenant cgroups"));
    // An earlier layout put sandbox groups straight into the shared parent, which other services on
    // this host may use too: only groups named like one of our own workspaces are ours there.
    for (const name of await this.cgroups.legacy()) {
      if (ours.has(name)) await this.cgroups.removeLegacy(name).catch((err) => this.log.warn({ err, name }, "sweep: old cgroup"));
    }
    for (const { record } of live) this.usedUids.add(record.hostUid);
  }

  /** Removes the service's empty groups and stops the spawner (the last step of a shutdown). */
  async close(): Promise<void> {
    await this.cgroups.removeEmpty().catch(() => {});
    await this.spawner.close();
    this.serviceGroup?.leave();
  }
}

/** Joins the service's own CPU group (weight 0: stays where it was started); a host that refuses is logged, not fatal. */
function joinServiceGroup(service: string, weight: number, log: Logger): ServiceCpuGroup | undefined {
  if (weight <= 0) return undefined;
  try {
    return ServiceCpuGroup.join(service, weight);
  } catch (err) {
    log.warn({ err }, "the service's own CPU group could not be made: it runs where it was started");
    return undefined;
  }
}
