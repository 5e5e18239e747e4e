// Sandbox lifecycle: create (from a warm pool of pre-started sandboxes), look up per tenant, kill,
// expire (the reaper), capacity caps, and recovery after a restart of the service (re-adopt what
// is still alive in the records, sweep every workspace and cgroup no record owns).
import crypto from "node:crypto";
import os from "node:os";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import { ApiError, sandboxNotFound } from "../errors.js";
import type { SandboxRecord, SandboxStore } from "../store/sandboxes.js";
import { Box } from "./box.js";
import { CgroupManager } from "./cgroup.js";
import { buildSeccompFilter } from "./seccomp.js";
import { builtInTemplates, type Template } from "./templates.js";
import { WorkspaceManager } from "./workspace.js";

/**
 * Host uids for sandboxes: each service on a host takes its own block (chosen from its workspace
 * dir), so two services never hand the same uid to two sandboxes.
 */
const UID_BASE = 200000;
const UID_BLOCKS = 400;
const UID_RANGE = 4000;

/** Warm sandboxes started side by side when the pool refills. */
const POOL_PARALLEL = 1;

function uidBlockStart(workspaceDir: string): number {
  const block = crypto.createHash("sha256").update(workspaceDir).digest().readUInt32BE(0) % UID_BLOCKS;
  return UID_BASE + block * UID_RANGE;
}

export interface CreateInput {
  template?: string;
  timeoutS?: number;
  envVars?: Record<string, string>;
  metadata?: Record<string, unknown>;
}

interface Live {
  record: SandboxRecord;
  box: Box;
}

export class SandboxManager {
  readonly templates: Template[];
  private readonly live = new Map<string, Live>();
  private readonly warm: Box[] = [];
  private warming = 0;
  private readonly usedUids = new Set<number>();
  private readonly firstUid: number;
  private nextUid: number;
  private readonly cgroups = new CgroupManager();
  private readonly workspaces: WorkspaceManager;
  private readonly seccomp = buildSeccompFilter();
  private reaper: NodeJS.Timeout | undefined;
  private closing = false;
  private runsInFlight = 0;
  /** Sandboxes being created right now: counted against capacity before their record exists. */
  private pending = 0;
  /** The same per tenant, so that concurrent creates cannot overshoot a tenant's quota. */
  private readonly pendingByTenant = new Map<string, number>();
  private readonly endedListeners = new Set<(id: string) => void>();
  /** Cleanups of ended sandboxes still running in the background (close() waits for them). */
  private readonly teardowns = new Set<Promise<void>>();

  constructor(
    private readonly config: Config,
    private readonly store: SandboxStore,
    private readonly log: Logger,
  ) {
    this.templates = builtInTemplates(config.limits);
    this.workspaces = new WorkspaceManager(config.workspaceDir);
    this.firstUid = uidBlockStart(config.workspaceDir);
    this.nextUid = this.firstUid;
  }

  /** Re-adopts the sandboxes the records say are running, removes leftovers, starts the pool and the reaper. */
  async init(): Promise<void> {
    const now = Date.now();
    const adopt: SandboxRecord[] = [];
    for (const record of this.store.listRunning()) {
      this.usedUids.add(record.hostUid);
      if (Date.parse(record.timeoutAt) <= now) this.store.end(record.id, "timed_out", new Date().toISOString());
      else adopt.push(record);
    }
    // Several at a time: a restart with hundreds of live sandboxes must not take minutes.
    const workers = Array.from({ length: Math.min(adopt.length, Math.max(4, os.availableParallelism() * 4)) }, async () => {
      for (let record = adopt.shift(); record; record = adopt.shift()) {
        try {
          const box = await this.startBox(record.id, record.hostUid);
          if (Object.keys(record.envVars).length) await box.setEnv(record.envVars);
          this.live.set(record.id, { record, box });
          this.log.info({ sandbox_id: record.id }, "re-adopted sandbox after restart");
        } catch (err) {
          this.log.error({ err, sandbox_id: record.id }, "could not re-adopt sandbox; ending it");
          this.store.end(record.id, "terminated", new Date().toISOString());
        }
      }
    });
    await Promise.all(workers);
    await this.sweep();
    this.reaper = setInterval(() => void this.reap(), this.config.reaperIntervalMs);
    this.reaper.unref();
    this.fillPool();
  }

