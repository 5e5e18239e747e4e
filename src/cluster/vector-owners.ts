// Which node owns each vector index: rendezvous (highest-random-weight) hashing of the index id over
// the nodes that serve vectors (up, and executors: API nodes hold no state and come and go with the
// load). Every node computes the same owner from the same membership view, without asking Redis;
// a node joining or leaving moves only the indexes it wins or held (about 1/n of them), not the rest.
import crypto from "node:crypto";
import type { Membership, NodeView } from "./membership.js";

/** Whose index it is as this node sees it: its own, another node's, or nobody's (no node serves vectors). */
export type IndexOwnership = "mine" | "theirs" | "none";

/** A node that may own vector indexes: up (not draining, lost or drained) and an executor. */
export function servesVectors(node: Pick<NodeView, "state" | "roles">): boolean {
  return node.state === "up" && node.roles !== "api";
}

/** The weight of `node` for `key`: the first 48 bits of SHA-256(node, key). */
function weight(node: string, key: string): number {
  return crypto.createHash("sha256").update(node).update("\0").update(key).digest().readUIntBE(0, 6);
}

/** The node of `nodes` with the highest weight for `key` (ties, practically never: the smaller id); undefined when none. */
export function rendezvousOwner(key: string, nodes: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const node of nodes) {
    const w = weight(node, key);
    if (w > bestWeight || (w === bestWeight && best !== undefined && node < best)) {
      best = node;
      bestWeight = w;
    }
  }
  return best;
}

export class VectorOwners {
  /** The ids of the nodes that serve vectors, as of the last look at the view, and their key. */
  private nodes: string[] = [];
  private key = "";
  /** Raised each time that set changes (whoever noticed it): what a holder compares to know it must look again. */
  generation = 0;

  constructor(private readonly membership: Membership) {
    this.update();
  }

  /** Reads the membership view again (cheap: a few nodes); raises `generation` when the set of nodes that serve vectors changed. */
  update(): void {
    const nodes = this.membership
      .nodes()
      .filter(servesVectors)
      .map((n) => n.id)
      .sort();
    const key = nodes.join("\n");
    if (key === this.key) return;
    this.nodes = nodes;
    this.key = key;
    this.generation++;
  }

  /** The owner of an index, as of the last update(). */
  ownerId(indexId: string): string | undefined {
    return rendezvousOwner(indexId, this.nodes);
  }

  /** The owner of an index from the view now (a node that joined since the last update is seen at once). */
  owner(indexId: string): NodeView | undefined {
    this.update();
    const id = this.ownerId(indexId);
    return id === undefined ? undefined : this.membership.node(id);
  }

  /** Whose index it is, from the view now. */
  ownership(indexId: string): IndexOwnership {
    this.update();
    const id = this.ownerId(indexId);
    return id === undefined ? "none" : id === this.membership.self.id ? "mine" : "theirs";
  }
}
