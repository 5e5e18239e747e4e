// Node membership: this node's join (a new lease epoch), its heartbeat (renewing the lease only if
// it still holds this epoch, and publishing its load), and the view of every node that the other
// cluster parts read from memory (placement, forwarding, loss detection, GET /v1/admin/nodes).
import { readFileSync } from "node:fs";
import os from "node:os";
import type { Redis } from "ioredis";
import * as K from "./keys.js";
import { isLost, mayServe } from "./lease.js";
import type { NodeRoles } from "./settings.js";

export type NodeState = "up" | "draining" | "drained" | "lost";

/** A node's GPUs of one model: how many, and how many no deployment holds (placement of GPU deployments). */
export interface NodeGpus {
  model: string;
  count: number;
  free: number;
}

export interface NodeView {
  id: string;
  url: string;
  /** Its internal listener (the nodes' own routes, /v1/internal/*); a node of an older version: its url. */
  internalUrl: string;
  roles: NodeRoles;
  epoch: number;
  /** The epoch its lease holds now; null when it expired. */
  leaseEpoch: number | null;
  state: NodeState;
  draining: boolean;
  liveSandboxes: number;
  /** Sandboxes its drain moved to other nodes (since it started). */
  movedSandboxes: number;
  /** Live and hibernated sandboxes still on it: what a drain waits for. */
  remainingSandboxes: number;
  freeMemoryMb: number;
  totalMemoryMb: number;
  /** One-minute load average per core. */
  cpuLoad: number;
  gpus: NodeGpus[];
  heartbeatAt: string | null;
  startedAt: string | null;
}

export interface Load {
  liveSandboxes: number;
  freeMemoryMb: number;
  totalMemoryMb: number;
  cpuLoad: number;
  gpus: NodeGpus[];
}

/** What a node publishes with its load: its drain's progress too. */
export interface NodeLoad extends Load {
  movedSandboxes: number;
  remainingSandboxes: number;
}

/**
 * Renews the lease while it holds this node's epoch (1). When it is gone and no node has taken
 * the epoch's loss in hand (Redis lost its data, or no one noticed yet), takes it again (2): the
 * caller then writes its routes again. Otherwise the node is fenced (0): a later join or a lost
 * epoch handled by another node. Atomic with the loss lock (node-loss.ts), so never both.
 */
