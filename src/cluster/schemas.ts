// The cluster's admin API shapes: the nodes and their load (GET /v1/admin/nodes), a drain.
import { Type } from "@sinclair/typebox";

export const ClusterNode = Type.Object(
  {
    id: Type.String({ description: "The node's AGENTBOX_NODE_ID" }),
    url: Type.String({ description: "Where the other nodes reach it (AGENTBOX_NODE_URL)" }),
    roles: Type.Union([Type.Literal("both"), Type.Literal("api"), Type.Literal("executor")]),
    state: Type.Union([Type.Literal("up"), Type.Literal("draining"), Type.Literal("drained"), Type.Literal("lost")], {
      description:
        "`up`; `draining`: takes no new sandboxes and moves its own to other executors; `drained`: it was draining and left the cluster once its last sandbox ended or moved (it is `up` again when it starts again); `lost`: its lease expired (its sandboxes ended with reason node_lost)",
    }),
    epoch: Type.Integer({ description: "Its lease epoch: raised at each join; a sandbox belongs to a node and an epoch" }),
    live_sandboxes: Type.Integer(),
    moved_sandboxes: Type.Integer({ description: "Sandboxes its drain has moved to other executors (since the node started)" }),
    remaining_sandboxes: Type.Integer({
      description: "Live and hibernated sandboxes still on it: a draining node leaves once none is left",
    }),
    free_memory_mb: Type.Integer({ description: "Available memory of its host, MiB" }),
    total_memory_mb: Type.Integer(),
    cpu_load: Type.Number({ description: "One-minute load average per core" }),
    gpus: Type.Array(
      Type.Object({
        model: Type.String({ description: "The GPUs' model, as the node names it (nvidia-smi, or AGENTBOX_NODE_GPUS)" }),
        count: Type.Integer({ description: "How many of this model the node has" }),
        free: Type.Integer({ description: "How many of them no deployment holds" }),
      }),
      { description: "The node's GPUs by model (empty: none); a deployment asking for N GPUs is placed on a node with N free" },
    ),
    heartbeat_at: Type.Union([Type.String(), Type.Null()], { description: "Its last heartbeat" }),
    started_at: Type.Union([Type.String(), Type.Null()]),
  },
  { description: "A node of the cluster and its load" },
);

export const NodeList = Type.Object({ nodes: Type.Array(ClusterNode) });

export const NodeIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
