// The sandbox service's façade: composes the rooms (host, registry, warm pool, lifecycle and its
// snapshot keeper) and gives the rest of the code one object. It owns what spans rooms: a create
// (from the pool into the registry), tenant quotas, the reaper's tick, start-up recovery (re-adopt
// what is still alive in the records, sweep every workspace and cgroup no record owns), shutdown.
import crypto from "node:crypto";
import os from "node:os";
import type { Logger } from "pino";
import { type SandboxConfig, tenantQuotaDefaults } from "./settings.js";
import { ApiError } from "../errors.js";
import { type EndedBy, LifecycleBus } from "../events/bus.js";
import type { StorageQuota } from "../files/quota.js";
import type { FileStorage } from "../files/storage.js";
import type { ListFilter, SandboxRecord, SandboxStore } from "./store/sandboxes.js";
import type { SnapshotStore } from "./store/snapshots.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import { type EffectiveQuotas, effectiveQuotas } from "../tenancy/store/tenants.js";
import type { Box } from "./box.js";
import type { TenantLimits } from "./cgroup.js";
import type { CreateInput, CustomTemplate, EndCause, SandboxHost, ServiceState, TemplateCatalog } from "./doors.js";
import { Host } from "./host.js";
import { Lifecycle } from "./lifecycle.js";
import { NO_SANDBOXES_HERE, NoHost } from "./no-host.js";
import { Registry, tenantQuotaExceeded } from "./registry.js";
import { SnapshotKeeper } from "./snapshot-keeper.js";
import { builtInTemplates, type Template } from "./templates.js";
import { TemplatePools } from "./template-pools.js";
import { Pool } from "./warm-pool.js";

export type { CreateInput, CustomTemplate, EndCause, Live, OnTimeout, TemplateCatalog } from "./doors.js";

export class SandboxManager {
  readonly templates: Template[];
  /** Lifecycle events of every sandbox (created, paused, ..., ended with a reason). */
  readonly events = new LifecycleBus();
  /** Pause, resume, snapshots, forks, ends and what a sandbox does when its life runs out. */
  readonly lifecycle: Lifecycle;
  private readonly state: ServiceState = { closing: false, lowMemory: false };
  private readonly host: SandboxHost;
  private readonly registry: Registry;
  private readonly pool: Pool;
  /** Warm pools of the tenants' own templates. */
  private readonly templatePools: TemplatePools;
  private readonly keeper: SnapshotKeeper;
  private readonly quotaDefaults: EffectiveQuotas;
  private readonly log: Logger;
  private reaper: NodeJS.Timeout | undefined;
  /** In a cluster: a tenant's max_sandboxes counts its running sandboxes on every node (see countQuotasOverCluster). */
  private quotaOverCluster = false;
  /** useTemplates() was called: unknown template names are asked of the catalogue. */
  private catalogSet = false;
  /** Refills the pool (after a create's reply is written). */
  private readonly refill = () => this.pool.fill();
  private readonly refillTemplates = () => this.templatePools.fill();

