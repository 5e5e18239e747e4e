// Warm pools of the tenants' own templates: one per template, from its first create on, sized by its
// recent creates like the built-ins' pool (./warm-pool.ts), all of them together within the pool cap
// and the room the sandbox cap leaves, and emptied once the template has not been asked for a while.
// A create from a template takes a sandbox from its pool (started and prepared ahead: its root, its
// files in /home/user) or, when the pool is empty, starts one itself (a cold create).
import crypto from "node:crypto";
import type { Logger } from "pino";
import type { Box } from "./box.js";
import type { CustomTemplate, HostDoor, ServiceState } from "./doors.js";
import { PoolDemand } from "./pool.js";
import type { SandboxConfig } from "./settings.js";

interface TemplatePool {
  /** What its sandboxes start from (as the catalogue resolved it at the last create). */
  custom: CustomTemplate;
  warm: Box[];
  warming: number;
  /** Creates served in the last seconds; the pool keeps at least one while the template is in use. */
  demand: PoolDemand;
  /** When the template was last asked for (Date.now()). */
  askedAt: number;
}

export type TemplatePoolConfig = Pick<SandboxConfig, "warmPoolMax" | "maxSandboxes" | "maxParallelStarts" | "templatePoolIdleS">;

export class TemplatePools {
  private readonly pools = new Map<string, TemplatePool>();
  /** Starts running now, over every template's pool. */
  private warming = 0;

  constructor(
    private readonly config: TemplatePoolConfig,
    private readonly log: Logger,
    private readonly state: ServiceState,
    private readonly host: Pick<HostDoor, "allocateUid" | "freeUid" | "start" | "release" | "track">,
    /** Live sandboxes, creates under way and the built-ins' pool: what the sandbox cap has left is the room here. */
    private readonly occupied: () => number,
    /** Makes a started sandbox ready to hand out (its template's files in /home/user). */
    private readonly prepare: (box: Box, custom: CustomTemplate) => Promise<void>,
  ) {}

  /** Sandboxes the template pools hold, warm or starting (the built-ins' pool leaves room for them). */
  held(): number {
    let n = this.warming;
    for (const p of this.pools.values()) n += p.warm.length;
    return n;
  }

  /**
   * A sandbox of `custom` ready to hand out: from its pool, or started now (and its pool set up,
   * or refreshed with what the catalogue says now). The pool refills after the caller's reply.
   */
  async take(custom: CustomTemplate): Promise<Box> {
    const pool = this.poolOf(custom);
    pool.askedAt = Date.now();
    const warm = pool.warm.shift();
    if (warm) return warm;
    const uid = this.host.allocateUid();
    let box: Box;
    try {
      box = await this.host.start(crypto.randomUUID(), uid, custom);
    } catch (err) {
      this.host.freeUid(uid);
      throw err;
    }
    try {
      await this.prepare(box, custom);
    } catch (err) {
      this.host.track(this.host.release(box));
      throw err;
    }
    return box;
  }

  /** A create from the template got its sandbox: demand, which its pool's size follows. */
  served(templateId: string): void {
    this.pools.get(templateId)?.demand.record();
  }

  private poolOf(custom: CustomTemplate): TemplatePool {
    let pool = this.pools.get(custom.id);
    if (!pool) {
      pool = { custom, warm: [], warming: 0, demand: new PoolDemand(1, this.config.warmPoolMax), askedAt: Date.now() };
      this.pools.set(custom.id, pool);
    }
    pool.custom = custom;
    return pool;
  }

  /** How many sandboxes the pool should hold now: none once idle, else its demand (at least one). */
  private target(pool: TemplatePool, now = Date.now()): number {
    if (now - pool.askedAt > this.config.templatePoolIdleS * 1000) return 0;
    return pool.demand.target(now);
  }

  /** Starts sandboxes for the pools below their target, within the pool cap, the sandbox cap and the parallel starts. */
  fill(): void {
    if (this.state.closing || this.state.lowMemory || this.config.templatePoolIdleS <= 0) return;
    const cap = () => Math.min(this.config.warmPoolMax, this.config.maxSandboxes - this.occupied());
    for (const [id, pool] of this.pools) {
      while (pool.warm.length + pool.warming < this.target(pool) && this.held() < cap() && this.warming < this.config.maxParallelStarts) {
        this.startFor(id, pool);
      }
    }
  }

  private startFor(id: string, pool: TemplatePool): void {
    const custom = pool.custom;
    pool.warming += 1;
    this.warming += 1;
    const uid = this.host.allocateUid();
    const started = this.host.start(crypto.randomUUID(), uid, custom).then(
      async (box) => {
        try {
          await this.prepare(box, custom);
        } catch (err) {
          this.host.track(this.host.release(box));
          throw err;
        }
        // Deleted or closed meanwhile, or its template changed: not handed out.
        if (this.state.closing || this.pools.get(id) !== pool || pool.custom !== custom) this.host.track(this.host.release(box));
        else pool.warm.push(box);
      },
      (err) => {
        this.host.freeUid(uid);
        throw err;
      },
    );
    started
      .catch((err) => this.log.error({ err, template: id }, "template pool: sandbox failed to start"))
      .finally(() => {
        pool.warming -= 1;
        this.warming -= 1;
        setImmediate(() => this.fill());
      });
  }

  /** A pool above its target gives one sandbox back; an idle, empty pool is forgotten (called every tick). */
  trim(): void {
    const now = Date.now();
    for (const [id, pool] of this.pools) {
      const target = this.target(pool, now);
      if (pool.warm.length > target && pool.warming === 0) {
        const extra = pool.warm.pop();
        if (extra) this.host.track(this.host.release(extra));
      }
      if (target === 0 && pool.warm.length === 0 && pool.warming === 0) this.pools.delete(id);
    }
  }

  /** Started sandboxes waiting in a template's pool now. */
  size(templateId: string): number {
    return this.pools.get(templateId)?.warm.length ?? 0;
  }

  /** Gives back the sandboxes of a template's pool (it is deleted): starts in flight are released when they end. */
  async drop(templateId: string): Promise<void> {
    const pool = this.pools.get(templateId);
    if (!pool) return;
    this.pools.delete(templateId);
    // Its starts in flight release what they start (the pool is gone); wait for them, as the
    // template's root is removed next.
    while (pool.warming > 0) await new Promise((r) => setTimeout(r, 10));
    await Promise.all(pool.warm.splice(0).map((box) => this.host.release(box)));
  }

  /** Removes every pool's sandboxes (the service stops). */
  async close(): Promise<void> {
    while (this.warming > 0) await new Promise((r) => setTimeout(r, 10));
    const boxes = [...this.pools.values()].flatMap((p) => p.warm.splice(0));
    this.pools.clear();
    await Promise.all(boxes.map((box) => this.host.release(box)));
  }
}
