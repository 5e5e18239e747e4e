// Every transition of a sandbox after its create: pause, resume, snapshots and forks, its end
// (killed, timed out, out of memory) and the reaper that finds the expired, what a sandbox does
// when its life runs out (on_timeout), and what happens when it stays paused past the operator's
// limit (its files go into a snapshot, its processes end, and a resume starts it again from that
// snapshot: "hibernated"). The sandboxes it works on are the registry's (./registry.ts), the
// snapshots it writes are kept by ./snapshot-keeper.ts.
//
// Kernel state: a pause freezes every process with the cgroup freezer, so a resume continues with
// memory and kernels as they were ("preserved"); anything started from a snapshot (a create with
// snapshot_id, a fork, the resume of a hibernated sandbox) gets the files only ("lost").
import crypto from "node:crypto";
import type { Logger } from "pino";
import { Limiter } from "../common/limiter.js";
import type { SandboxConfig } from "./settings.js";
import { ApiError, invalid } from "../errors.js";
import type { EndedBy, LifecycleBus } from "../events/bus.js";
import { endStatus, type SandboxRecord, type SandboxStore } from "./store/sandboxes.js";
import type { SnapshotKind, SnapshotRecord, SnapshotStore } from "./store/snapshots.js";
import type { Box } from "./box.js";
import { FreezeTimeout } from "./cgroup.js";
import type {
  CreateDoor,
  CreateInput,
  EndCause,
  Hibernated,
  HostDoor,
  KernelState,
  Live,
  OnTimeout,
  PoolDoor,
  RegistryDoor,
} from "./doors.js";
import type { SnapshotKeeper } from "./snapshot-keeper.js";

/** A sandbox's network policy, as the network area keeps it: captured into snapshots, applied to copies. */
export interface NetworkSettings {
  capture(tenantId: string, sandboxId: string): unknown;
  apply(tenantId: string, sandboxId: string, policy: unknown): Promise<void>;
}

export type LifecycleConfig = Pick<SandboxConfig, "pausedMaxS" | "maxForkCount" | "startQueue">;

/** What Lifecycle is given: its settings and stores, and the doors of the rooms it works with. */
export interface LifecycleRooms {
  config: LifecycleConfig;
  log: Logger;
  /** Where its transitions are announced (paused, resumed, snapshotted, ended ...). */
  events: LifecycleBus;
  store: SandboxStore;
  /** Where a sandbox's on_timeout and its hibernation snapshot are found again after a restart. */
  snapshots: SnapshotStore;
  /** The snapshots' archives, records, cap and storage quota. */
  keeper: SnapshotKeeper;
  registry: RegistryDoor;
  host: HostDoor;
  /** Told when an end frees room for the warm pool. */
  pool: PoolDoor;
  /** Forks make their copies through the service's own create. */
  creates: CreateDoor;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** What an event tells the tenant of a failed automatic snapshot: an API error as it is, anything else only as failed. */
const failure = (err: unknown) =>
  err instanceof ApiError ? { code: err.code, message: err.message } : { code: "internal_error", message: "The snapshot failed" };

export class Lifecycle {
  private network: NetworkSettings | undefined;
  private readonly config: LifecycleConfig;
  private readonly log: Logger;
  private readonly events: LifecycleBus;
  private readonly store: SandboxStore;
  private readonly snapshots: SnapshotStore;
  private readonly keeper: SnapshotKeeper;
  private readonly registry: RegistryDoor;
  private readonly host: HostDoor;
  private readonly pool: PoolDoor;
  private readonly creates: CreateDoor;

  constructor(rooms: LifecycleRooms) {
    this.config = rooms.config;
    this.log = rooms.log;
    this.events = rooms.events;
    this.store = rooms.store;
    this.snapshots = rooms.snapshots;
    this.keeper = rooms.keeper;
    this.registry = rooms.registry;
    this.host = rooms.host;
    this.pool = rooms.pool;
    this.creates = rooms.creates;
  }

