// Node loss: a node whose lease expired has the sandboxes it owned under that epoch ended with
// reason `node_lost`, exactly once cluster-wide: the one node that takes the epoch's lock (SET NX)
// ends them, and each end is recorded only if the record still says running or paused, so a
// handler that dies midway leaves the rest to the next one (its lock expires) without repeats.
// An executor that handles the loss takes over the hibernated ones whose snapshots are in the
// shared store instead (they wait on it for their resume); so an API-only node leaves a lost node
// to the executors while one of them is up.
import type { Redis } from "ioredis";
import type { EndCause } from "../sandbox/doors.js";
import * as K from "./keys.js";
import type { NodeView } from "./membership.js";

/** The lock of a lost epoch while it is handled; once done it is kept a day (no one handles it again). */
const HANDLING_MS = 30_000;
const DONE_S = 86_400;

/** Takes the epoch's loss lock only if its lease is still gone (atomic with the owner's renewal, membership.ts). */
const LOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return 0 end
if redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3], 'NX') then return 1 end
return 0`;

/** What a node does with a lost node's sandbox: end it, or take it over (a hibernated one). */
export interface LostSandboxes {
  /** Records the end of a sandbox `owner` ran; false if it had already ended or is no longer `owner`'s. */
  end(id: string, cause: EndCause, owner: string): Promise<boolean>;
  /** Whether this node can take over hibernated sandboxes now (an executor, not draining). */
  canTakeOver(): boolean;
  /** Takes over a hibernated sandbox of `owner`; false when it cannot (the sandbox is then ended). */
  takeOver(id: string, owner: string): Promise<boolean>;
  /** A sandbox taken over: it is this node's now (its route is written). */
  takenOver(id: string): void;
}

export class NodeLoss {
  /** Lost epochs this node has seen handled (`node epoch`): not asked about again. */
  private readonly handled = new Set<string>();

  constructor(
    private readonly redis: Redis,
    private readonly selfId: string,
    private readonly sandboxes: LostSandboxes,
    private readonly log: (msg: string, fields: Record<string, unknown>) => void,
  ) {}

  /**
   * Handles every lost node of the view (not this one: its own loss is found by its heartbeat).
   * A node that cannot take sandboxes over leaves them to an executor while one is up.
   */
  async sweep(nodes: readonly NodeView[]): Promise<void> {
    const executorUp = nodes.some((n) => n.id !== this.selfId && n.state === "up" && n.roles !== "api");
    if (!this.sandboxes.canTakeOver() && executorUp) return;
    for (const node of nodes) {
      if (node.id === this.selfId || node.state !== "lost" || node.epoch === 0) continue;
      await this.handle(node.id, node.epoch);
    }
  }

  /** Ends the sandboxes of the node's epoch if this node wins its lock; how many it ended. */
  async handle(nodeId: string, epoch: number): Promise<number> {
    const memo = `${nodeId} ${epoch}`;
    if (this.handled.has(memo)) return 0;
    const lock = K.lostLock(nodeId, epoch);
    const taken = await this.redis.eval(LOCK, 2, K.lease(nodeId), lock, String(epoch), this.selfId, String(HANDLING_MS));
    if (taken !== 1) {
      if ((await this.redis.get(lock)) === "done") this.handled.add(memo);
      return 0;
    }
    const owned = K.owned(nodeId, epoch);
    const ids = await this.redis.smembers(owned);
    let ended = 0;
    let tookOver = 0;
    const mayTake = nodeId !== this.selfId && this.sandboxes.canTakeOver();
    for (const id of ids) {
      const moved = mayTake && (await this.sandboxes.takeOver(id, nodeId).catch(() => false));
      if (!moved && (await this.sandboxes.end(id, { reason: "node_lost", detail: { node: nodeId, epoch } }, nodeId))) ended++;
      await this.redis.multi().srem(owned, id).del(K.route(id)).exec();
      if (moved) {
        tookOver++;
        this.sandboxes.takenOver(id);
      }
    }
    await this.redis.multi().del(owned).set(lock, "done", "EX", DONE_S).exec();
    this.handled.add(memo);
    if (ids.length > 0) this.log("ended the sandboxes of a lost node", { node: nodeId, epoch, ended, taken_over: tookOver });
    return ended;
  }
}
