// A draining node's moves: each of its sandboxes is hibernated into the shared store (S3) and
// handed to another executor chosen by load, which takes it over in the records (one conditional
// update: the record names one owner at a time, so a sandbox is never served by two nodes), writes
// its route and, if it was running, starts it again at once. Requests that come for a sandbox while
// it moves wait for the move and are then sent to its new owner. What cannot move (no other
// executor up, a failed snapshot, a tenant's own template, no shared store) stays here, and the
// drain waits for it to end as before. Also the new owner's side: the internal route it is asked on.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Limiter } from "../common/limiter.js";
import { ApiError } from "../errors.js";
import type { ChannelAuth } from "./channel-auth.js";
import { type Candidate, choose } from "./placement.js";

/** What a drain asks of the sandbox area (src/sandbox/manager.ts and its lifecycle). */
export interface MovableSandboxes {
  /** The sandboxes that may move now, with their status (running, paused, hibernated). */
  movable(): { id: string; tenantId: string; status: "running" | "paused" | "hibernated" }[];
  /** Hibernates one into the shared store (waiting up to `graceMs` for a run under way). */
  hibernateNow(id: string, graceMs: number): Promise<"hibernated" | "busy" | "absent">;
  /** Forgets here a hibernated sandbox another node took over (nothing recorded, no event). */
  forget(id: string): Promise<void>;
  /** Starts a hibernated one here again (nobody took it). */
  wakeHere(tenantId: string, id: string): Promise<unknown>;
  /** The node the records name as its owner now. */
  ownerOf(id: string): Promise<string | undefined>;
}

/** How long the new owner may take to take a sandbox over and start it (a cold start on a busy host). */
const ADOPT_TIMEOUT_MS = 60_000;

const adoptPath = (id: string, from: string, wake: boolean) =>
  `/v1/internal/sandboxes/${encodeURIComponent(id)}/adopt?from=${encodeURIComponent(from)}&wake=${wake ? 1 : 0}`;