  /** Lets snapshots and copies carry the sandbox's network policy. */
  useNetwork(network: NetworkSettings): void {
    this.network = network;
  }

  /** Applies a captured network policy to a new or restarted sandbox (nothing when none was captured). */
  private async applyNetwork(record: SandboxRecord, policy: unknown): Promise<void> {
    if (this.network && policy !== undefined && policy !== null) await this.network.apply(record.tenantId, record.id, policy);
  }

  /** Announces a pause, resume or snapshot on the sandbox's event bus (`reason`: who or what caused it). */
  private emit(
    type: "paused" | "resumed" | "snapshotted",
    record: SandboxRecord,
    reason: string,
    detail: Record<string, unknown> = {},
  ): void {
    this.events.emit({ type, sandboxId: record.id, tenantId: record.tenantId, detail: { reason, ...detail } });
  }

  /** The caller's live sandbox (running or paused); found in memory, the records are read only to refuse. */
  private async liveOf(tenantId: string, id: string): Promise<Live> {
    const live = this.registry.get(id);
    if (live && live.record.tenantId === tenantId) return live;
    const record = await this.registry.record(tenantId, id);
    throw new ApiError("invalid_state", `Sandbox '${id}' is ${record.status}; create a new one`);
  }

  private hibernatedOf(tenantId: string, id: string): Hibernated | undefined {
    const h = this.registry.hibernated(id);
    return h && h.record.tenantId === tenantId ? h : undefined;
  }

  /** Lifecycle operations on one sandbox run one after another; each re-checks that the sandbox is still live. */
  private serial<T>(live: Live, task: () => Promise<T>): Promise<T> {
    const run = async () => {
      if (this.registry.get(live.record.id) !== live) {
        throw new ApiError("invalid_state", `Sandbox '${live.record.id}' is ${live.record.status}; create a new one`);
      }
      return task();
    };
    const next = (live.op ?? Promise.resolve()).then(run, run);
    const tail = next.catch(() => {});
    live.op = tail;
    tail.then(() => {
      if (live.op === tail) live.op = undefined;
    });
    return next;
  }

  // ---- pause and resume ----

  async pause(tenantId: string, id: string): Promise<SandboxRecord> {
    const h = this.hibernatedOf(tenantId, id);
    if (h) return h.record;
    const live = await this.liveOf(tenantId, id);
    return this.serial(live, () => this.pauseNow(live, false));
  }

  private async pauseNow(live: Live, byTimeout: boolean): Promise<SandboxRecord> {
    if (live.record.status === "paused") return live.record;
    const busy = () => new ApiError("conflict", "A run or command is in progress in the sandbox; pause it once it is done");
    if (live.box.busy) throw busy();
    // Paused for new requests first (they are refused from now on), then one more look for one
    // that got past that check a moment ago: frozen mid-run, it would outlive its backstop.
    live.record.status = "paused";
    await new Promise((r) => setImmediate(r));
    try {
      if (live.box.busy) throw busy();
      await live.box.pause();
    } catch (err) {
      live.record.status = "running";
      throw this.pauseRefusal(live, err);
    }
    live.pausedAt = Date.now();
    live.hibernateAt = live.pausedAt + this.config.pausedMaxS * 1000;
    live.pausedByTimeout = byTimeout;
    live.record.status = "paused";
    this.emit("paused", live.record, byTimeout ? "timeout" : "api");
    // Only this node has it in memory: the records say so for a list through any other node. It is
    // paused whatever that write does (a failure only leaves other nodes' lists saying running).
    await this.store
      .setPaused(live.record.id, true)
      .catch((err) => this.log.warn({ err, sandbox_id: live.record.id }, "paused sandbox not marked paused in the records"));
    return live.record;
  }

