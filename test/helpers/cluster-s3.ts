// One cluster test file's rig: a real S3 server on loopback for snapshot archives, a cluster (its
// own Redis and shared SQLite file) whose nodes are started by the tests, and a Redis client to
// read the sandbox→node routes; started before the file's tests and removed after them.
import { after, before } from "node:test";
import { Redis } from "ioredis";
import { startCluster, type TestCluster } from "./cluster.js";
import { startS3, type TestS3 } from "./s3.js";

export class ClusterRig {
  cluster!: TestCluster;
  s3!: TestS3;
  redis!: Redis;

  /** The node a sandbox is routed to, as the routing cache has it. */
  async ownerOf(id: string): Promise<string | undefined> {
    return (await this.redis.get(`abx:route:${id}`))?.split(" ")[0];
  }
}

/** Registers the file's before/after hooks; the rig's fields are set once `before` has run. */
export function useClusterRig(bucket: string, leaseMs: number): ClusterRig {
  const rig = new ClusterRig();
  before(async () => {
    rig.s3 = await startS3(bucket);
    rig.cluster = await startCluster({ leaseMs });
    rig.redis = new Redis(rig.cluster.redis.url);
  });
  after(async () => {
    rig.redis?.disconnect();
    await rig.cluster?.dispose();
    await rig.s3?.stop();
  });
  return rig;
}
