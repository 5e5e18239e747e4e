// Which vector indexes this node keeps in memory. In a cluster on PostgreSQL each index has one owner
// node (decided by the cluster, src/cluster/vector-owners.ts, which routes the index's requests
// there): a node loads the indexes it owns, after its start and whenever it comes to own more as
// nodes come and go, and drops the copy of an index another node owns once that has lasted
// AGENTBOX_VECTOR_RELEASE_S (requests routed by a view of the nodes a heartbeat old may still
// reach it meanwhile, and an index answered here while its owner could not be reached is loaded
// here too). One node alone owns every index: it loads them all after its start, as always.
import type { VectorEngine } from "./engine.js";
import type { Ownership, VectorService } from "./service.js";

export class IndexHolding {
  /** Since when each copy held here has been another node's (ms). */
  private readonly othersSince = new Map<string, number>();
  private loading: Promise<void> | undefined;
  private loadAgain = false;
  private releasing = false;

  constructor(
    private readonly service: VectorService,
    private readonly engine: VectorEngine,
    private readonly releaseMs: number,
    private readonly log: { info(msg: string, fields: Record<string, unknown>): void; error(msg: string, err: unknown): void },
  ) {}

  /**
   * The cluster's view of the owners, at each look at the membership: `changed` when the nodes that
   * serve vectors changed since the last call (or at the first), so this node may own more indexes.
   */
  async hold(ownership: Ownership, changed: boolean): Promise<void> {
    this.service.ownership = ownership;
    if (changed) this.loadOwned();
    await this.releaseOthers();
  }

  /** Loads the indexes this node owns that it does not hold yet, in the background, one at a time. */
  loadOwned(): void {
    if (this.loading) {
      this.loadAgain = true;
      return;
    }
    const run = async () => {
      do {
        this.loadAgain = false;
        const owned = (await this.service.allSpecs()).filter((s) => this.service.ownership(s.id) === "mine");
        await this.engine.warm(owned);
      } while (this.loadAgain);
    };
    this.loading = run()
      .catch((err: unknown) => this.log.error("loading vector indexes failed", err))
      .finally(() => {
        this.loading = undefined;
      });
  }

  /** Drops the copies of indexes another node has owned for the grace period. */
  private async releaseOthers(now = Date.now()): Promise<void> {
    if (this.releasing) return;
    this.releasing = true;
    try {
      const held = new Set(this.engine.loaded());
      for (const id of this.othersSince.keys()) if (!held.has(id)) this.othersSince.delete(id);
      for (const id of held) {
        if (this.service.ownership(id) !== "theirs") {
          this.othersSince.delete(id);
          continue;
        }
        const since = this.othersSince.get(id) ?? now;
        this.othersSince.set(id, since);
        if (now - since < this.releaseMs) continue;
        this.othersSince.delete(id);
        await this.engine.release(id);
        this.log.info("dropped a vector index another node owns", { index: id });
      }
    } finally {
      this.releasing = false;
    }
  }
}