  constructor(
    private readonly config: SandboxConfig,
    readonly store: SandboxStore,
    private readonly tenants: TenantDirectory,
    log: Logger,
    snapshots: SnapshotStore,
    /** Tenants' stored bytes (stored files and snapshots together): snapshots are held to it. */
    private readonly storage: StorageQuota,
    /**
     * False on a cluster's API-only node: no host is opened (no spawner, cgroup, workspace or warm
     * pool), creates are refused, and the records are still read and written (ends of lost nodes' sandboxes).
     */
    readonly runsSandboxes = true,
    /** The object store of snapshot archives every node shares, if any (see SnapshotKeeper). */
    archives?: FileStorage,
  ) {
    this.log = log;
    this.templates = builtInTemplates(config.limits);
    this.quotaDefaults = tenantQuotaDefaults(config);
    this.host = runsSandboxes
      ? new Host(
          config,
          log,
          (tenantId) => this.tenantLimits(tenantId),
          (id) =>
            void this.lifecycle.end(id, {
              reason: "oom",
              detail: { message: "the sandbox's processes were killed for exceeding its memory limit" },
            }),
        )
      : new NoHost();
    this.keeper = new SnapshotKeeper(config, snapshots, storage, log, archives);
    this.registry = new Registry(
      store,
      config.maxSandboxes,
      this.state,
      (tenantId) => this.tenantQuotas(tenantId),
      () => void this.lifecycle.reap(),
      config.nodeId,
    );
    // The two kinds of pool share the room the sandbox cap leaves: each counts the other's sandboxes as taken.
    // No warm pool where no sandbox runs.
    const poolConfig = runsSandboxes ? config : { ...config, warmPool: 0, warmPoolMax: 0 };
    this.pool = new Pool(poolConfig, log, this.state, this.host, () => this.registry.occupied() + this.templatePools.held());
    this.templatePools = new TemplatePools(
      config,
      log,
      this.state,
      this.host,
      () => this.registry.occupied() + this.pool.held(),
      // Ahead of the create: the template's environment and its saved files (a round trip to the
      // sandbox each, which a create from the pool then does not wait for).
      async (box, custom) => {
        if (Object.keys(custom.envVars).length) await box.setEnv(custom.envVars);
        if (custom.home) await this.keeper.files.restore(box, custom.home.file, custom.home.sha256);
      },
    );
    this.lifecycle = new Lifecycle({
      config,
      log,
      events: this.events,
      store,
      snapshots,
      keeper: this.keeper,
      registry: this.registry,
      host: this.host,
      pool: this.pool,
      creates: this,
    });
  }

  /** The tenant's quotas now: its own where the operator set them, the configured defaults elsewhere. */
  tenantQuotas(tenantId: string): EffectiveQuotas {
    return effectiveQuotas(this.tenants.get(tenantId).quotas, this.quotaDefaults);
  }

  private tenantLimits(tenantId: string): TenantLimits {
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
      await this.host.applyTenantLimits(tenantId, limits);
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
    await this.host.listening;
    await this.keeper.sweep();
    const now = Date.now();
    const adopt: SandboxRecord[] = [];
    for (const record of await this.store.listRunning()) {
      this.host.reserveUid(record.hostUid);
      // Paused past the operator's limit: its files are in a snapshot and it waits for a resume.
      if (await this.lifecycle.adoptHibernated(record)) continue;
      if (Date.parse(record.timeoutAt) <= now)
        await this.lifecycle.recordEnd(record, { reason: "timed_out", detail: { while_down: true } }, record.timeoutAt);
      else adopt.push(record);
    }
    // Several at a time: a restart with hundreds of live sandboxes must not take minutes.
    const workers = Array.from({ length: Math.min(adopt.length, Math.max(4, os.availableParallelism() * 4)) }, async () => {
      for (let record = adopt.shift(); record; record = adopt.shift()) {
        let box: Box | undefined;
        try {
          const custom = await this.host.templateOf(record);
          // Kept running by the sandbox host through a restart of the API process: taken over as it
          // is (already in its tenant's group, its environment set). Else started again from its files.
          box = await this.host.adopt(record.id, record.hostUid, record.tenantId, custom);
          if (box) this.log.info({ sandbox_id: record.id }, "took over the running sandbox from the sandbox host");
          else {
            box = await this.host.start(record.id, record.hostUid, custom);
            await this.host.assign(box, record.tenantId);
            if (Object.keys(record.envVars).length) await box.setEnv(record.envVars);
          }
          this.registry.join(record, box, this.lifeOf(record), await this.lifecycle.onTimeoutOf(record.id));
          // Started again from its files: running, also if it was paused when the service stopped
          // (a failed write only leaves other nodes' lists saying paused; the sandbox runs).
          await this.store
            .setPaused(record.id, false)
            .catch((err) => this.log.warn({ err, sandbox_id: record.id }, "re-adopted sandbox still marked paused"));
          this.log.info({ sandbox_id: record.id }, "re-adopted sandbox after restart");
        } catch (err) {
          this.log.error({ err, sandbox_id: record.id }, "could not re-adopt sandbox; ending it");
          if (box) await box.destroy().catch(() => {});
          await this.lifecycle.recordEnd(record, {
            reason: "host_restart",
            detail: { message: String((err as Error)?.message ?? err).slice(0, 500) },
          });
        }
      }
    });
    await Promise.all(workers);
    // The earlier API process's warm pool, and anything else the sandbox host kept that no record claims.
    await this.host.releaseUnadopted();
    await this.host.sweep([...this.registry.all()]);
    this.reaper = setInterval(() => this.tick(), this.config.reaperIntervalMs);
    this.reaper.unref();
    if (!this.runsSandboxes) return;
    this.pool.fill();
    // The first round of starts before the service takes requests, so that its first creates are
    // served from the pool (bounded: a slow host starts serving within 5 s, and a create that
    // comes before the pool is filled waits for a start). Not after a crash of the API process:
    // its clients' sandboxes are taken over already, and their next requests come first.
    if (this.host.reattached) return;
    await this.pool.warmUp(Math.min(this.config.warmPool, this.config.maxParallelStarts), 5000);
  }

