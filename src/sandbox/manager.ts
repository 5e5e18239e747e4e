// Sandbox lifecycle: create (from a warm pool of pre-started sandboxes that grows with demand),
// look up per tenant, kill, expire (the reaper), capacity caps and back-pressure on starts, tenant
// quotas (sandbox count here; memory, processes and CPU weight on the tenant's cgroup), and recovery
// after a restart of the service (re-adopt what is still alive in the records, sweep every
// workspace and cgroup no record owns). Pause, resume, snapshots and forks are in ./lifecycle.ts,
// which works on the live sandboxes kept here.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import type { Logger } from "pino";
import { type Config, type Limits, tenantQuotaDefaults } from "../config.js";
import { ApiError, sandboxNotFound, sandboxPaused } from "../errors.js";
import { type EndedBy, type EndReason, type EventDetail, LifecycleBus } from "../events/bus.js";
import type { StorageQuota } from "../files/quota.js";
import { endStatus, type ListFilter, type SandboxRecord, type SandboxStore } from "../store/sandboxes.js";
import type { SnapshotStore } from "../store/snapshots.js";
import { type EffectiveQuotas, effectiveQuotas, type TenantStore } from "../store/tenants.js";
import { Box } from "./box.js";
import type { TemplateRoot } from "./bwrap.js";
import { CgroupManager, type TenantLimits } from "./cgroup.js";
import { DeadlineQueue } from "./deadlines.js";
import { Lifecycle } from "./lifecycle.js";
import { Limiter, PoolDemand, StartMeter } from "./pool.js";
import { buildSeccompFilter } from "./seccomp.js";
import { Spawner } from "./spawner.js";
import { builtInTemplates, type Template } from "./templates.js";
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

/** A tenant's own template as a sandbox starts from it (src/templates/ resolves them). */
export interface CustomTemplate {
  /** The template's id (what the sandbox's record keeps). */
  id: string;
  root: TemplateRoot;
  /** The sandbox's limits (the template's, never above the service's). */
  limits: Limits;
  /** Environment variables every sandbox of the template starts with (a create's own win). */
  envVars: Record<string, string>;
}

/** Looks up a tenant's own templates by id (or name); undefined when the tenant has no such template. */
export type TemplateCatalog = (tenantId: string, idOrName: string) => CustomTemplate | undefined;

/** What a sandbox does when its life runs out: end (default), pause, or snapshot its files and end. */
export type OnTimeout = "kill" | "pause" | "snapshot";

export interface CreateInput {
  template?: string;
  timeoutS?: number;
  envVars?: Record<string, string>;
  metadata?: Record<string, unknown>;
  onTimeout?: OnTimeout;
  /** Start from this snapshot of the tenant's: its files, and its settings where the input leaves them unset. */
  snapshotId?: string;
  /** Files to unpack into the new sandbox's /home/user before it is handed out (a snapshot's archive). */
  restore?: (box: Box) => Promise<unknown>;
  /** Set up once the sandbox is live (a snapshot's network policy); a failure ends the new sandbox. */
  afterCreate?: (record: SandboxRecord) => Promise<void>;
}

export interface Live {
  record: SandboxRecord;
  box: Box;
  /** Seconds of life the sandbox was given (at create or by its last timeout change). */
  lifeS: number;
  onTimeout: OnTimeout;
  /** When the sandbox was paused (ms since the epoch); undefined while it runs. */
  pausedAt?: number;
  /** When a paused sandbox is snapshotted and its processes ended (AGENTBOX_PAUSED_MAX_S after its pause). */
  hibernateAt?: number;
  /** Paused by its own timeout (on_timeout: pause): a resume gives it a whole new life. */
  pausedByTimeout?: boolean;
  /** A lifecycle operation (pause, resume, snapshot) in progress: they run one at a time per sandbox. */
  op?: Promise<unknown>;
}