  /**
   * What a pause that failed answers: a busy host is a 503 to retry, a sandbox ended meanwhile (its
   * move into its tenant's group failed, say) is refused as ended; only the unexplained is a 500.
   */
  private pauseRefusal(live: Live, err: unknown): ApiError {
    if (err instanceof ApiError) return err;
    if (this.registry.get(live.record.id) !== live) {
      return new ApiError("invalid_state", `Sandbox '${live.record.id}' ended while it was being paused; create a new one`);
    }
    if (err instanceof FreezeTimeout) {
      return new ApiError("sandbox_unresponsive", `The sandbox could not be paused in time (${err.message}); it is running, retry`, 5);
    }
    this.log.error({ err, sandbox_id: live.record.id }, "pause failed");
    return new ApiError("internal_error", `The sandbox could not be paused: ${message(err)}`);
  }

  /**
   * Thaws a paused sandbox (kernel state preserved) or starts a hibernated one from its snapshot
   * (lost). `reason`: who asked, as its `resumed` event says (`drain`: a sandbox moved here by a drain).
   */
  async resume(tenantId: string, id: string, reason = "api"): Promise<{ record: SandboxRecord; kernelState: KernelState }> {
    const h = this.hibernatedOf(tenantId, id);
    if (h) return this.wake(h, reason);
    const live = await this.liveOf(tenantId, id);
    return this.serial(live, async () => {
      if (live.record.status !== "paused") return { record: live.record, kernelState: "preserved" as const };
      try {
        await live.box.resume();
      } catch (err) {
        throw new ApiError("internal_error", `The sandbox could not be resumed: ${message(err)}`);
      }
      // Running again in memory at once; the new deadline is written to the records meanwhile.
      const saved = this.restartClock(live.record, live.lifeS, live.pausedAt ?? Date.now(), live.pausedByTimeout === true);
      live.pausedAt = undefined;
      live.pausedByTimeout = undefined;
      live.record.status = "running";
      this.emit("resumed", live.record, reason, { kernel_state: "preserved" });
      await Promise.all([saved, this.store.setPaused(live.record.id, false)]);
      return { record: live.record, kernelState: "preserved" as const };
    });
  }

  /**
   * The life clock stops while a sandbox is paused: its deadline moves on by the time it was
   * paused. One paused by its own timeout had no life left: it gets its whole life again. The
   * record in memory and the deadline change at once; the promise is the write to the records.
   */
  private async restartClock(record: SandboxRecord, lifeS: number, pausedAt: number, byTimeout: boolean): Promise<void> {
    const now = Date.now();
    const at = byTimeout ? now + lifeS * 1000 : Date.parse(record.timeoutAt) + (now - pausedAt);
    record.timeoutAt = new Date(at).toISOString();
    this.registry.setDeadline(record.id, at);
    await this.store.setTimeout(record.id, record.timeoutAt);
  }

  /** A running sandbox of the caller's gets `timeoutS` seconds of life from now. */
  async setTimeout(tenantId: string, id: string, timeoutS: number): Promise<SandboxRecord> {
    if (!this.registry.liveBox(tenantId, id)) await this.registry.notLive(tenantId, id);
    const live = this.registry.get(id) as Live;
    live.record.timeoutAt = new Date(Date.now() + timeoutS * 1000).toISOString();
    live.lifeS = timeoutS;
    this.registry.setDeadline(id, Date.parse(live.record.timeoutAt));
    await this.store.setTimeout(id, live.record.timeoutAt);
    this.events.emit({
      type: "timeout_extended",
      sandboxId: id,
      tenantId,
      detail: { timeout: timeoutS, timeout_at: live.record.timeoutAt },
    });
    return live.record;
  }

  // ---- ends ----

  /** Ends the caller's sandbox; `by`: an API call of the tenant's, or the operator. */
  async kill(tenantId: string, id: string, by: EndedBy = "api"): Promise<void> {
    const record = await this.registry.record(tenantId, id);
    if (await this.dropHibernated(id, by)) return;
    if (record.status !== "running" && record.status !== "paused") return;
    await this.end(id, { reason: "killed", by });
  }

