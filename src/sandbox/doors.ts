// The doors between the sandbox rooms: the shapes they share (a live sandbox, a create's input, how
// one ends) and the interface each room is handed by the façade that composes them (./manager.ts).
// Types only: the rooms (./host.ts, ./registry.ts, ./warm-pool.ts, ./lifecycle.ts) import nothing
// of each other but this (and Lifecycle the type of its snapshot keeper).
import type { Limits } from "./settings.js";
import type { EndedBy, EndReason, EventDetail } from "../events/bus.js";
import type { SandboxRecord } from "./store/sandboxes.js";
import type { SnapshotRecord } from "./store/snapshots.js";
import type { EffectiveQuotas } from "../tenancy/store/tenants.js";
import type { Box } from "./box.js";
import type { TemplateRoot } from "./bwrap.js";
import type { TenantLimits } from "./cgroup.js";

/** What a sandbox does when its life runs out: end (default), pause, or snapshot its files and end. */
export type OnTimeout = "kill" | "pause" | "snapshot";

/** Whether a resumed sandbox kept its memory and kernels (a thawed pause) or only its files. */
export type KernelState = "preserved" | "lost";

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

/** A sandbox whose processes were ended into a snapshot after a long pause; it waits for a resume. */
export interface Hibernated {
  record: SandboxRecord;
  snapshot: SnapshotRecord;
  lifeS: number;
  onTimeout: OnTimeout;
  pausedAt: number;
  pausedByTimeout: boolean;
  /** The teardown of its old processes and workspace (a resume starts again under the same name). */
  released: Promise<void>;
  resuming?: Promise<{ record: SandboxRecord; kernelState: KernelState }>;
}

/** How a sandbox ended: the reason (kept in its events), who asked, and what else is worth knowing. */
export interface EndCause {
  reason: EndReason;
  by?: EndedBy;
  detail?: EventDetail;
}

/** Set by the façade, read by every room: the service is stopping; the host is short of memory. */
export interface ServiceState {
  closing: boolean;
  lowMemory: boolean;
}

/** A tenant's own template as a sandbox starts from it (src/templates/ resolves them). */
export interface CustomTemplate {
  /** The template's id (what the sandbox's record keeps). */
  id: string;
  /** Its root filesystem; absent for a template saved from a built-in's sandbox (the host's system view). */
  root?: TemplateRoot;
  /** Files every sandbox of the template starts with in /home/user: an archive, unpacked before the sandbox is handed out. */
  home?: { file: string; sha256: string };
  /** The sandbox's limits (the template's, never above the service's). */
  limits: Limits;
  /** Environment variables every sandbox of the template starts with (a create's own win). */
  envVars: Record<string, string>;
}

/** Looks up a tenant's own templates by id (or name); undefined when the tenant has no such template. */
export type TemplateCatalog = (tenantId: string, idOrName: string) => Promise<CustomTemplate | undefined>;

/** The host's door (./host.ts): sandbox processes started and removed, host uids, tenant cgroups. */
export interface HostDoor {
  /** A free host uid, reserved until freeUid() (503 at_capacity when none is free). */
  allocateUid(): number;
  freeUid(uid: number): void;
  /** Starts a sandbox's processes under `name` and `uid` (outside any tenant's group); `custom`: on that template's root. */
  start(name: string, uid: number, custom?: CustomTemplate): Promise<Box>;
  /** The custom template a record's sandbox runs in (undefined for the built-ins; 404 when it is gone). */
  templateOf(record: Pick<SandboxRecord, "tenantId" | "template">): Promise<CustomTemplate | undefined>;
  /** Moves a sandbox into its tenant's cgroup, held to `limits` (default: the tenant's quotas now). */
  assign(box: Box, tenantId: string, limits?: TenantLimits): Promise<void>;
  /** Removes a sandbox (processes, cgroup, workspace); `keepUid`: its uid stays reserved. */
  release(box: Box, stopped?: boolean, keepUid?: boolean): Promise<void>;
  /** Keeps a background cleanup until it is done (the service's close waits for them). */
  track(teardown: Promise<void>): void;
}

/**
 * The whole host as the façade (./manager.ts) holds it: a node that runs sandboxes (./host.ts), or
 * an API-only node of a cluster, which runs none (./no-host.ts).
 */
export interface SandboxHost extends HostDoor {
  /** Resolves once sandboxes can be started. */
  readonly listening: Promise<void>;
  /** This API process took over from an earlier one that died under the same sandbox host. */
  readonly reattached: boolean;
  /** The host's available memory is under AGENTBOX_MEMORY_RESERVE_MB. */
  lowOnMemory(): boolean;
  /** Marks a uid in use that a record holds (at start-up, before any allocation). */
  reserveUid(uid: number): void;
  useTemplates(builtIns: string[], catalog: TemplateCatalog): void;
  /** Holds a tenant's group to new limits (its quotas changed). */
  applyTenantLimits(tenantId: string, limits: TenantLimits): Promise<void>;
  /** Waits for the background cleanups running now. */
  settled(): Promise<void>;
  /** Removes every workspace and cgroup that belongs to no live sandbox (left by a crash). */
  sweep(live: readonly Live[]): Promise<void>;
  /**
   * Takes over the sandbox's process if the sandbox host kept it running from an earlier API
   * process (kernels, commands and background processes go on); undefined otherwise.
   */
  adopt(name: string, uid: number, tenantId: string, custom?: CustomTemplate): Promise<Box | undefined>;
  /** Ends the sandbox processes an earlier API process left with the sandbox host that nothing adopted. */
  releaseUnadopted(): Promise<void>;
  close(): Promise<void>;
}

/** The registry's door (./registry.ts): the live and hibernated sandboxes and the caps on them. */
export interface RegistryDoor {
  /** A live sandbox (running or paused) by id, whoever's it is. */
  get(id: string): Live | undefined;
  /** Every live sandbox, in the order they became live. */
  all(): IterableIterator<Live>;
  /** The caller's sandbox record, live, hibernated or ended; another tenant's does not exist for them. */
  record(tenantId: string, id: string): Promise<SandboxRecord>;
  /**
   * A running sandbox of the caller's, to run something in, from memory alone: undefined when the
   * sandbox is neither live nor hibernated here (notLive() then says why).
   */
  liveBox(tenantId: string, id: string): Box | undefined;
  /** Refuses a sandbox that is not live here: 404 when it is not the caller's, 400 when it ended. */
  notLive(tenantId: string, id: string): Promise<never>;
  join(record: SandboxRecord, box: Box, lifeS: number, onTimeout: OnTimeout): void;
  /** Removes a sandbox from the live ones (it ended, or its processes were ended into a snapshot). */
  leave(id: string): Live | undefined;
  /** A live sandbox's deadline moved. */
  setDeadline(id: string, at: number): void;
  /** Refuses (503/429) when `count` more sandboxes of the tenant would not fit now; its quotas otherwise. */
  checkRoom(tenantId: string, count: number): EffectiveQuotas;
  hibernated(id: string): Hibernated | undefined;
  addHibernated(h: Hibernated): void;
  removeHibernated(id: string): void;
}

/** The warm pool's door (./warm-pool.ts), for the rooms that free room in it. */
export interface PoolDoor {
  /** Starts sandboxes until the pool is at its target again. */
  fill(): void;
}

/** The façade's create, for the rooms that make sandboxes (forks). */
export interface CreateDoor {
  create(tenantId: string, input: CreateInput): Promise<SandboxRecord>;
}
