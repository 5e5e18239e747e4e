// Which surviving executor takes over a lost node's deployments: the least loaded first, by the
// replicas its deployments hold (their min_replicas, what AGENTBOX_MAX_REPLICAS caps), ties in the
// cluster's placement order. The others wait their turn, a few seconds each, in case the ones
// before them cannot run a deployment (no model there, no room). Pure: rows and executors are given.
import type { DeploymentRow } from "./store.js";

/** How much longer each executor down the order waits before it takes what the ones before it left. */
export const TAKEOVER_STEP_MS = 3000;

/** Replicas each node's deployments hold by their min_replicas (failed ones and ones being deleted hold none). */
export function reservedByNode(rows: readonly DeploymentRow[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const row of rows) {
    if (row.node_id === null || row.status === "failed" || row.status === "deleting") continue;
    out.set(row.node_id, (out.get(row.node_id) ?? 0) + row.min_replicas);
  }
  return out;
}

/**
 * This node's place (0: first) among the surviving `executors` (in the cluster's placement order):
 * fewest reserved replicas first. A node not among them comes after all of them.
 */
export function takeoverRank(rows: readonly DeploymentRow[], executors: readonly string[], self: string): number {
  const reserved = reservedByNode(rows);
  const order = executors.map((id, i) => ({ id, i, held: reserved.get(id) ?? 0 })).sort((a, b) => a.held - b.held || a.i - b.i);
  const rank = order.findIndex((e) => e.id === self);
  return rank < 0 ? executors.length : rank;
}

/** Whether it is this node's turn, `waitedMs` after it found the node lost. */
export function mayTakeOver(rows: readonly DeploymentRow[], executors: readonly string[], self: string, waitedMs: number): boolean {
  return takeoverRank(rows, executors, self) * TAKEOVER_STEP_MS <= waitedMs;
}