  /**
   * Ends a live sandbox for `cause`: its status follows from the reason, the reason itself is kept
   * in its `ended` event. (The status shorthands stand for a kill and a timeout.)
   */
  async end(id: string, cause: EndCause | "terminated" | "timed_out"): Promise<void> {
    const live = this.registry.leave(id);
    if (!live) return;
    await this.rememberOnTimeout(id, live.onTimeout, true);
    await this.recordEnd(live.record, typeof cause === "string" ? { reason: cause === "timed_out" ? "timed_out" : "killed" } : cause);
    // The caller gets its answer once the processes are killed; unmounting and removing the cgroup
    // go on in the background (a crash midway leaves them to the start-up sweep).
    await live.box.stop().catch((err) => this.log.error({ err, sandbox_id: id }, "sandbox kill failed"));
    this.host.track(this.host.release(live.box, true).finally(() => this.pool.fill()));
  }

  /**
   * Stops a live sandbox here without recording its end: in a cluster, another node already
   * recorded it (this node lost its lease and its sandboxes were ended as `node_lost`), or took
   * it over (a hibernated one, which is only forgotten here).
   */
  async abandon(id: string): Promise<void> {
    // A hibernated one: forgotten here, its snapshot kept (another node may have taken it over).
    const h = this.registry.hibernated(id);
    if (h && !h.resuming) {
      this.registry.removeHibernated(id);
      void h.released.finally(() => this.host.freeUid(h.record.hostUid));
      return;
    }
    const live = this.registry.leave(id);
    if (!live) return;
    await live.box.stop().catch((err) => this.log.error({ err, sandbox_id: id }, "sandbox stop failed"));
    this.host.track(this.host.release(live.box, true).finally(() => this.pool.fill()));
  }

  /** Marks a record ended (in memory and in the store) and announces its `ended` event. */
  async recordEnd(record: SandboxRecord, cause: EndCause, at = new Date().toISOString()): Promise<void> {
    record.status = endStatus(cause.reason);
    record.endedAt = at;
    await this.store.end(record.id, record.status, at);
    this.events.emit({ type: "ended", sandboxId: record.id, tenantId: record.tenantId, at, ...cause });
  }

  // ---- the reaper's part ----

  /** Ends the expired sandboxes (or pauses or snapshots them, as they asked); hibernates the long-paused. */
  async reap(): Promise<void> {
    const now = Date.now();
    for (const live of this.registry.all()) {
      const id = live.record.id;
      // A paused sandbox's life clock is stopped; paused too long, its files go to a snapshot.
      if (live.record.status === "paused") {
        if (live.hibernateAt !== undefined && now >= live.hibernateAt) this.hibernate(live);
        continue;
      }
      if (Date.parse(live.record.timeoutAt) > now) continue;
      if (live.onTimeout !== "kill") {
        this.onTimeout(live);
        continue;
      }
      // Not awaited: sandboxes due together end together, each at its deadline.
      void this.end(id, { reason: "timed_out" }).catch((err) => this.log.error({ err, sandbox_id: id }, "reaper failed"));
    }
  }

  /** The sandbox's life ran out and it was created with on_timeout pause or snapshot. */
  private onTimeout(live: Live): void {
    if (live.op) return; // an operation is under way; the next tick looks again
    if (live.onTimeout === "pause") {
      // A run in progress would outlive its backstop frozen: the pause waits until it is done.
      if (live.box.busy) return;
      this.serial(live, () => this.pauseNow(live, true)).catch((err) =>
        this.log.error({ err, sandbox_id: live.record.id }, "on_timeout pause failed"),
      );
      return;
    }
    // Its life is over either way: a snapshot that fails (e.g. over the tenant's storage quota)
    // ends it without one, and its `ended` event says why.
    let snapshotError: ReturnType<typeof failure> | undefined;
    this.serial(live, async () => {
      try {
        await this.write(live, "timeout");
      } catch (err) {
        snapshotError = failure(err);
        const log = err instanceof ApiError && err.code === "quota_exceeded" ? "warn" : "error";
        this.log[log]({ err, sandbox_id: live.record.id }, "on_timeout snapshot failed; the sandbox ends without one");
      }
    })
      .catch(() => {})
      .finally(() =>
        this.end(live.record.id, { reason: "timed_out", detail: snapshotError ? { snapshot_error: snapshotError } : undefined }),
      );
  }

