// The lease rules of cluster membership, as pure functions: when a node counts as lost, which of
// its lease epochs are orphaned, and when a node may still serve its own sandboxes. A node's lease
// is a Redis key holding its epoch (a counter raised at every join) that expires unless renewed;
// the epoch is the fencing token: a sandbox belongs to (node, epoch), never to a node alone.

/** What the other nodes know of one node. */
export interface NodeLeaseView {
  /** The epoch the node last announced (its node record). */
  epoch: number;
  /** The epoch its lease key holds now, or null once it expired. */
  leaseEpoch: number | null;
}

/** The node's announced epoch is orphaned: its lease expired or was replaced by a later join. */
export function isLost(view: NodeLeaseView): boolean {
  return view.leaseEpoch === null || view.leaseEpoch !== view.epoch;
}

/**
 * A node may serve its own sandboxes while its lease is surely still held: its last successful
 * renewal is less than a lease ago. Past that the others may already have ended them as lost.
 */
export function mayServe(lastRenewedAt: number, now: number, leaseMs: number): boolean {
  return now - lastRenewedAt < leaseMs;
}

/** A route `node epoch` as stored in Redis. */
export interface Route {
  node: string;
  epoch: number;
}

export function formatRoute(route: Route): string {
  return `${route.node} ${route.epoch}`;
}

export function parseRoute(raw: string | null): Route | undefined {
  if (!raw) return undefined;
  const space = raw.lastIndexOf(" ");
  const epoch = Number(raw.slice(space + 1));
  if (space <= 0 || !Number.isInteger(epoch)) return undefined;
  return { node: raw.slice(0, space), epoch };
}

/**
 * Where a request for a sandbox with this route goes: `local` on its owner (same node, same
 * epoch), `forward` to an owner whose lease still holds the route's epoch, `stale` otherwise (the
 * owner or its epoch is gone: the sandbox ended or is ending as lost, and the records say so).
 */
export function routeTarget(
  route: Route,
  self: { id: string; epoch: number },
  leaseEpochOf: (node: string) => number | null | undefined,
): "local" | "forward" | "stale" {
  if (route.node === self.id) return route.epoch === self.epoch ? "local" : "stale";
  return leaseEpochOf(route.node) === route.epoch ? "forward" : "stale";
}