const ADOPT = /^\/v1\/internal\/sandboxes\/([^/?#]+)\/adopt\?from=([^&#]+)&wake=([01])$/;

export interface DrainDeps {
  selfId: string;
  sandboxes: MovableSandboxes;
  /** The executors that take sandboxes now (up, not this one), with their load. */
  targets(): Candidate[];
  /** Where a node is reached (AGENTBOX_NODE_URL), as the membership has it. */
  urlOf(nodeId: string): string | undefined;
  channel: ChannelAuth;
  placementSample: number;
  graceMs: number;
  concurrency: number;
  /** The sandbox is another node's now: this node's routes forget it (its new route is written by the new owner). */
  handedOff(id: string): void;
  log(level: "info" | "warn", fields: Record<string, unknown>, msg: string): void;
}

export class DrainMoves {
  /** Sandboxes moved to other nodes since this node started. */
  moved = 0;
  private readonly moving = new Map<string, Promise<void>>();
  private readonly movedTo = new Map<string, string>();
  /** Sandboxes whose move failed: they stay, and the drain waits for them. */
  private readonly failed = new Set<string>();
  private passing: Promise<void> | undefined;
  private readonly limiter: Limiter;

  constructor(private readonly deps: DrainDeps) {
    this.limiter = new Limiter(deps.concurrency);
  }

  /** The move of this sandbox under way, if any: a request for it waits for it. */
  waitFor(id: string): Promise<void> | undefined {
    return this.moving.size === 0 ? undefined : this.moving.get(id);
  }

  /** The node this node moved the sandbox to. */
  newOwner(id: string): string | undefined {
    return this.movedTo.size === 0 ? undefined : this.movedTo.get(id);
  }

  /** Moves are under way, or hibernated sandboxes that may still move wait here: the node does not leave yet. */
  holding(): boolean {
    return this.moving.size > 0 || this.deps.sandboxes.movable().some((s) => s.status === "hibernated" && !this.failed.has(s.id));
  }

  /**
   * Starts a pass over what may move and has not, unless one is under way (called at each
   * heartbeat while draining); resolves when that pass is over.
   */
  kick(): Promise<void> {
    if (this.passing) return this.passing;
    this.passing = this.pass()
      .catch((err) => this.deps.log("warn", { err }, "drain: a pass failed"))
      .finally(() => {
        this.passing = undefined;
      });
    return this.passing;
  }

  private async pass(): Promise<void> {
    const targets = this.deps.targets();
    if (targets.length === 0) return;
    const todo = this.deps.sandboxes.movable().filter((s) => !this.failed.has(s.id) && !this.moving.has(s.id));
    // The targets' loads as this pass places sandboxes on them, so that one pass spreads them.
    const load = targets.map((t) => ({ ...t }));
    await Promise.all(todo.map((s) => this.limiter.run(() => this.move(s, load))));
  }

  private async move(s: ReturnType<MovableSandboxes["movable"]>[number], load: Candidate[]): Promise<void> {
    let settled = () => {};
    this.moving.set(
      s.id,
      new Promise<void>((resolve) => {
        settled = resolve;
      }),
    );
    try {
      if ((await this.deps.sandboxes.hibernateNow(s.id, this.deps.graceMs)) !== "hibernated") return;
      const to = await this.handOver(s.id, s.status === "running", load);
      if (to) {
        await this.deps.sandboxes.forget(s.id);
        this.deps.handedOff(s.id);
        this.movedTo.set(s.id, to);
        this.moved++;
        this.deps.log("info", { sandbox_id: s.id, to }, "drain: moved a sandbox");
        return;
      }
      this.failed.add(s.id);
      // Nobody took it: it runs here again if it was running (from its snapshot), and stays.
      if (s.status === "running") await this.deps.sandboxes.wakeHere(s.tenantId, s.id);
    } catch (err) {
      this.failed.add(s.id);
      this.deps.log("warn", { err, sandbox_id: s.id }, "drain: could not move a sandbox; it stays");
    } finally {
      this.moving.delete(s.id);
      settled();
    }
  }

  /** Asks the executors, best first, to take the hibernated sandbox over; the one that did. */
  private async handOver(id: string, wake: boolean, load: Candidate[]): Promise<string | undefined> {
    const { selfId, channel } = this.deps;
    const pool = [...load];
    for (let c = choose(pool, this.deps.placementSample); c; c = choose(pool, this.deps.placementSample)) {
      pool.splice(pool.indexOf(c), 1);
      const url = this.deps.urlOf(c.id);
      if (!url) continue;
      const path = adoptPath(id, selfId, wake);
      try {
        const res = await fetch(new URL(path, url), {
          method: "POST",
          headers: channel.sign("POST", path),
          signal: AbortSignal.timeout(ADOPT_TIMEOUT_MS),
        });
        if (res.status === 200) {
          c.liveSandboxes++;
          return c.id;
        }
        this.deps.log(
          "warn",
          { sandbox_id: id, node: c.id, status: res.status, body: (await res.text()).slice(0, 300) },
          "drain: a node refused a sandbox",
        );
      } catch (err) {
        this.deps.log("warn", { err, sandbox_id: id, node: c.id }, "drain: no answer from a node asked to take a sandbox");
      }
      // No answer, yet the node may have taken it: the records say.
      const owner = await this.deps.sandboxes.ownerOf(id).catch(() => undefined);
      if (owner !== undefined && owner !== selfId) return owner;
    }
    return undefined;
  }
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(body));
}

/**
 * The new owner's side: `POST /v1/internal/sandboxes/{id}/adopt?from=&wake=`, signed by the
 * draining node on the internal channel, answered before Fastify. 200 once it is this node's (its
 * route written, and started again when `wake`); 409 when it is not `from`'s hibernated sandbox;
 * the error's status when this node cannot take it (503 at capacity).
 */
export function adoptRoute(
  channel: ChannelAuth,
  adopt: (id: string, from: string, wake: boolean) => Promise<boolean>,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = req.url as string;
    const m = req.method === "POST" ? ADOPT.exec(url) : null;
    if (!m) return false;
    if (channel.verify(req.headers, "POST", url) !== "valid") {
      answer(res, 401, { error: { code: "unauthorized", message: "Internal routes answer only a node of the cluster" } });
      return true;
    }
    const id = decodeURIComponent(m[1] as string);
    const from = decodeURIComponent(m[2] as string);
    adopt(id, from, m[3] === "1").then(
      (ok) =>
        ok
          ? answer(res, 200, { sandbox_id: id })
          : answer(res, 409, { error: { code: "conflict", message: `Sandbox '${id}' is not a hibernated sandbox of '${from}'` } }),
      (err) => {
        const e = err instanceof ApiError ? err : new ApiError("internal_error", String((err as Error)?.message ?? err));
        answer(res, e.status, { error: { code: e.code, message: e.message } });
      },
    );
    return true;
  };
}
