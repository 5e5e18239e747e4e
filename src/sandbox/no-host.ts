// The host of a node that runs no sandboxes (a cluster's API-only node, AGENTBOX_NODE_ROLES=api):
// no spawner, no cgroup, no workspace, no uid, so such a node needs none of the privileges
// sandboxes do. Starting a sandbox here is refused; everything else has nothing to do.
import { ApiError } from "../errors.js";
import type { Box } from "./box.js";
import type { CustomTemplate, SandboxHost } from "./doors.js";

export const NO_SANDBOXES_HERE = "This node runs no sandboxes (AGENTBOX_NODE_ROLES=api): sandboxes are created on the cluster's executors";

const refuse = (): never => {
  throw new ApiError("at_capacity", NO_SANDBOXES_HERE, 5);
};

export class NoHost implements SandboxHost {
  readonly listening = Promise.resolve();
  lowOnMemory(): boolean {
    return false;
  }
  allocateUid(): number {
    return refuse();
  }
  freeUid(): void {}
  reserveUid(): void {}
  async start(): Promise<Box> {
    return refuse();
  }
  async templateOf(): Promise<CustomTemplate | undefined> {
    return undefined;
  }
  async assign(): Promise<void> {}
  async release(): Promise<void> {}
  track(): void {}
  useTemplates(): void {}
  async applyTenantLimits(): Promise<void> {}
  async settled(): Promise<void> {}
  readonly reattached = false;
  async sweep(): Promise<void> {}
  async adopt(): Promise<Box | undefined> {
    return undefined;
  }
  async releaseUnadopted(): Promise<void> {}
  async close(): Promise<void> {}
}