  /** The life a record was given, from its start and deadline (for sandboxes re-adopted after a restart). */
  private lifeOf(record: SandboxRecord): number {
    return Math.max(1, Math.round((Date.parse(record.timeoutAt) - Date.parse(record.startedAt)) / 1000));
  }

  /**
   * Every second: expired sandboxes end; pool sandboxes pre-import once creates are quiet; the
   * host's free memory is checked; a pool larger than recent demand gives one sandbox back.
   */
  private tick(): void {
    void this.lifecycle.reap();
    this.pool.preImport();
    this.state.lowMemory = this.host.lowOnMemory();
    this.pool.trim();
    this.templatePools.trim();
  }

  liveCount(): number {
    return this.registry.size;
  }

  /** The live (running or paused) sandboxes of this service, with their tenants. */
  liveSandboxes(): { id: string; tenantId: string }[] {
    return [...this.registry.all()].map(({ record }) => ({ id: record.id, tenantId: record.tenantId }));
  }

  /**
   * Records the end of a sandbox that another node ran and lost (cluster mode): its record says
   * ended with `cause` and its `ended` event is announced here. False if it had already ended.
   * A hibernated one whose snapshot is in the shared store keeps that snapshot, and the event's
   * `snapshot_id` names it: a new sandbox started from it on any node has its files.
   */
  async endElsewhere(id: string, cause: EndCause, owner?: string): Promise<boolean> {
    const record = await this.store.get(id);
    if (!record || (record.status !== "running" && record.status !== "paused")) return false;
    // Taken over by another node meanwhile (a hibernated one, see takeOverHibernated): not ended.
    if (owner !== undefined && record.nodeId !== owner) return false;
    const snapshot = await this.lifecycle.sharedHibernation(id);
    await this.lifecycle.recordEnd(record, snapshot ? { ...cause, detail: { ...cause.detail, snapshot_id: snapshot } } : cause);
    return true;
  }

  /**
   * Takes over a hibernated sandbox of another node, lost or draining (cluster mode, on an
   * executor): its files are in a snapshot in the shared store, so it waits here for its resume
   * under its own id, as if it had hibernated here. False (the caller ends it) when it is not hibernated, its snapshot is not in
   * the shared store, it is of a tenant's own template (whose root is on the lost node's disk), or
   * another node took it first.
   */
  async takeOverHibernated(id: string, lostNode: string): Promise<boolean> {
    if (!this.runsSandboxes || lostNode === this.config.nodeId) return false;
    const record = await this.store.get(id);
    if (!record || record.nodeId !== lostNode || (record.status !== "running" && record.status !== "paused")) return false;
    if (!this.templates.some((t) => t.id === record.template)) return false;
    if ((await this.lifecycle.sharedHibernation(id)) === undefined) return false;
    // The lost node's uid means nothing here: one of this node's, written with the take-over.
    const uid = this.host.allocateUid();
    if (!(await this.store.takeOver(id, lostNode, uid))) {
      this.host.freeUid(uid);
      return false;
    }
    const taken = await this.lifecycle.adoptHibernated({ ...record, hostUid: uid, nodeId: this.config.nodeId });
    if (!taken) this.host.freeUid(uid);
    return taken;
  }

