// The node list of a service that runs alone (no AGENTBOX_REDIS_URL): itself, with its load read
// now, so that GET /v1/admin/nodes and the dashboard's node table answer the same way in both modes.
import os from "node:os";
import { ApiError } from "../errors.js";
import type { NodeDirectory } from "./admin-routes.js";
import { machineLoad, type NodeGpus, type NodeView } from "./membership.js";

/** The URL the other nodes reach this one at when AGENTBOX_NODE_URL is unset (and a lone node's own). */
export function defaultNodeUrl(host: string, port: number): string {
  const name = host === "0.0.0.0" || host === "::" ? os.hostname() : host.includes(":") ? `[${host}]` : host;
  return `http://${name}:${port}`;
}

export class SingleNode implements NodeDirectory {
  private readonly startedAt = new Date().toISOString();

  constructor(
    private readonly id: string,
    private readonly url: string,
    private readonly liveCount: () => number,
    /** Its GPUs as its deployments leave them (none without deployments). */
    private readonly gpus: () => NodeGpus[] = () => [],
  ) {}

  async refresh(): Promise<NodeView[]> {
    const now = new Date().toISOString();
    // Epoch 0: a lone node never joins a cluster, so it has no lease to fence with.
    return [
      {
        id: this.id,
        url: this.url,
        // A lone node has no internal listener: nobody calls it.
        internalUrl: this.url,
        roles: "both",
        epoch: 0,
        leaseEpoch: null,
        state: "up",
        draining: false,
        ...machineLoad(this.liveCount(), this.gpus()),
        movedSandboxes: 0,
        remainingSandboxes: this.liveCount(),
        heartbeatAt: now,
        startedAt: this.startedAt,
      },
    ];
  }

  async drain(): Promise<boolean> {
    throw new ApiError(
      "invalid_state",
      "This service runs as one node: draining moves work to other nodes of a cluster (AGENTBOX_REDIS_URL). Stop a lone node with SIGTERM, which lets running work finish.",
    );
  }
}