interface Waiter {
  tenantId: string;
  resolve(box: Box): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

const atCapacity = (what: string, retryAfterS = 1) =>
  new ApiError("at_capacity", `No sandbox can be started right now (${what}); retry in a moment`, retryAfterS);
/**
 * The refusal of a create when the start queue is full: the answer to a flood of creates, made
 * once (an error's stack trace costs ~50 us to capture, and nothing reads it for a 503).
 */
const QUEUE_FULL = atCapacity("sandbox starts are queued");
/** The same for a create that had a place in the queue and gave it to another tenant's. */
const DISPLACED = atCapacity("another tenant's create took this place in the start queue");

/** How a sandbox ended: the reason (kept in its events), who asked, and what else is worth knowing. */
export interface EndCause {
  reason: EndReason;
  by?: EndedBy;
  detail?: EventDetail;
}

export class SandboxManager {
  readonly templates: Template[];
  /** Lifecycle events of every sandbox (created, paused, ..., ended with a reason). */
  readonly events = new LifecycleBus();
  /**
   * One timer for the earliest deadline: a sandbox's life ends at its deadline, not at the next
   * sweep. A deadline moved later without telling the queue is re-armed when it comes due.
   */
  private readonly deadlines = new DeadlineQueue((id) => {
    const at = Date.parse(this.live.get(id)?.record.timeoutAt ?? "");
    if (at > Date.now()) this.deadlines.set(id, at);
    else void this.reap();
  });
  /** @internal the live sandboxes, for ./lifecycle.ts */
  readonly live = new Map<string, Live>();
  /** Live sandboxes per tenant (the tenant quota counts them without a query). */
  private readonly liveByTenant = new Map<string, number>();
  private readonly warm: Box[] = [];
  /** Pool sandboxes already asked to pre-import the data stack (see preImport()). */
  private readonly preImported = new WeakSet<Box>();
  /** Sandboxes starting now (pool refills and re-adoptions). */
  private warming = 0;
  /** Creates waiting for the next sandbox to finish starting (the pool was empty). */
  private readonly waiters: Waiter[] = [];
  /** Recent creates: the pool grows to what they ask for. */
  private readonly demand: PoolDemand;
  /** How fast sandboxes start here and now: how many creates may wait for one (see takeBox()). */
  private readonly starts: StartMeter;
  /** @internal host uids in use (a hibernated sandbox keeps its own until it ends). */
  readonly usedUids = new Set<number>();
  private readonly firstUid: number;
  private nextUid: number;
  /** @internal */
  readonly cgroups: CgroupManager;
  /** Pause, resume, snapshots, forks and what a sandbox does when its life runs out. */
  readonly lifecycle: Lifecycle;
  private readonly workspaces: WorkspaceManager;
  /** Does every fork sandboxes need (launchers, mount, umount) in a small process of its own. */
  private readonly spawner: Spawner;
  private readonly seccomp = buildSeccompFilter();
  private readonly teardownLimiter: Limiter;
  private readonly quotaDefaults: EffectiveQuotas;
  /** @internal */
  readonly log: Logger;
  private reaper: NodeJS.Timeout | undefined;
  private closing = false;
  /** The host's available memory is under AGENTBOX_MEMORY_RESERVE_MB (checked every tick). */
  private lowMemory = false;
  /** Sandboxes being created right now: counted against capacity before their record exists. */
  private pending = 0;
  /** The same per tenant, so that concurrent creates cannot overshoot a tenant's quota. */
  private readonly pendingByTenant = new Map<string, number>();
  private readonly endedListeners = new Set<(id: string) => void>();
  /** Tenants' own templates (set by the templates area); absent, only the built-ins exist. */
  private catalog: TemplateCatalog | undefined;
  /** Cleanups of ended sandboxes still running in the background (close() waits for them). */
  private readonly teardowns = new Set<Promise<void>>();

  constructor(
    /** @internal */
    readonly config: Config,
    /** @internal */
    readonly store: SandboxStore,
    private readonly tenants: TenantStore,
    log: Logger,
    snapshots: SnapshotStore,
    /** Tenants' stored bytes (stored files and snapshots together): snapshots are held to it. */
    storage: StorageQuota,
  ) {
    this.log = log;
    this.templates = builtInTemplates(config.limits);
    this.spawner = new Spawner(config.dataDir, (err, what) => this.log.error({ err }, what));
    this.workspaces = new WorkspaceManager(config.workspaceDir, (file, args) => this.spawner.exec(file, args));
    this.cgroups = new CgroupManager(
      serviceKey(config.workspaceDir),
      config.sandboxesMemoryMb,
      Math.max(1, config.maxParallelStarts),
      config.sandboxesCpuWeight,
    );
    this.firstUid = uidBlockStart(config.workspaceDir);
    this.nextUid = this.firstUid;
    this.teardownLimiter = new Limiter(Math.max(1, config.maxParallelTeardowns));
    this.demand = new PoolDemand(config.warmPool, config.warmPoolMax);
    this.starts = new StartMeter(Math.max(1, config.maxParallelStarts));
    this.quotaDefaults = tenantQuotaDefaults(config);
    this.lifecycle = new Lifecycle(this, snapshots, storage);
  }