  /**
   * What a drain may move to another node (cluster mode): live and hibernated sandboxes of built-in
   * templates (a tenant's own template's root is on this node's disk), when snapshots are in the
   * store every node shares; none otherwise. `status`: running, paused (frozen) or hibernated.
   */
  movable(): { id: string; tenantId: string; status: "running" | "paused" | "hibernated" }[] {
    if (!this.lifecycle.sharesArchives) return [];
    const builtIn = (template: string) => this.templates.some((t) => t.id === template);
    const out: ReturnType<SandboxManager["movable"]> = [];
    for (const { record } of this.registry.all())
      if (builtIn(record.template) && (record.status === "running" || record.status === "paused"))
        out.push({ id: record.id, tenantId: record.tenantId, status: record.status });
    for (const { record, resuming } of this.registry.allHibernated())
      if (!resuming && builtIn(record.template)) out.push({ id: record.id, tenantId: record.tenantId, status: "hibernated" });
    return out;
  }

  /** Hibernated sandboxes waiting here for their resume. */
  hibernatedCount(): number {
    let n = 0;
    for (const _ of this.registry.allHibernated()) n++;
    return n;
  }

  /**
   * Takes over a sandbox another node hibernated to hand it here (its drain): as a lost node's
   * hibernated sandbox is taken over, after checking that this node has room for it (503
   * at_capacity, 429 quota_exceeded otherwise). `wake`: it was running, so it is started again here
   * at once (kernel state lost; its `resumed` event says `drain`); else it waits for its resume.
   * False when it is not `from`'s hibernated sandbox (another node took it, or it ended).
   */
  async adoptMoved(id: string, from: string, wake: boolean): Promise<boolean> {
    const record = await this.store.get(id);
    if (!record) return false;
    this.registry.checkRoom(record.tenantId, 1);
    if (!(await this.takeOverHibernated(id, from))) return false;
    if (wake)
      await this.lifecycle
        .resume(record.tenantId, id, "drain")
        .catch((err) => this.log.error({ err, sandbox_id: id }, "a sandbox moved here could not be started; it stays paused"));
    return true;
  }

  /** Live sandboxes per tenant (tenants with none are absent). */
  liveByTenantCounts(): ReadonlyMap<string, number> {
    return this.registry.byTenant();
  }

  /**
   * Moves a sandbox handed to a tenant into the tenant's group. Not awaited by the create: moving
   * processes between cgroups waits for an RCU grace period (10–30 ms on a busy host), more than a
   * create from the pool may take. Until it is done the sandbox is held by its own limits; anything
   * it forks meanwhile is moved too (or killed), so from then on the tenant's limits hold. A
   * sandbox that cannot be moved is ended rather than left outside its tenant's limits.
   */
  private joinTenant(record: SandboxRecord, box: Box, limits: TenantLimits): void {
    this.host.assign(box, record.tenantId, limits).catch((err) => {
      this.log.error({ err, sandbox_id: record.id }, "could not move the sandbox into its tenant's cgroup; ending it");
      void this.lifecycle.end(record.id, { reason: "error", detail: { message: "could not join the tenant's cgroup" } });
    });
  }

  /** Lets sandboxes start from tenants' own templates (src/templates/); before init(), so re-adoption finds them. */
  useTemplates(catalog: TemplateCatalog): void {
    this.catalogSet = true;
    this.host.useTemplates(
      this.templates.map((t) => t.id),
      catalog,
    );
  }

  /** Live (or paused) sandboxes started from a template: a template in use cannot be deleted. */
  sandboxesOfTemplate(templateId: string): number {
    let n = 0;
    for (const { record } of this.registry.all()) if (record.template === templateId) n++;
    return n;
  }