  /**
   * Paused longer than the operator allows: its files go into a snapshot and its processes end, so
   * a paused sandbox does not hold memory for ever. A resume starts it again from that snapshot.
   */
  private hibernate(live: Live): void {
    if (live.op) return;
    this.serial(live, async () => {
      if (live.record.status !== "paused") return;
      let snapshot: SnapshotRecord;
      try {
        // A tenant already at its storage quota: refused before the sandbox is thawed for nothing.
        this.keeper.checkStorage(live.record.tenantId, 1);
        await live.box.resume(); // the copy is made by the sandbox's own processes
        snapshot = await this.write(live, "hibernate");
      } catch (err) {
        // It stays paused, frozen with its memory (held to the tenant's memory quota), and
        // resumable as it was; nothing of its files is lost. Its events say why.
        const log = err instanceof ApiError && err.code === "quota_exceeded" ? "warn" : "error";
        this.log[log]({ err, sandbox_id: live.record.id }, "could not snapshot a long-paused sandbox; it stays paused");
        await live.box.pause().catch(() => {});
        // Tried again after another full period, not every tick.
        live.hibernateAt = Date.now() + this.config.pausedMaxS * 1000;
        this.emit("paused", live.record, "hibernate_failed", { error: failure(err), retry_at: new Date(live.hibernateAt).toISOString() });
        return;
      }
      await this.sleep(live, snapshot);
    }).catch((err) => this.log.error({ err, sandbox_id: live.record.id }, "hibernate failed"));
  }

  /** A sandbox whose files are in `snapshot` now: its processes end and it waits for its resume. */
  private async sleep(live: Live, snapshot: SnapshotRecord): Promise<void> {
    this.registry.leave(live.record.id);
    await live.box.stop().catch(() => {});
    const released = this.host.release(live.box, true, true);
    this.host.track(released);
    this.registry.addHibernated({
      record: live.record,
      snapshot,
      lifeS: live.lifeS,
      onTimeout: live.onTimeout,
      pausedAt: live.pausedAt ?? Date.now(),
      pausedByTimeout: live.pausedByTimeout === true,
      released,
    });
  }

