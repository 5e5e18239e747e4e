// The sandbox→node map in Redis: each node writes the route (`node epoch`) of every sandbox it
// starts and removes it when the sandbox ends, and keeps the set of what it owns under its epoch
// (what the others end when that epoch is lost). Routes of other nodes' sandboxes are cached here
// for a moment: a sandbox moves only when its node is drained (the old owner then sends requests on
// to the new one), and a stale route only costs a failed forward or a second look-up.
// While Redis is away a route known before is used whatever its age; routes that could not be
// written are written again once it is back.
import type { Redis } from "ioredis";
import { ApiError } from "../errors.js";
import * as K from "./keys.js";
import { formatRoute, parseRoute, type Route } from "./lease.js";

/** How long a looked-up route is reused without asking Redis again. */
const CACHE_MS = 2000;
const CACHE_MAX = 100_000;

export class RoutingMap {
  /** Sandboxes this node runs under its current epoch: answered here without asking Redis. */
  readonly local = new Set<string>();
  private readonly pending = new Set<Promise<unknown>>();
  private readonly cache = new Map<string, { route: Route | undefined; at: number }>();
  /** A route of this node's could not be written (Redis away): all of them are written again at the next heartbeat. */
  unsaved = false;

  constructor(
    private readonly redis: Redis,
    private readonly self: { id: string; epoch: number },
    private readonly onError: (err: unknown) => void,
  ) {}

  private track(p: Promise<unknown>): void {
    const done = p.catch(this.onError).finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  /** This node runs the sandbox now (created, forked, resumed, re-adopted). */
  claim(id: string): void {
    this.local.add(id);
    const route = formatRoute({ node: this.self.id, epoch: this.self.epoch });
    const written = this.redis.multi().set(K.route(id), route).sadd(K.owned(this.self.id, this.self.epoch), id).exec();
    this.track(
      written.catch((err) => {
        this.unsaved = true;
        throw err;
      }),
    );
  }

  /** Writes every route of this node again (Redis lost them, or some could not be written). */
  rewrite(): void {
    this.unsaved = false;
    for (const id of this.local) this.claim(id);
  }

  /** The sandbox ended (here, or as a lost node's sandbox ended by this node). */
  release(id: string): void {
    this.cache.delete(id);
    const multi = this.redis.multi().del(K.route(id));
    if (this.local.delete(id)) multi.srem(K.owned(this.self.id, this.self.epoch), id);
    this.track(multi.exec());
  }

  /**
   * The sandbox moved to another node (this node's drain): it is no longer this node's, and its
   * route, which the new owner has written already, stays.
   */
  handOff(id: string): void {
    this.cache.delete(id);
    if (this.local.delete(id)) this.track(this.redis.srem(K.owned(this.self.id, this.self.epoch), id));
  }

  /** Routes are being written. */
  get busy(): boolean {
    return this.pending.size > 0;
  }

  /** This node was fenced: what it ran is no longer its own (another node ended it as lost). */
  disown(): string[] {
    const ids = [...this.local];
    this.local.clear();
    this.cache.clear();
    return ids;
  }

  /** Resolves once every route written so far is in Redis (a create answers after its route exists). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** The route of a sandbox not run here if it was looked up less than CACHE_MS ago (no Redis). */
  cached(id: string, now = Date.now()): Route | undefined {
    const hit = this.cache.get(id);
    return hit && now - hit.at < CACHE_MS ? hit.route : undefined;
  }

  /**
   * Whether the route of a sandbox not run here was looked up before but longer than CACHE_MS ago
   * (no Redis): a client of this node that calls every few seconds.
   */
  expired(id: string, now = Date.now()): boolean {
    const hit = this.cache.get(id);
    return hit !== undefined && now - hit.at >= CACHE_MS;
  }

  /** The route of a sandbox not run here: cached, or from Redis. */
  async lookup(id: string, now = Date.now()): Promise<Route | undefined> {
    const hit = this.cache.get(id);
    if (hit && now - hit.at < CACHE_MS) return hit.route;
    let raw: string | null;
    try {
      raw = await this.redis.get(K.route(id));
    } catch (err) {
      // Redis away: the last route known (a sandbox does not move), else a retry later.
      if (hit) return hit.route;
      this.onError(err);
      throw new ApiError("node_unavailable", "The cluster's routing (Redis) cannot be reached now; retry shortly", 1);
    }
    const route = parseRoute(raw);
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(id, { route, at: now });
    return route;
  }

  /** Drops a cached route (its node did not answer). */
  forget(id: string): void {
    this.cache.delete(id);
  }
}