  /** Removes every workspace and cgroup that belongs to no live sandbox (left by a crash). */
  private async sweep(): Promise<void> {
    const keep = new Set(this.live.keys());
    // The cgroup parent can be shared with other services on this host (same cgroup, another data
    // dir): only groups named like one of our own workspaces are ours. A sandbox's workspace is
    // made before its cgroup and removed after it, so every cgroup we left has a workspace too.
    const ours = new Set(await this.workspaces.existing());
    for (const name of ours) {
      if (!keep.has(name)) await this.workspaces.destroy(name).catch((err) => this.log.warn({ err, name }, "sweep: workspace"));
    }
    for (const name of await this.cgroups.existing()) {
      if (!keep.has(name) && ours.has(name)) {
        await this.cgroups.removeByName(name).catch((err) => this.log.warn({ err, name }, "sweep: cgroup"));
      }
    }
    for (const { record } of this.live.values()) this.usedUids.add(record.hostUid);
  }

  private allocateUid(): number {
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

  private startBox(name: string, uid: number): Promise<Box> {
    const onLog = (line: string) => this.log.warn({ sandbox_id: name }, `sandbox process: ${line}`);
    return Box.start({ name, uid, limits: this.config.limits, seccomp: this.seccomp, onLog }, this.cgroups, this.workspaces);
  }

  private fillPool(): void {
    if (this.closing) return;
    const room = this.config.maxSandboxes - this.live.size - this.pending;
    if (this.warm.length + this.warming >= Math.min(this.config.warmPool, room) || this.warming >= POOL_PARALLEL) return;
    this.warming += 1;
    const name = crypto.randomUUID();
    const uid = this.allocateUid();
    this.startBox(name, uid)
      .then(
        (box) => {
          if (this.closing) return void box.destroy();
          this.warm.push(box);
        },
        (err) => {
          this.usedUids.delete(uid);
          this.log.error({ err }, "warm pool: sandbox failed to start");
        },
      )
      .finally(() => {
        this.warming -= 1;
        setImmediate(() => this.fillPool());
      });
    // Up to POOL_PARALLEL at a time.
    this.fillPool();
  }

  liveCount(): number {
    return this.live.size;
  }

  async create(tenantId: string, input: CreateInput): Promise<SandboxRecord> {
    if (this.closing) throw new ApiError("at_capacity", "The service is shutting down", 5);
    const template = input.template ?? "python-base-v1";
    if (!this.templates.some((t) => t.id === template)) throw new ApiError("template_not_found", `Template '${template}' does not exist`);
    if (this.live.size + this.pending >= this.config.maxSandboxes) {
      throw new ApiError("at_capacity", `The service is at its limit of ${this.config.maxSandboxes} live sandboxes`, 5);
    }
    const tenantPending = this.pendingByTenant.get(tenantId) ?? 0;
    if (this.store.countRunning(tenantId) + tenantPending >= this.config.maxSandboxesPerTenant) {
      throw new ApiError("quota_exceeded", `Your tenant already has ${this.config.maxSandboxesPerTenant} live sandboxes, its quota`, 10);
    }
    const timeoutS = input.timeoutS ?? this.config.defaultSandboxTimeoutS;
    this.pending += 1;
    this.pendingByTenant.set(tenantId, tenantPending + 1);
    let box: Box | undefined;
    try {
      box = this.warm.shift();
      if (!box) box = await this.startBox(crypto.randomUUID(), this.allocateUid());
      // After the reply is written: starting a sandbox forks processes, which would delay it.
      setImmediate(() => this.fillPool());
      if (input.envVars && Object.keys(input.envVars).length) await box.setEnv(input.envVars);
      const now = new Date();
      const record: SandboxRecord = {
        id: box.spec.name,
        tenantId,
        template,
        status: "running",
        metadata: input.metadata ?? {},
        envVars: input.envVars ?? {},
        cpuCount: this.config.limits.cpus,
        memoryMb: this.config.limits.memoryMb,
        hostUid: box.spec.uid,
        startedAt: now.toISOString(),
        timeoutAt: new Date(now.getTime() + timeoutS * 1000).toISOString(),
        endedAt: null,
      };
      this.store.insert(record);
      this.live.set(record.id, { record, box });
      return record;
    } catch (err) {
      if (box) await this.release(box);
      throw err;
    } finally {
      this.pending -= 1;
      const left = (this.pendingByTenant.get(tenantId) ?? 1) - 1;
      if (left > 0) this.pendingByTenant.set(tenantId, left);
      else this.pendingByTenant.delete(tenantId);
    }
  }

  /** The caller's sandbox record, live or ended; another tenant's sandbox does not exist for them. */
  get(tenantId: string, id: string): SandboxRecord {
    const live = this.live.get(id);
    const record = live?.record ?? this.store.get(id);
    if (!record || record.tenantId !== tenantId) throw sandboxNotFound(id);
    return record;
  }

  /** A running sandbox of the caller's, to run something in. */
  box(tenantId: string, id: string): Box {
    const live = this.live.get(id);
    if (!live) {
      const record = this.get(tenantId, id);
      throw new ApiError("invalid_state", `Sandbox '${id}' is ${record.status}; create a new one`);
    }
    if (live.record.tenantId !== tenantId) throw sandboxNotFound(id);
    return live.box;
  }

  list(tenantId: string, limit: number, offset: number) {
    const page = this.store.listByTenant(tenantId, limit, offset);
    return { sandboxes: page.sandboxes.map((r) => this.live.get(r.id)?.record ?? r), total: page.total };
  }

  async kill(tenantId: string, id: string): Promise<void> {
    const record = this.get(tenantId, id);
    if (record.status !== "running") return;
    await this.end(id, "terminated");
  }

  setTimeout(tenantId: string, id: string, timeoutS: number): SandboxRecord {
    this.box(tenantId, id);
    const live = this.live.get(id) as Live;
    live.record.timeoutAt = new Date(Date.now() + timeoutS * 1000).toISOString();
    this.store.setTimeout(id, live.record.timeoutAt);
    return live.record;
  }

  /** Counts a run or command against the global cap while it executes. */
  async execute<T>(task: () => Promise<T>): Promise<T> {
    if (this.runsInFlight >= this.config.maxConcurrentRuns) {
      throw new ApiError("at_capacity", `The service is running its limit of ${this.config.maxConcurrentRuns} executions`, 1);
    }
    this.runsInFlight += 1;
    try {
      return await task();
    } finally {
      this.runsInFlight -= 1;
    }
  }

  inFlight(): number {
    return this.runsInFlight;
  }

  /** Calls `listener` with the id of every sandbox that ends (killed or expired), e.g. to drop its code contexts. */
  onEnded(listener: (id: string) => void): void {
    this.endedListeners.add(listener);
  }

  private async end(id: string, status: "terminated" | "timed_out"): Promise<void> {
    const live = this.live.get(id);
    if (!live) return;
    this.live.delete(id);
    const endedAt = new Date().toISOString();
    live.record.status = status;
    live.record.endedAt = endedAt;
    this.store.end(id, status, endedAt);
    for (const listener of this.endedListeners) listener(id);
    // The caller gets its answer once the processes are killed; unmounting and removing the cgroup
    // go on in the background (a crash midway leaves them to the start-up sweep).
    await live.box.stop().catch((err) => this.log.error({ err, sandbox_id: id }, "sandbox kill failed"));
    const teardown = this.release(live.box).finally(() => {
      this.teardowns.delete(teardown);
      this.fillPool();
    });
    this.teardowns.add(teardown);
  }

  private async release(box: Box): Promise<void> {
    try {
      await box.destroy();
    } catch (err) {
      this.log.error({ err, sandbox_id: box.spec.name }, "sandbox cleanup failed");
    } finally {
      // Only now: the uid is not handed out again while the old sandbox's files or processes may remain.
      this.usedUids.delete(box.spec.uid);
    }
  }

  private async reap(): Promise<void> {
    const now = Date.now();
    for (const [id, live] of this.live) {
      if (Date.parse(live.record.timeoutAt) <= now) {
        await this.end(id, "timed_out").catch((err) => this.log.error({ err, sandbox_id: id }, "reaper failed"));
      }
    }
  }

  /**
   * Stops the reaper and the pool. Live sandboxes keep their records and workspaces so that the
   * next start re-adopts them; their processes are killed and their cgroups removed now (re-adoption
   * makes new ones), so a stopped service leaves nothing running and no group behind even if it is
   * never started again on this data dir.
   */
  async close(opts: { destroyAll?: boolean } = {}): Promise<void> {
    this.closing = true;
    if (this.reaper) clearInterval(this.reaper);
    while (this.warming > 0) await new Promise((r) => setTimeout(r, 10));
    await Promise.all(this.warm.splice(0).map((box) => this.release(box)));
    if (opts.destroyAll) {
      await Promise.all([...this.live.keys()].map((id) => this.end(id, "terminated")));
      await Promise.all([...this.teardowns]);
      return;
    }
    // Sandboxes that ended before the stop: finish cleaning up after them.
    await Promise.all([...this.teardowns]);
    await Promise.all(
      [...this.live.values()].map(async ({ box }) => {
        box.ended = true;
        await box.cgroup.destroy().catch((err) => this.log.error({ err, sandbox_id: box.spec.name }, "shutdown: cgroup"));
      }),
    );
  }
}