  /** Lets sandboxes start from tenants' own templates (src/templates/); before init(), so re-adoption finds them. */
  useTemplates(catalog: TemplateCatalog): void {
    this.catalog = catalog;
  }

  /** @internal the custom template a record's sandbox runs in (undefined for the built-ins). */
  customTemplateOf(record: Pick<SandboxRecord, "tenantId" | "template">): CustomTemplate | undefined {
    if (this.templates.some((t) => t.id === record.template)) return undefined;
    const custom = this.catalog?.(record.tenantId, record.template);
    if (!custom) throw new ApiError("template_not_found", `Template '${record.template}' does not exist`);
    return custom;
  }

  /**
   * A sandbox for one template build (src/templates/steps.ts), outside every tenant's count: no
   * record, no pool. `prepare` gets the sandbox's host uid first (the build's root must be its own)
   * and says what to start; release() ends the sandbox and frees the uid.
   */
  async buildBox(prepare: (uid: number) => Promise<CustomTemplate>): Promise<{ box: Box; release(): Promise<void> }> {
    if (this.closing) throw new ApiError("at_capacity", "The service is shutting down", 5);
    const uid = this.allocateUid();
    let box: Box;
    try {
      box = await this.startBox(crypto.randomUUID(), uid, await prepare(uid));
    } catch (err) {
      this.usedUids.delete(uid);
      throw err;
    }
    return { box, release: () => this.release(box) };
  }

  /** Live (or paused) sandboxes started from a template: a template in use cannot be deleted. */
  sandboxesOfTemplate(templateId: string): number {
    let n = 0;
    for (const { record } of this.live.values()) if (record.template === templateId) n++;
    return n;
  }

  /** The tenant's quotas now: its own where the operator set them, the configured defaults elsewhere. */
  tenantQuotas(tenantId: string): EffectiveQuotas {
    return effectiveQuotas(this.tenants.get(tenantId).quotas, this.quotaDefaults);
  }

  /** @internal */
  tenantLimits(tenantId: string): TenantLimits {
    const q = this.tenantQuotas(tenantId);
    return { memoryMb: q.memoryMb, processes: q.maxProcesses };
  }

  /**
   * Applies the tenant's current quotas to its cgroup (memory, processes) after an operator changed
   * them; the sandbox count is read at every create anyway.
   */
  async applyTenantQuotas(tenantId: string): Promise<void> {
    const limits = this.tenantLimits(tenantId);
    try {
      await this.cgroups.applyTenantLimits(tenantId, limits);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EBUSY") {
        throw new ApiError(
          "invalid_state",
          `The tenant's sandboxes use more than ${limits.memoryMb} MiB now and could not be shrunk to it: end some of them first`,
        );
      }
      throw err;
    }
  }