  /**
   * A sandbox for one template build (src/templates/steps.ts), outside every tenant's count: no
   * record, no pool. `prepare` gets the sandbox's host uid first (the build's root must be its own)
   * and says what to start; release() ends the sandbox and frees the uid.
   */
  async buildBox(prepare: (uid: number) => Promise<CustomTemplate>): Promise<{ box: Box; release(): Promise<void> }> {
    if (this.state.closing) throw new ApiError("at_capacity", "The service is shutting down", 5);
    const uid = this.host.allocateUid();
    let box: Box;
    try {
      box = await this.host.start(crypto.randomUUID(), uid, await prepare(uid));
    } catch (err) {
      this.host.freeUid(uid);
      throw err;
    }
    return { box, release: () => this.host.release(box) };
  }

  /**
   * A sandbox of a custom template: from its warm pool, or started now (a cold create), with a uid
   * of its own that is given back if the start fails.
   */
  private async takeCustom(custom: CustomTemplate): Promise<Box> {
    try {
      return await this.templatePools.take(custom);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      this.log.error({ err, template: custom.id }, "sandbox of a custom template failed to start");
      throw new ApiError(
        "internal_error",
        `A sandbox of template '${custom.id}' could not be started: ${String((err as Error)?.message ?? err).slice(0, 300)}`,
      );
    }
  }

  /** Gives back the warm sandboxes of a template (it is being deleted; none is handed out after). */
  dropTemplatePool(templateId: string): Promise<void> {
    return this.templatePools.drop(templateId);
  }

  /** Started sandboxes waiting in a custom template's warm pool now. */
  templatePoolSize(templateId: string): number {
    return this.templatePools.size(templateId);
  }

  /**
   * A node of a cluster: a create counts the tenant's running sandboxes on every node, from the
   * shared records, not only this node's. The records are the truth (a lost node's sandboxes end
   * there), so no count drifts and none needs Redis; the record's insert is refused, atomically
   * against every node's inserts, when the tenant's quota is full.
   */
  countQuotasOverCluster(): void {
    this.quotaOverCluster = true;
    // Stored files and snapshots: what other nodes store counts too (src/files/quota.ts).
    this.storage.countOverCluster();
  }