  /**
   * Hibernates a live sandbox now, whether running or paused, so that another node can take it
   * over (a cluster's drain, src/cluster/drain.ts). A run or command under way is waited for, up
   * to `graceMs`, and never cut: still busy then, the sandbox is left as it was (`busy`). A running
   * one is paused first (its `paused` event says `drain`; requests for it are refused meanwhile)
   * and, should the snapshot fail, running again (`resumed`, kernel state preserved) before the
   * error is thrown. `absent`: it is neither live nor hibernated here.
   */
  async hibernateNow(id: string, graceMs: number): Promise<"hibernated" | "busy" | "absent"> {
    if (this.registry.hibernated(id)) return "hibernated";
    const live = this.registry.get(id);
    if (!live) return "absent";
    const until = Date.now() + graceMs;
    while (live.box.busy && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    return this.serial(live, () => this.hibernateLive(live)).catch((err) => {
      // Hibernated meanwhile by the reaper (paused past AGENTBOX_PAUSED_MAX_S): as good.
      if (this.registry.hibernated(id)) return "hibernated" as const;
      throw err;
    });
  }

  /** The part of hibernateNow() that runs in the sandbox's turn (serial). */
  private async hibernateLive(live: Live): Promise<"hibernated" | "busy"> {
    const id = live.record.id;
    const wasPaused = live.record.status === "paused";
    if (wasPaused) {
      await live.box.resume(); // the copy is made by the sandbox's own processes
    } else {
      // Paused for new requests first, then one more look for a run that got past that check.
      live.record.status = "paused";
      await new Promise((r) => setImmediate(r));
      if (live.box.busy) {
        live.record.status = "running";
        return "busy" as const;
      }
      live.pausedAt = Date.now();
      live.pausedByTimeout = false;
      this.emit("paused", live.record, "drain");
    }
    let snapshot: SnapshotRecord;
    try {
      snapshot = await this.write(live, "hibernate");
    } catch (err) {
      if (wasPaused) await live.box.pause().catch(() => {});
      else {
        live.record.status = "running";
        live.pausedAt = undefined;
        this.emit("resumed", live.record, "drain", { kernel_state: "preserved" });
      }
      throw err;
    }
    await this.sleep(live, snapshot);
    // Only this node has it in memory: the records say paused until it runs again (elsewhere).
    if (!wasPaused) await this.store.setPaused(id, true);
    return "hibernated" as const;
  }

  /** Starts a hibernated sandbox again under its own id, with its files from its snapshot. */
  private wake(h: Hibernated, reason: string): Promise<{ record: SandboxRecord; kernelState: KernelState }> {
    if (h.resuming) return h.resuming;
    const { record } = h;
    h.resuming = (async () => {
      this.registry.checkRoom(record.tenantId, 1);
      await h.released;
      const box = await this.host.start(record.id, record.hostUid, await this.host.templateOf(record));
      try {
        await this.host.assign(box, record.tenantId);
        if (Object.keys(record.envVars).length) await box.setEnv(record.envVars);
        await this.keeper.restore(box, h.snapshot);
      } catch (err) {
        await this.host.release(box, false, true);
        throw err;
      }
      this.registry.removeHibernated(record.id);
      record.status = "running";
      this.registry.join(record, box, h.lifeS, h.onTimeout);
      await Promise.all([this.restartClock(record, h.lifeS, h.pausedAt, h.pausedByTimeout), this.store.setPaused(record.id, false)]);
      // Its network state went with its processes: set up again from what the snapshot kept.
      await this.applyNetwork(record, h.snapshot.settings.extra?.network).catch((err) =>
        this.log.error({ err, sandbox_id: record.id }, "could not restore the network policy of a resumed sandbox"),
      );
      void this.keeper.remove(h.snapshot);
      this.emit("resumed", record, reason, { kernel_state: "lost", snapshot_id: h.snapshot.id });
      return { record, kernelState: "lost" as const };
    })().finally(() => {
      h.resuming = undefined;
    });
    return h.resuming;
  }

  /**
   * Keeps a sandbox's on_timeout across restarts of the service (written only when it is not the
   * default, so an ordinary create or end costs no write).
   */
  async rememberOnTimeout(id: string, onTimeout: OnTimeout | undefined, ended = false): Promise<void> {
    if (onTimeout === undefined || onTimeout === "kill") return;
    await this.snapshots.setOnTimeout(id, ended ? null : onTimeout);
  }

  /** A re-adopted sandbox's on_timeout. */
  async onTimeoutOf(id: string): Promise<OnTimeout> {
    const v = await this.snapshots.onTimeout(id);
    return v === "pause" || v === "snapshot" ? v : "kill";
  }

  /** At start-up: a sandbox the records call running that was hibernated is kept waiting for its resume. */
  async adoptHibernated(record: SandboxRecord): Promise<boolean> {
    const snapshot = await this.snapshots.hibernated(record.id);
    if (!snapshot) return false;
    const extra = snapshot.settings.extra ?? {};
    this.registry.addHibernated({
      record: { ...record, status: "paused" },
      snapshot,
      lifeS: typeof extra.life_s === "number" ? extra.life_s : 300,
      onTimeout: (extra.on_timeout as OnTimeout | undefined) ?? "kill",
      pausedAt: typeof extra.paused_at === "number" ? extra.paused_at : Date.parse(snapshot.createdAt),
      pausedByTimeout: extra.paused_by_timeout === true,
      released: Promise.resolve(),
    });
    return true;
  }

  /** Whether snapshot archives are in the store every node shares (any node restores any of them). */
  get sharesArchives(): boolean {
    return this.keeper.sharesArchives;
  }

  /**
   * The snapshot a sandbox was hibernated into, if its archive is in the store every node shares
   * (S3): what a sandbox ended with its lost node leaves to be started again from, on any node.
   */
  async sharedHibernation(id: string): Promise<string | undefined> {
    if (!this.keeper.sharesArchives) return undefined;
    return (await this.snapshots.hibernated(id))?.id;
  }

  /** Ends a hibernated sandbox (killed): its snapshot goes with it. False when it is not hibernated. */
  async dropHibernated(id: string, by: EndedBy): Promise<boolean> {
    const h = this.registry.hibernated(id);
    if (!h || h.resuming) return false;
    this.registry.removeHibernated(id);
    await this.recordEnd(h.record, { reason: "killed", by, detail: { hibernated: true } });
    await this.rememberOnTimeout(id, h.onTimeout, true);
    void this.keeper.remove(h.snapshot);
    void h.released.finally(() => this.host.freeUid(h.record.hostUid));
    return true;
  }

  // ---- snapshots ----

  private settingsOf(live: { record: SandboxRecord; lifeS: number; onTimeout: OnTimeout; pausedAt?: number; pausedByTimeout?: boolean }) {
    const r = live.record;
    const extra: Record<string, unknown> = { on_timeout: live.onTimeout, life_s: live.lifeS };
    if (this.network) extra.network = this.network.capture(r.tenantId, r.id);
    if (live.pausedAt !== undefined) extra.paused_at = live.pausedAt;
    if (live.pausedByTimeout) extra.paused_by_timeout = true;
    return { template: r.template, envVars: r.envVars, metadata: r.metadata, extra };
  }

  /**
   * Writes a snapshot of a live sandbox (running, or thawed for the copy) with its settings, and
   * announces it.
   */
  private async write(live: Live, kind: SnapshotKind): Promise<SnapshotRecord> {
    const { record } = live;
    const of = { tenantId: record.tenantId, sandboxId: record.id };
    const snapshot = await this.keeper.write(live.box, of, kind, () => this.settingsOf(live));
    this.emit("snapshotted", record, kind === "manual" ? "api" : kind, { snapshot_id: snapshot.id, size_bytes: snapshot.sizeBytes });
    return snapshot;
  }

  /** POST /sandboxes/{id}/snapshots: the sandbox's files and settings, on disk and verified. */
  async snapshot(tenantId: string, id: string): Promise<SnapshotRecord> {
    const h = this.hibernatedOf(tenantId, id);
    if (h) return this.copyHibernated(h);
    const live = await this.liveOf(tenantId, id);
    return this.serial(live, async () => {
      // A paused sandbox is thawed for the copy (its own processes make it) and frozen again.
      const paused = live.record.status === "paused";
      if (paused) await live.box.resume();
      try {
        return await this.write(live, "manual");
      } finally {
        if (paused)
          await live.box.pause().catch((err) => this.log.error({ err, sandbox_id: id }, "could not pause again after a snapshot"));
      }
    });
  }

  /** A hibernated sandbox's files are already an archive: a snapshot of it is a second name for that file. */
  private async copyHibernated(h: Hibernated): Promise<SnapshotRecord> {
    const snapshot = await this.keeper.copy(h.snapshot);
    this.emit("snapshotted", h.record, "api", { snapshot_id: snapshot.id, size_bytes: snapshot.sizeBytes });
    return snapshot;
  }

  getSnapshot(tenantId: string, id: string): Promise<SnapshotRecord> {
    return this.keeper.get(tenantId, id);
  }

  listSnapshots(tenantId: string, limit: number, offset: number) {
    return this.keeper.list(tenantId, limit, offset);
  }

  async deleteSnapshot(tenantId: string, id: string): Promise<void> {
    const snapshot = await this.getSnapshot(tenantId, id);
    if (snapshot.kind === "hibernate" && this.registry.hibernated(snapshot.sandboxId)?.snapshot.id === id) {
      throw new ApiError(
        "conflict",
        `Snapshot '${id}' holds the files of paused sandbox '${snapshot.sandboxId}': resume or kill it instead`,
      );
    }
    await this.keeper.remove(snapshot);
  }

  // ---- sandboxes from snapshots ----

  /** The create input of a sandbox started from a snapshot: its settings, overridden by what the caller gave. */
  async fromSnapshot(tenantId: string, snapshotId: string, input: CreateInput): Promise<CreateInput> {
    const s = await this.getSnapshot(tenantId, snapshotId);
    const onTimeout = s.settings.extra?.on_timeout as OnTimeout | undefined;
    return {
      ...input,
      template: input.template ?? s.settings.template,
      envVars: input.envVars ?? s.settings.envVars,
      metadata: input.metadata ?? s.settings.metadata,
      onTimeout: input.onTimeout ?? onTimeout,
      restore: (box: Box) => this.keeper.restore(box, s),
      afterCreate: (record) => this.applyNetwork(record, s.settings.extra?.network),
    };
  }

  /**
   * Up to `count` copies of a sandbox at once (its files and settings, not its kernel state): one
   * archive is made and unpacked into each copy. All or nothing: if one copy cannot be made, the
   * others are ended and the call fails with the reason.
   */
  async fork(tenantId: string, id: string, count: number): Promise<SandboxRecord[]> {
    const max = this.config.maxForkCount;
    if (!Number.isInteger(count) || count < 1 || count > max) throw invalid(`'count' must be an integer from 1 to ${max}`);
    const h = this.hibernatedOf(tenantId, id);
    const live = h ? undefined : await this.liveOf(tenantId, id);
    this.registry.checkRoom(tenantId, count);
    // The copies' archive is on disk while they are made: it takes room in the storage quota until then.
    const bytes = await this.keeper.reserveStorage(tenantId);
    let source: { restore: (box: Box) => Promise<number>; temp?: string } | undefined;
    try {
      if (h) {
        const snapshot = h.snapshot;
        source = { restore: (box) => this.keeper.restore(box, snapshot) };
        return await this.copies(tenantId, count, h, source, snapshot.settings.extra?.network);
      }
      const l = live as Live;
      const policy = this.network?.capture(tenantId, id);
      source = await this.serial(l, async () => {
        const paused = l.record.status === "paused";
        if (paused) await l.box.resume();
        try {
          const temp = `fork_${crypto.randomUUID()}`;
          // The copies are made on this node: the archive stays on its disk.
          const info = await this.keeper.files.write(l.box, temp, (size) => bytes.grow(size));
          const file = this.keeper.files.pathOf(temp);
          return { restore: (box: Box) => this.keeper.files.restore(box, file, info.sha256), temp };
        } finally {
          if (paused) await l.box.pause().catch(() => {});
        }
      });
      return await this.copies(tenantId, count, l, source, policy);
    } finally {
      if (source?.temp) await this.keeper.files.remove(source.temp);
      bytes.release();
    }
  }

  /** `count` sandboxes started from the archive `source`, with `base`'s settings; all or nothing. */
  private async copies(
    tenantId: string,
    count: number,
    base: { record: SandboxRecord; lifeS: number; onTimeout: OnTimeout },
    source: { restore: (box: Box) => Promise<number> },
    policy: unknown,
  ): Promise<SandboxRecord[]> {
    // Copies made at once: as many creates as one tenant may have waiting for a sandbox start
    // (more would be refused while the pool refills), at least two.
    const limiter = new Limiter(Math.max(2, Math.floor(this.config.startQueue / 2)));
    const input: CreateInput = {
      template: base.record.template,
      envVars: base.record.envVars,
      metadata: base.record.metadata,
      timeoutS: base.lifeS,
      onTimeout: base.onTimeout,
      restore: source.restore,
      afterCreate: (record) => this.applyNetwork(record, policy),
    };
    const settled = await Promise.allSettled(Array.from({ length: count }, () => limiter.run(() => this.creates.create(tenantId, input))));
    const made = settled.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      await Promise.all(made.map((r) => this.kill(tenantId, r.id).catch(() => {})));
      throw failed.reason;
    }
    return made;
  }
}