  /** Re-adopts the sandboxes the records say are running, removes leftovers, starts the pool and the reaper. */
  async init(): Promise<void> {
    this.events.onListenerError((err, event) =>
      this.log.error({ err, sandbox_id: event.sandboxId, event: event.type }, "event listener failed"),
    );
    await this.spawner.listening;
    const now = Date.now();
    const adopt: SandboxRecord[] = [];
    for (const record of this.store.listRunning()) {
      this.usedUids.add(record.hostUid);
      // Paused past the operator's limit: its files are in a snapshot and it waits for a resume.
      if (this.lifecycle.adoptHibernated(record)) continue;
      if (Date.parse(record.timeoutAt) <= now)
        this.recordEnd(record, { reason: "timed_out", detail: { while_down: true } }, record.timeoutAt);
      else adopt.push(record);
    }
    // Several at a time: a restart with hundreds of live sandboxes must not take minutes.
    const workers = Array.from({ length: Math.min(adopt.length, Math.max(4, os.availableParallelism() * 4)) }, async () => {
      for (let record = adopt.shift(); record; record = adopt.shift()) {
        let box: Box | undefined;
        try {
          box = await this.startBox(record.id, record.hostUid, this.customTemplateOf(record));
          await this.cgroups.assign(box.cgroup, record.tenantId, box.spec.uid, box.spec.limits, this.tenantLimits(record.tenantId));
          if (Object.keys(record.envVars).length) await box.setEnv(record.envVars);
          this.addLive(record, box, this.lifeOf(record), this.lifecycle.onTimeoutOf(record.id));
          this.log.info({ sandbox_id: record.id }, "re-adopted sandbox after restart");
        } catch (err) {
          this.log.error({ err, sandbox_id: record.id }, "could not re-adopt sandbox; ending it");
          if (box) await box.destroy().catch(() => {});
          this.recordEnd(record, { reason: "host_restart", detail: { message: String((err as Error)?.message ?? err).slice(0, 500) } });
        }
      }
    });
    await Promise.all(workers);
    await this.sweep();
    this.reaper = setInterval(() => this.tick(), this.config.reaperIntervalMs);
    this.reaper.unref();
    this.fillPool();
    // The first round of starts before the service takes requests, so that its first creates are
    // served from the pool (bounded: a slow host starts serving within 5 s, and a create that
    // comes before the pool is filled waits for a start).
    const first = Math.min(this.config.warmPool, this.config.maxParallelStarts);
    for (const deadline = Date.now() + 5000; this.warm.length < first && this.warming > 0 && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Removes every workspace and cgroup that belongs to no live sandbox (left by a crash). */
  private async sweep(): Promise<void> {
    const keep = new Set(this.live.keys());
    const ours = new Set(await this.workspaces.existing());
    for (const name of ours) {
      if (!keep.has(name)) await this.workspaces.destroy(name).catch((err) => this.log.warn({ err, name }, "sweep: workspace"));
    }
    // Everything under the service's own group is ours: keep exactly where the live sandboxes are.
    const places = new Set([...this.live.values()].map(({ box }) => this.cgroups.placeOf(box.cgroup)));
    for (const place of await this.cgroups.existing()) {
      if (!places.has(place)) await this.cgroups.removeByName(place).catch((err) => this.log.warn({ err, place }, "sweep: cgroup"));
    }
    await this.cgroups.removeEmptyTenants().catch((err) => this.log.warn({ err }, "sweep: tenant cgroups"));
    // An earlier layout put sandbox groups straight into the shared parent, which other services on
    // this host may use too: only groups named like one of our own workspaces are ours there.
    for (const name of await this.cgroups.legacy()) {
      if (ours.has(name)) await this.cgroups.removeLegacy(name).catch((err) => this.log.warn({ err, name }, "sweep: old cgroup"));
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

  /** The life a record was given, from its start and deadline (for sandboxes re-adopted after a restart). */
  private lifeOf(record: SandboxRecord): number {
    return Math.max(1, Math.round((Date.parse(record.timeoutAt) - Date.parse(record.startedAt)) / 1000));
  }

  /** @internal starts a sandbox process outside the pool (re-adoption, resuming a hibernated sandbox). */
  startBox(name: string, uid: number, custom?: CustomTemplate): Promise<Box> {
    const onLog = (line: string) => this.log.warn({ sandbox_id: name }, `sandbox process: ${line}`);
    // Killed by the OOM killer, the sandbox ends (reason oom); any other death of its processes is
    // repaired by a restart at its next use.
    const onDied = (oom: boolean) => {
      if (oom)
        void this.end(name, { reason: "oom", detail: { message: "the sandbox's processes were killed for exceeding its memory limit" } });
    };
    return Box.start(
      {
        name,
        uid,
        limits: custom?.limits ?? this.config.limits,
        seccomp: this.seccomp,
        spawner: this.spawner,
        onLog,
        onDied,
        ...(custom ? { root: custom.root } : {}),
      },
      this.cgroups,
      this.workspaces,
    );
  }

  /**
   * Starts sandboxes until the pool (plus the creates waiting for one) is at its target, up to
   * AGENTBOX_MAX_PARALLEL_STARTS at a time. Every start happens here, off the request path.
   */
  private fillPool(): void {
    if (this.closing || this.lowMemory) return;
    const room = this.config.maxSandboxes - this.live.size - this.pending + this.waiters.length;
    const want = Math.min(this.demand.target() + this.waiters.length, room);
    while (this.warm.length + this.warming < want && this.warming < this.config.maxParallelStarts) {
      this.warming += 1;
      const uid = this.allocateUid();
      const ended = this.starts.begin();
      this.startBox(crypto.randomUUID(), uid)
        .then(
          (box) => {
            ended(true);
            if (this.closing) return void this.track(this.release(box));
            const waiter = this.waiters.shift();
            if (waiter) {
              clearTimeout(waiter.timer);
              waiter.resolve(box);
            } else {
              this.warm.push(box);
              this.preImport();
            }
          },
          (err) => {
            ended(false);
            this.usedUids.delete(uid);
            this.log.error({ err }, "warm pool: sandbox failed to start");
          },
        )
        .finally(() => {
          this.warming -= 1;
          setImmediate(() => this.fillPool());
        });
    }
  }

  /**
   * The pool sandboxes next in line (the oldest AGENTBOX_POOL_PREIMPORT: the pool hands out the
   * oldest first) pre-import the data stack while they wait, so a new sandbox's first
   * `import pandas` costs nothing. Only those few: a pre-import costs ~0.6 s of CPU and ~60 MiB
   * while held, which a pool of dozens would pay for nothing and the hot path would feel.
   */
  private preImport(): void {
    for (const box of this.warm.slice(0, this.config.poolPreImport)) {
      if (this.preImported.has(box)) continue;
      this.preImported.add(box);
      box.preImport().catch((err) => this.log.warn({ err, sandbox_id: box.spec.name }, "warm pool: pre-import not started"));
    }
  }

  /**
   * A started sandbox: from the pool now, or the next one to finish starting if it is expected
   * within AGENTBOX_CREATE_WAIT_MS (from the measured start time and the starts running now; the
   * first create waiting is let in however slow starts are, and waits one start). Otherwise 503
   * at once: a client is better served by a quick "retry in a second" than by a request that
   * hangs while starts pile up. AGENTBOX_START_QUEUE, when set, caps the queue too. A tenant alone
   * may take the whole queue; when several want it, one below its equal part of the queue takes
   * the place of the newest create of the tenant holding the most.
   */
  private takeBox(tenantId: string): Promise<Box> {
    const box = this.warm.shift();
    if (box) {
      this.preImport();
      return Promise.resolve(box);
    }
    const waitMs = this.starts.expectedWaitMs(this.waiters.length + 1);
    const fits = this.waiters.length === 0 || waitMs <= this.config.createWaitMs;
    const capped = this.config.startQueue > 0 && this.waiters.length >= this.config.startQueue;
    if ((!fits || capped) && !this.displaceFor(tenantId)) {
      const retryS = Math.ceil(this.starts.msPerStart() / 1000);
      return Promise.reject(retryS <= 1 ? QUEUE_FULL : atCapacity("sandbox starts are queued", retryS));
    }
    return new Promise<Box>((resolve, reject) => {
      const waiter: Waiter = {
        tenantId,
        resolve,
        reject,
        // A safety net: a wait twice as long as expected (at least twice the bound) ends in a 503.
        timer: setTimeout(() => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(atCapacity("sandboxes are starting as fast as this machine allows"));
        }, 2 * Math.max(this.config.createWaitMs, waitMs)),
      };
      this.waiters.push(waiter);
      this.fillPool();
    });
  }

  /**
   * A sandbox of a custom template, started now for this create (the warm pool holds only the
   * built-ins' sandboxes), with a uid of its own that is given back if the start fails.
   */
  private async takeCustom(custom: CustomTemplate): Promise<Box> {
    const uid = this.allocateUid();
    try {
      return await this.startBox(crypto.randomUUID(), uid, custom);
    } catch (err) {
      this.usedUids.delete(uid);
      this.log.error({ err, template: custom.id }, "sandbox of a custom template failed to start");
      throw new ApiError(
        "internal_error",
        `A sandbox of template '${custom.id}' could not be started: ${String((err as Error)?.message ?? err).slice(0, 300)}`,
      );
    }
  }

  /**
   * The queue is full: if `tenantId` holds less than its equal part of it, the newest create of
   * the tenant holding the most is refused (503, as if it had come too late) and true is returned.
   */
  private displaceFor(tenantId: string): boolean {
    const held = new Map<string, number>([[tenantId, 0]]);
    for (const w of this.waiters) held.set(w.tenantId, (held.get(w.tenantId) ?? 0) + 1);
    const part = Math.max(1, Math.floor(this.waiters.length / held.size));
    if ((held.get(tenantId) ?? 0) >= part) return false;
    let top = tenantId;
    for (const [t, n] of held) if (n > (held.get(top) ?? 0)) top = t;
    if ((held.get(top) ?? 0) <= part) return false;
    let i = this.waiters.length - 1;
    while (i >= 0 && this.waiters[i]?.tenantId !== top) i--;
    const [out] = this.waiters.splice(i, 1);
    if (!out) return false;
    clearTimeout(out.timer);
    out.reject(DISPLACED);
    return true;
  }

  /**
   * Every second: expired sandboxes end; the host's free memory is checked; a pool larger than
   * recent demand gives one sandbox back.
   */
  private tick(): void {
    void this.reap();
    this.lowMemory = availableMemoryMb() < this.config.memoryReserveMb;
    if (this.warm.length > this.demand.target() && this.warming === 0) {
      const extra = this.warm.pop();
      if (extra) this.track(this.release(extra));
    }
  }

  liveCount(): number {
    return this.live.size;
  }

  /** Live sandboxes per tenant (tenants with none are absent). */
  liveByTenantCounts(): ReadonlyMap<string, number> {
    return this.liveByTenant;
  }

  /** @internal */
  addLive(record: SandboxRecord, box: Box, lifeS: number, onTimeout: OnTimeout): void {
    this.live.set(record.id, { record, box, lifeS, onTimeout });
    this.deadlines.set(record.id, Date.parse(record.timeoutAt));
    this.liveByTenant.set(record.tenantId, (this.liveByTenant.get(record.tenantId) ?? 0) + 1);
  }

  /** @internal a live sandbox's deadline moved (a resume after a pause). */
  setDeadline(id: string, at: number): void {
    this.deadlines.set(id, at);
  }

  /** @internal removes a sandbox from the live ones (it ended, or its processes were ended into a snapshot). */
  dropLive(id: string): Live | undefined {
    const live = this.live.get(id);
    if (!live) return undefined;
    this.live.delete(id);
    this.deadlines.delete(id);
    const tenantLeft = (this.liveByTenant.get(live.record.tenantId) ?? 1) - 1;
    if (tenantLeft > 0) this.liveByTenant.set(live.record.tenantId, tenantLeft);
    else this.liveByTenant.delete(live.record.tenantId);
    for (const listener of this.endedListeners) listener(id);
    return live;
  }

  /**
   * Moves a sandbox handed to a tenant into the tenant's group. Not awaited by the create: moving
   * processes between cgroups waits for an RCU grace period (10–30 ms on a busy host), more than a
   * create from the pool may take. Until it is done the sandbox is held by its own limits; anything
   * it forks meanwhile is moved too (or killed), so from then on the tenant's limits hold. A
   * sandbox that cannot be moved is ended rather than left outside its tenant's limits.
   */
  private joinTenant(record: SandboxRecord, box: Box, limits: TenantLimits): void {
    this.cgroups.assign(box.cgroup, record.tenantId, box.spec.uid, box.spec.limits, limits).catch((err) => {
      this.log.error({ err, sandbox_id: record.id }, "could not move the sandbox into its tenant's cgroup; ending it");
      void this.end(record.id, { reason: "error", detail: { message: "could not join the tenant's cgroup" } });
    });
  }

  /**
   * @internal Refuses (503/429) when `count` more sandboxes of the tenant would not fit now: the
   * service's cap, the host's memory, the tenant's sandbox quota.
   */
  checkRoom(tenantId: string, count: number): EffectiveQuotas {
    if (this.closing) throw new ApiError("at_capacity", "The service is shutting down", 5);
    if (this.live.size + this.pending + count > this.config.maxSandboxes) {
      throw new ApiError("at_capacity", `The service is at its limit of ${this.config.maxSandboxes} live sandboxes`, 5);
    }
    if (this.lowMemory) throw new ApiError("at_capacity", "The host is low on memory; no sandbox can be started now", 5);
    const quota = this.tenantQuotas(tenantId);
    const tenantPending = this.pendingByTenant.get(tenantId) ?? 0;
    if ((this.liveByTenant.get(tenantId) ?? 0) + tenantPending + count > quota.maxSandboxes) {
      throw new ApiError(
        "quota_exceeded",
        count === 1
          ? `Your tenant already has ${quota.maxSandboxes} live sandboxes, its quota`
          : `${count} more sandboxes would take your tenant over its quota of ${quota.maxSandboxes} live sandboxes`,
        10,
      );
    }
    return quota;
  }

  async create(tenantId: string, given: CreateInput): Promise<SandboxRecord> {
    const input = given.snapshotId === undefined ? given : this.lifecycle.fromSnapshot(tenantId, given.snapshotId, given);
    const asked = input.template ?? "python-base-v1";
    // A tenant's own template: started on its own root (no warm pool holds one), see takeCustom().
    const custom = this.customTemplateOf({ tenantId, template: asked });
    const template = custom?.id ?? asked;
    const envVars = custom && Object.keys(custom.envVars).length ? { ...custom.envVars, ...input.envVars } : input.envVars;
    const quota = this.checkRoom(tenantId, 1);
    const tenantPending = this.pendingByTenant.get(tenantId) ?? 0;
    const timeoutS = input.timeoutS ?? this.config.defaultSandboxTimeoutS;
    this.pending += 1;
    this.pendingByTenant.set(tenantId, tenantPending + 1);
    let box: Box | undefined;
    try {
      if (custom) box = await this.takeCustom(custom);
      else {
        box = await this.takeBox(tenantId);
        this.demand.record();
        // After the reply is written: starting a sandbox forks processes, which would delay it.
        setImmediate(() => this.fillPool());
      }
      if (envVars && Object.keys(envVars).length) await box.setEnv(envVars);
      if (input.restore) await input.restore(box);
      const now = new Date();
      const record: SandboxRecord = {
        id: box.spec.name,
        tenantId,
        template,
        status: "running",
        metadata: input.metadata ?? {},
        envVars: envVars ?? {},
        cpuCount: box.spec.limits.cpus,
        memoryMb: box.spec.limits.memoryMb,
        hostUid: box.spec.uid,
        startedAt: now.toISOString(),
        timeoutAt: new Date(now.getTime() + timeoutS * 1000).toISOString(),
        endedAt: null,
      };
      this.store.insert(record);
      this.lifecycle.rememberOnTimeout(record.id, input.onTimeout);
      this.addLive(record, box, timeoutS, input.onTimeout ?? "kill");
      this.events.emit({
        type: "created",
        sandboxId: record.id,
        tenantId,
        at: record.startedAt,
        detail: { template, timeout_at: record.timeoutAt },
      });
      this.joinTenant(record, box, { memoryMb: quota.memoryMb, processes: quota.maxProcesses });
      if (input.afterCreate) {
        const after = input.afterCreate;
        box = undefined; // live now: a failure below ends it as a sandbox, not as a pool box
        await after(record).catch(async (err) => {
          await this.end(record.id, { reason: "error", detail: { message: String((err as Error)?.message ?? err).slice(0, 500) } });
          throw err;
        });
      }
      return record;
    } catch (err) {
      if (box) this.track(this.release(box));
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
    const record = live?.record ?? this.lifecycle.hibernatedRecord(id) ?? this.store.get(id);
    if (!record || record.tenantId !== tenantId) throw sandboxNotFound(id);
    return record;
  }

  /** A running sandbox of the caller's, to run something in. */
  box(tenantId: string, id: string): Box {
    const live = this.live.get(id);
    if (!live) {
      const record = this.get(tenantId, id);
      if (record.status === "paused") throw sandboxPaused(id);
      throw new ApiError("invalid_state", `Sandbox '${id}' is ${record.status}; create a new one`);
    }
    if (live.record.tenantId !== tenantId) throw sandboxNotFound(id);
    if (live.record.status === "paused") throw sandboxPaused(id);
    return live.box;
  }

  list(tenantId: string, limit: number, offset: number, filter: ListFilter = {}) {
    const current = (r: SandboxRecord) => this.live.get(r.id)?.record ?? this.lifecycle.hibernatedRecord(r.id) ?? r;
    if (filter.status === "running" || filter.status === "paused") {
      // Paused is known here, not in the store (which says running for both): the live ones are
      // few (capped by AGENTBOX_MAX_SANDBOXES), so they are filtered and paged here.
      const live = this.store.listByTenant(tenantId, this.config.maxSandboxes + 1000, 0, { ...filter, status: "running" });
      const matching = live.sandboxes.map(current).filter((r) => r.status === filter.status);
      return { sandboxes: matching.slice(offset, offset + limit), total: matching.length };
    }
    const page = this.store.listByTenant(tenantId, limit, offset, filter);
    return { sandboxes: page.sandboxes.map(current), total: page.total };
  }

  /** Ends the caller's sandbox; `by`: an API call of the tenant's, or the operator. */
  async kill(tenantId: string, id: string, by: EndedBy = "api"): Promise<void> {
    const record = this.get(tenantId, id);
    if (this.lifecycle.dropHibernated(id, by)) return;
    if (record.status !== "running" && record.status !== "paused") return;
    await this.end(id, { reason: "killed", by });
  }

  setTimeout(tenantId: string, id: string, timeoutS: number): SandboxRecord {
    this.box(tenantId, id);
    const live = this.live.get(id) as Live;
    live.record.timeoutAt = new Date(Date.now() + timeoutS * 1000).toISOString();
    live.lifeS = timeoutS;
    this.store.setTimeout(id, live.record.timeoutAt);
    this.deadlines.set(id, Date.parse(live.record.timeoutAt));
    this.events.emit({
      type: "timeout_extended",
      sandboxId: id,
      tenantId,
      detail: { timeout: timeoutS, timeout_at: live.record.timeoutAt },
    });
    return live.record;
  }

  /** Calls `listener` with the id of every sandbox that ends (killed or expired), e.g. to drop its code contexts. */
  onEnded(listener: (id: string) => void): void {
    this.endedListeners.add(listener);
  }

  /**
   * @internal Ends a live sandbox for `cause`: its status follows from the reason, the reason itself
   * is kept in its `ended` event. (The status shorthands stand for a kill and a timeout.)
   */
  async end(id: string, cause: EndCause | "terminated" | "timed_out"): Promise<void> {
    const live = this.dropLive(id);
    if (!live) return;
    this.lifecycle.rememberOnTimeout(id, live.onTimeout, true);
    this.recordEnd(live.record, typeof cause === "string" ? { reason: cause === "timed_out" ? "timed_out" : "killed" } : cause);
    // The caller gets its answer once the processes are killed; unmounting and removing the cgroup
    // go on in the background (a crash midway leaves them to the start-up sweep).
    await live.box.stop().catch((err) => this.log.error({ err, sandbox_id: id }, "sandbox kill failed"));
    this.track(this.release(live.box, true).finally(() => this.fillPool()));
  }

  /** @internal Marks a record ended (in memory and in the store) and announces its `ended` event. */
  recordEnd(record: SandboxRecord, cause: EndCause, at = new Date().toISOString()): void {
    record.status = endStatus(cause.reason);
    record.endedAt = at;
    this.store.end(record.id, record.status, at);
    this.events.emit({ type: "ended", sandboxId: record.id, tenantId: record.tenantId, at, ...cause });
  }

  /** @internal Keeps a background cleanup until it is done (close() waits for them). */
  track(teardown: Promise<void>): void {
    const tracked = teardown.finally(() => this.teardowns.delete(tracked));
    this.teardowns.add(tracked);
  }

  /**
   * Removes a sandbox (processes, cgroup, workspace). A few at a time: each forks umount and
   * waits on the kernel, and a burst of kills must not take the thread pool and CPU that
   * requests need.
   */
  /** @internal `keepUid`: the uid stays reserved (a hibernated sandbox starts again with it). */
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

  private async reap(): Promise<void> {
    const now = Date.now();
    for (const [id, live] of this.live) {
      // A paused sandbox's life clock is stopped; paused too long, its files go to a snapshot.
      if (live.record.status === "paused") {
        if (live.hibernateAt !== undefined && now >= live.hibernateAt) this.lifecycle.hibernate(live);
        continue;
      }
      if (Date.parse(live.record.timeoutAt) > now) continue;
      if (live.onTimeout !== "kill") {
        this.lifecycle.onTimeout(live);
        continue;
      }
      // Not awaited: sandboxes due together end together, each at its deadline.
      void this.end(id, { reason: "timed_out" }).catch((err) => this.log.error({ err, sandbox_id: id }, "reaper failed"));
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
    this.deadlines.close();
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(new ApiError("at_capacity", "The service is shutting down", 5));
    }
    while (this.warming > 0) await new Promise((r) => setTimeout(r, 10));
    await Promise.all(this.warm.splice(0).map((box) => this.release(box)));
    if (opts.destroyAll) {
      await Promise.all([...this.live.keys()].map((id) => this.end(id, { reason: "killed", by: "operator", detail: { shutdown: true } })));
      await Promise.all([...this.teardowns]);
      await this.cgroups.removeEmpty().catch(() => {});
      await this.spawner.close();
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
    await this.cgroups.removeEmpty().catch(() => {});
    await this.spawner.close();
  }
}