  async create(tenantId: string, given: CreateInput): Promise<SandboxRecord> {
    if (!this.runsSandboxes) throw new ApiError("at_capacity", NO_SANDBOXES_HERE, 5);
    this.pool.asked();
    const input = given.snapshotId === undefined ? given : await this.lifecycle.fromSnapshot(tenantId, given.snapshotId, given);
    const asked = input.template ?? "python-base-v1";
    if (!this.templates.some((t) => t.id === asked) && this.catalogSet === false)
      throw new ApiError("template_not_found", `Template '${asked}' does not exist`);
    // A tenant's own template: from its own warm pool, on its own root, see takeCustom().
    const custom = await this.host.templateOf({ tenantId, template: asked });
    const template = custom?.id ?? asked;
    const envVars = custom && Object.keys(custom.envVars).length ? { ...custom.envVars, ...input.envVars } : input.envVars;
    const quota = this.registry.checkRoom(tenantId, 1);
    const timeoutS = input.timeoutS ?? this.config.defaultSandboxTimeoutS;
    this.registry.reserve(tenantId);
    let box: Box | undefined;
    try {
      // Refused before a sandbox is taken when the tenant's records on every node fill its quota already.
      if (this.quotaOverCluster && (await this.store.countRunning(tenantId)) >= quota.maxSandboxes)
        throw tenantQuotaExceeded(quota.maxSandboxes, 1);
      if (custom) {
        box = await this.takeCustom(custom);
        this.templatePools.served(custom.id);
        setImmediate(this.refillTemplates);
      } else {
        box = await this.pool.take(tenantId);
        this.pool.served();
        // After the reply is written: starting a sandbox forks processes, which would delay it.
        setImmediate(this.refill);
      }
      // A template's own environment is set already (see the template pools' preparation above).
      const envToSet = custom ? input.envVars : envVars;
      if (envVars && envToSet && Object.keys(envToSet).length) await box.setEnv(envVars);
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
        nodeId: this.config.nodeId,
      };
      // Written before the sandbox is live (on the create's path, as it always was): a sandbox
      // the service runs always has its record, so a restart re-adopts or ends it.
      if (!this.quotaOverCluster) await this.store.insert(record);
      // Creates on other nodes may have filled the quota since the count above: the insert decides.
      else if (!(await this.store.insertWithin(record, quota.maxSandboxes))) throw tenantQuotaExceeded(quota.maxSandboxes, 1);
      await this.lifecycle.rememberOnTimeout(record.id, input.onTimeout);
      this.registry.join(record, box, timeoutS, input.onTimeout ?? "kill");
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
          await this.lifecycle.end(record.id, {
            reason: "error",
            detail: { message: String((err as Error)?.message ?? err).slice(0, 500) },
          });
          throw err;
        });
      }
      return record;
    } catch (err) {
      if (box) this.host.track(this.host.release(box));
      throw err;
    } finally {
      this.registry.unreserve(tenantId);
    }
  }

  /** The caller's sandbox record, live or ended; another tenant's sandbox does not exist for them. */
  get(tenantId: string, id: string): Promise<SandboxRecord> {
    return this.registry.record(tenantId, id);
  }

  /**
   * The caller's sandbox if it is running or paused (live, or hibernated waiting for a resume),
   * from memory: no read of the records (an ended or unknown one is undefined).
   */
  liveRecord(tenantId: string, id: string): SandboxRecord | undefined {
    return this.registry.current(tenantId, id);
  }

  /**
   * A running sandbox of the caller's, to run something in. The hot path: a live sandbox is found
   * in memory; the records are read only to say why another is not there.
   */
  async box(tenantId: string, id: string): Promise<Box> {
    return this.registry.liveBox(tenantId, id) ?? (await this.registry.notLive(tenantId, id));
  }

  list(tenantId: string, limit: number, offset: number, filter: ListFilter = {}) {
    return this.registry.list(tenantId, limit, offset, filter);
  }

  /** Ends the caller's sandbox; `by`: an API call of the tenant's, or the operator. */
  kill(tenantId: string, id: string, by: EndedBy = "api"): Promise<void> {
    return this.lifecycle.kill(tenantId, id, by);
  }

  setTimeout(tenantId: string, id: string, timeoutS: number): Promise<SandboxRecord> {
    return this.lifecycle.setTimeout(tenantId, id, timeoutS);
  }

  /** Calls `listener` with the id of every sandbox that ends (killed or expired), e.g. to drop its code contexts. */
  onEnded(listener: (id: string) => void): void {
    this.registry.onLeave(listener);
  }

  /** Ends a live sandbox for `cause` (see Lifecycle.end). */
  end(id: string, cause: EndCause | "terminated" | "timed_out"): Promise<void> {
    return this.lifecycle.end(id, cause);
  }

  /**
   * Stops the reaper and the pool. Live sandboxes keep their records and workspaces so that the
   * next start re-adopts them; their processes are killed and their cgroups removed now (re-adoption
   * makes new ones), so a stopped service leaves nothing running and no group behind even if it is
   * never started again on this data dir.
   */
  async close(opts: { destroyAll?: boolean } = {}): Promise<void> {
    this.state.closing = true;
    if (this.reaper) clearInterval(this.reaper);
    this.registry.close();
    await this.pool.close();
    await this.templatePools.close();
    if (opts.destroyAll) {
      const ids = [...this.registry.all()].map(({ record }) => record.id);
      await Promise.all(ids.map((id) => this.lifecycle.end(id, { reason: "killed", by: "operator", detail: { shutdown: true } })));
      await this.host.settled();
      await this.host.close();
      return;
    }
    // Sandboxes that ended before the stop: finish cleaning up after them.
    await this.host.settled();
    await Promise.all(
      [...this.registry.all()].map(async ({ box }) => {
        box.ended = true;
        await box.cgroup.destroy().catch((err) => this.log.error({ err, sandbox_id: box.spec.name }, "shutdown: cgroup"));
      }),
    );
    await this.host.close();
  }
}
