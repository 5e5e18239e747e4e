// The operator's view of the cluster under /v1/admin (admin key only, src/api/auth.ts): every
// node with its state and load, and draining one (it takes no new sandboxes and moves its own away).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors } from "../api/schemas/common.js";
import { ApiError } from "../errors.js";
import type { NodeView } from "./membership.js";
import { NodeIdParams, NodeList, ClusterNode } from "./schemas.js";

export const nodeJson = (n: NodeView) => ({
  id: n.id,
  url: n.url,
  roles: n.roles,
  state: n.state,
  epoch: n.epoch,
  live_sandboxes: n.liveSandboxes,
  moved_sandboxes: n.movedSandboxes,
  remaining_sandboxes: n.remainingSandboxes,
  free_memory_mb: n.freeMemoryMb,
  total_memory_mb: n.totalMemoryMb,
  cpu_load: n.cpuLoad,
  gpus: n.gpus,
  heartbeat_at: n.heartbeatAt,
  started_at: n.startedAt,
});

/** Where the node list comes from: the cluster's membership in Redis, or the lone node itself (./single-node.ts). */
export interface NodeDirectory {
  refresh(): Promise<NodeView[]>;
  /** False when `id` is no node of the cluster. */
  drain(id: string): Promise<boolean>;
}

export const clusterAdminRoutes: FastifyPluginAsyncTypebox<{ membership: NodeDirectory }> = async (app, { membership }) => {
  const tags = ["admin"];
  app.get(
    "/nodes",
    {
      schema: {
        tags,
        summary: "List the cluster's nodes",
        description:
          "Every node that joined the cluster, read from Redis now: its state (`up`, `draining`, `drained`, `lost`), lease epoch and load. A service running alone lists itself (epoch 0).",
        response: { 200: NodeList, ...errors(401) },
      },
    },
    async () => ({ nodes: (await membership.refresh()).map(nodeJson) }),
  );
  app.post(
    "/nodes/:id/drain",
    {
      schema: {
        tags,
        summary: "Drain a node",
        description:
          "The node takes no new sandboxes from now on (creates go to the other executors) and moves its sandboxes to the other executors by snapshot (with snapshots in S3): each keeps its id and files, a running one runs again on its new node at once (kernel state lost), a paused one stays paused there. What cannot move stays and runs on until it ends. Once none is left it leaves the cluster by itself (state `drained`); `moved_sandboxes` and `remaining_sandboxes` say how far it is. A service running alone answers 400 `invalid_state`.",
        params: NodeIdParams,
        response: { 200: ClusterNode, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      if (!(await membership.drain(id))) throw new ApiError("not_found", `Node '${id}' is not a node of this cluster`);
      const node = (await membership.refresh()).find((n) => n.id === id);
      if (!node) throw new ApiError("not_found", `Node '${id}' is not a node of this cluster`);
      return nodeJson(node);
    },
  );
};