const RENEW = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if v == false and redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 2 end
return 0`;

/** MemAvailable (what can be used without swapping), falling back to the free memory. */
function availableMemoryMb(): number {
  try {
    const line = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync("/proc/meminfo", "utf8"));
    if (line) return Math.round(Number(line[1]) / 1024);
  } catch {
    // no /proc: the free memory below
  }
  return Math.round(os.freemem() / 2 ** 20);
}

/** `gpus`: the node's GPUs as its deployments leave them (src/deployments/service.ts gpus()). */
export function machineLoad(liveSandboxes: number, gpus: NodeGpus[] = []): Load {
  return {
    liveSandboxes,
    gpus,
    freeMemoryMb: availableMemoryMb(),
    totalMemoryMb: Math.round(os.totalmem() / 2 ** 20),
    cpuLoad: Math.round(((os.loadavg()[0] ?? 0) / os.availableParallelism()) * 100) / 100,
  };
}

export interface SelfSpec {
  id: string;
  url: string;
  internalUrl: string;
  roles: NodeRoles;
  leaseMs: number;
}

const num = (v: string | undefined, d = 0) => (v === undefined || v === "" ? d : Number(v));

/** A node record's GPUs (none from a node of an older version, or a record that cannot be read). */
function gpusOf(raw: string | undefined): NodeGpus[] {
  if (!raw) return [];
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter((g): g is NodeGpus => typeof g?.model === "string" && Number.isInteger(g?.count) && Number.isInteger(g?.free));
  } catch {
    return [];
  }
}

export class Membership {
  epoch = 0;
  /** When the lease was last renewed (ms): the node serves its sandboxes only within a lease of it. */
  private renewedAt = 0;
  private readonly startedAt = new Date().toISOString();
  /** Every node as of the last heartbeat, by id (this one included). */
  private view = new Map<string, NodeView>();
  draining = false;
  /** Drained: this node left the membership (no lease, no renewals) once its last sandbox ended. */
  left = false;

  constructor(
    private readonly redis: Redis,
    readonly self: SelfSpec,
  ) {}

  /** Takes a new epoch and its lease: the sandboxes of earlier epochs of this node are no longer its own. */
  async join(load: NodeLoad, opts: { starting?: boolean } = {}): Promise<number> {
    this.epoch = await this.redis.incr(K.epochCounter(this.self.id));
    const multi = this.redis.multi().set(K.lease(this.self.id), String(this.epoch), "PX", this.self.leaseMs);
    // A node that starts (again) is up: a drain asked of it before, or its leave, ended with its last
    // run. A join again after being fenced keeps the drain: the operator's request still holds.
    if (opts.starting) multi.del(K.drain(this.self.id)).hdel(K.nodeRecord(this.self.id), "left_at");
    await multi.exec();
    this.left = false;
    this.renewedAt = Date.now();
    await this.publish(load);
    return this.epoch;
  }

  /** Renews the lease and publishes the load: `renewed`, `retaken` (write the routes again) or `fenced`. */
  async heartbeat(load: NodeLoad): Promise<"renewed" | "retaken" | "fenced"> {
    const started = Date.now();
    const keys = [K.lease(this.self.id), K.lostLock(this.self.id, this.epoch)];
    const result = await this.redis.eval(RENEW, 2, ...keys, String(this.epoch), String(this.self.leaseMs));
    if (result === 0) return "fenced";
    this.renewedAt = started;
    await this.publish(load);
    return result === 2 ? "retaken" : "renewed";
  }

  private async publish(load: NodeLoad): Promise<void> {
    const now = new Date().toISOString();
    const [, drain] = await this.redis
      .multi()
      .hset(K.nodeRecord(this.self.id), {
        id: this.self.id,
        url: this.self.url,
        internal_url: this.self.internalUrl,
        roles: this.self.roles,
        epoch: String(this.epoch),
        live: String(load.liveSandboxes),
        moved: String(load.movedSandboxes),
        remaining: String(load.remainingSandboxes),
        free_mb: String(load.freeMemoryMb),
        total_mb: String(load.totalMemoryMb),
        cpu: String(load.cpuLoad),
        gpus: JSON.stringify(load.gpus),
        heartbeat_at: now,
        started_at: this.startedAt,
      })
      .get(K.drain(this.self.id))
      .sadd(K.NODES, this.self.id)
      .exec()
      .then((r) => (r ?? []).map(([, v]) => v));
    this.draining = drain === "1";
  }

  /**
   * Leaves the membership for good (a drained node whose sandboxes have all ended): its record says
   * so and its lease goes, in one step, so that no node ever takes it for lost; it renews no more.
   */
  async leave(): Promise<void> {
    this.left = true;
    this.renewedAt = 0;
    await this.redis
      .multi()
      .hset(K.nodeRecord(this.self.id), { live: "0", remaining: "0", left_at: new Date().toISOString() })
      .del(K.lease(this.self.id))
      .exec();
  }

  /** This node's lease surely still holds (see lease.ts mayServe). */
  leaseHeld(now = Date.now()): boolean {
    return mayServe(this.renewedAt, now, this.self.leaseMs);
  }

  /** Reads every node's record and lease (one round trip per node, pipelined) and keeps the view. */
  async refresh(): Promise<NodeView[]> {
    const ids = await this.redis.smembers(K.NODES);
    const pipe = this.redis.pipeline();
    for (const id of ids) pipe.hgetall(K.nodeRecord(id)).get(K.lease(id)).get(K.drain(id));
    const out = ((await pipe.exec()) ?? []).map(([, v]) => v);
    const view = new Map<string, NodeView>();
    ids.forEach((id, i) => {
      const rec = (out[i * 3] ?? {}) as Record<string, string>;
      const leaseRaw = out[i * 3 + 1] as string | null;
      const draining = out[i * 3 + 2] === "1";
      const epoch = num(rec.epoch);
      const leaseEpoch = leaseRaw === null ? null : Number(leaseRaw);
      const lost = isLost({ epoch, leaseEpoch });
      view.set(id, {
        id,
        url: rec.url ?? "",
        internalUrl: rec.internal_url ?? rec.url ?? "",
        roles: (rec.roles as NodeRoles) ?? "both",
        epoch,
        leaseEpoch,
        state: rec.left_at ? "drained" : lost ? "lost" : draining ? "draining" : "up",
        draining,
        liveSandboxes: num(rec.live),
        movedSandboxes: num(rec.moved),
        remainingSandboxes: num(rec.remaining),
        freeMemoryMb: num(rec.free_mb),
        totalMemoryMb: num(rec.total_mb),
        cpuLoad: num(rec.cpu),
        gpus: gpusOf(rec.gpus),
        heartbeatAt: rec.heartbeat_at ?? null,
        startedAt: rec.started_at ?? null,
      });
    });
    this.view = view;
    return [...view.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  private refreshing: Promise<unknown> | undefined;
  private refreshedAt = 0;

  /** Refreshes the view unless it was refreshed in the last 250 ms (then waits for that one); with Redis away the view stays. */
  async refreshSoon(): Promise<void> {
    if (!this.refreshing && Date.now() - this.refreshedAt >= 250) {
      this.refreshedAt = Date.now();
      this.refreshing = this.refresh()
        .catch(() => {})
        .finally(() => {
          this.refreshing = undefined;
        });
    }
    await this.refreshing;
  }

  /** A node as of the last refresh. */
  node(id: string): NodeView | undefined {
    return this.view.get(id);
  }

  nodes(): NodeView[] {
    return [...this.view.values()];
  }

  /** Asks a node to drain (no new sandboxes); false if no such node ever joined. */
  async drain(id: string): Promise<boolean> {
    if (!(await this.redis.sismember(K.NODES, id))) return false;
    await this.redis.set(K.drain(id), "1");
    return true;
  }
}
