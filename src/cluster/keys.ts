// The names of everything the cluster keeps in Redis, in one place. Nothing here is durable data:
// losing Redis loses the membership (rebuilt by the next heartbeats) and the routes of live sandboxes.
export const NODES = "abx:nodes";
/** A node's record (a hash: url, roles, epoch, load, heartbeat time); kept after it is lost, to list it. */
export const nodeRecord = (id: string) => `abx:node:${id}`;
/** A node's lease: its epoch, expiring unless renewed. */
export const lease = (id: string) => `abx:lease:${id}`;
/** The counter a node's epoch is taken from at each join. */
export const epochCounter = (id: string) => `abx:epoch:${id}`;
/** Set when an operator drains the node. */
export const drain = (id: string) => `abx:drain:${id}`;
/** The owner of a live sandbox: `node epoch`. */
export const route = (sandboxId: string) => `abx:route:${sandboxId}`;
/** The sandboxes a node runs under one epoch (what is ended when that epoch is lost). */
export const owned = (id: string, epoch: number) => `abx:owned:${id}:${epoch}`;
/** Taken (SET NX) by the one node that ends a lost epoch's sandboxes. */
export const lostLock = (id: string, epoch: number) => `abx:lost:${id}:${epoch}`;
/** The runs in flight on a node, by tenant and key (JSON, expiring unless renewed: run-counts.ts). */
export const runCounts = (id: string) => `abx:runs:${id}`;
/** Pub/sub: what every node must hear at once (key revocations, tenant changes). */
export const BUS = "abx:bus";
