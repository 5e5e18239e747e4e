// Wiring of the cluster at start-up, only when AGENTBOX_REDIS_URL is set: the Redis connections,
// this node's join and heartbeat (which also finds lost nodes), the sandbox→node routes kept from
// the sandboxes' own events, the messages that keep every node's key and tenant caches current, and
// the hand-over of a lost node's deployments to the executors that survive it, and a drained
// node's moves of its sandboxes to the other executors.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import type { OpenRequests } from "../api/open-requests.js";
import { ApiError } from "../errors.js";
import type { SandboxManager } from "../sandbox/manager.js";
import type { KeyDirectory } from "../tenancy/key-directory.js";
import { TENANT_SUSPENDED } from "../tenancy/suspensions.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import { clusterAdminRoutes } from "./admin-routes.js";
import { type DeploymentDirectory, DeploymentRouting } from "./deployments.js";
import { Broadcast } from "./broadcast.js";
import { ChannelAuth } from "./channel-auth.js";
import { Forwarder } from "./forward.js";
import { adoptRoute, DrainMoves } from "./drain.js";
import { clusterRelay, clusterUpgrade, executorsUp, type HookDeps, installClusterHook, type TemplateCopies } from "./hook.js";
import { machineLoad, Membership, type NodeGpus, type NodeView } from "./membership.js";
import { defaultNodeUrl } from "./single-node.js";
import { NodeLoss } from "./node-loss.js";
import { score } from "./placement.js";
import { PeerReads } from "./peer-reads.js";
import { type PeerModel, PeerModels } from "./peer-models.js";
import { RoutingMap } from "./routing.js";
import { type RunCountGates, RunCounts } from "./run-counts.js";
import type { ClusterSettings } from "./settings.js";
import { VectorOwners } from "./vector-owners.js";
import { type VectorIndexes, vectorRouting } from "./vector-routing.js";
import { openInternalListener, refuseInternal } from "./internal-listener.js";
import { internalRoutes, type TemplateCopySource, templatePeers } from "./template-copies.js";
import { type BuildDirectory, buildRouting } from "./template-builds.js";

/** What the cluster asks of the deployments area (src/deployments/service.ts): where each runs, and moving them. */
export interface DeploymentMoves extends DeploymentDirectory {
  /**
   * Takes over one deployment of a lost node (a claim in the database: one node gets it); its id,
   * `later` when other surviving executors (`executors`, in placement order) are less loaded and go
   * first (`waitedMs` since this node found the node lost), or undefined when none is left for this node.
   */
  adoptFrom(lostNode: string, executors: readonly string[], waitedMs: number): Promise<string | "later" | undefined>;
  /** Stops here the deployments another node has taken over. */
  keepOwned(): Promise<void>;
  /** This node's GPUs and how many its deployments leave free: its heartbeat reports them for placement. */
  gpus(): NodeGpus[];
}

/** How often a node checks that the deployments it runs are still its own (a rare race with a takeover, see sweep). */
const OWNED_CHECK_MS = 5000;

export interface ClusterDeps {
  /** Where this service listens (the default of AGENTBOX_NODE_URL). */
  host: string;
  port: number;
  /** AGENTBOX_NODE_ID (src/config.ts). */
  nodeId: string;
  sandboxes: SandboxManager;
  keys: KeyDirectory;
  tenants: TenantDirectory;
  /**
   * The webhooks each node keeps per tenant (src/events/webhooks.ts): a webhook created or deleted
   * through one node is forgotten by every other, so the events of sandboxes they run reach it.
   */
  webhooks: { onChanged(listener: (tenantId: string) => void): void; forget(tenantId?: string): void };
  openRequests: OpenRequests;
  logger: Logger;
  /** Deployments: an executor takes over a lost node's (absent: none are moved). */
  deployments?: DeploymentMoves;
  /** The execution gates, whose per-tenant and per-key limits then hold over the cluster. */
  gates: RunCountGates;
  /** Vector indexes whose records every node shares (PostgreSQL): each is owned by one executor (absent: each node answers its own). */
  vectors?: VectorIndexes;
  /**
   * Tenants' templates (src/templates/service.ts): creates of one go to the executors holding its
   * files, and this node serves the files it holds to the others (absent: neither).
   */
  templates?: TemplateCopies & TemplateCopySource & BuildDirectory;
}

export interface ClusterArea {
  /** The command connection, shared with the cluster-wide rate limit (src/api/rate-limit.ts). */
  redis: Redis;
  nodeId: string;
  /** Installs the forwarding hook (after authentication, before the rate limits and routes). */
  install(app: FastifyInstance): void;
  /**
   * Relays a request for a sandbox another node runs before Fastify sees it (its route cached, or
   * read from Redis first); false: Fastify takes it now (and the hook decides); `fallback` is
   * called instead when that is found only after the read.
   */
  relay(req: IncomingMessage, res: ServerResponse, fallback: (req: IncomingMessage, res: ServerResponse) => void): boolean;
  /** Relays an Upgrade request for another node's sandbox there; false when it is this node's. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<boolean>;
  /**
   * Joins (a new lease epoch, the routes of what it runs) and starts the heartbeat: last before
   * the service listens, so that no start-up work stalls the first renewals.
   */
  join(): Promise<void>;
  /**
   * Forwards a completion or embeddings request whose `model` is a deployment another node runs,
   * or (`servedHere` false) a model only another node serves, to that node (`body`: its bytes as
   * they arrived); false when it is answered here.
   */
  forwardModel(request: FastifyRequest, reply: FastifyReply, model: string, body: Buffer, servedHere: boolean): Promise<boolean>;
  /** The models the other nodes serve themselves (GET /v1/inference/models); none when another node asks. */
  peerModels(request: FastifyRequest): Promise<PeerModel[]>;
  /** A completion another node forwarded here after counting it against the key's rate limit: not counted again. */
  counted(request: FastifyRequest): boolean;
  /** The other nodes' own answers to a read (a tenant's activity numbers), gathered over the internal channel. */
  peerReads: PeerReads;
  /** Registers GET /v1/admin/nodes and POST /v1/admin/nodes/{id}/drain. */
  routes(app: FastifyInstance): Promise<void>;
  /** The other nodes as the templates area fetches a template's files from them. */
  peers: ReturnType<typeof templatePeers>;
  close(): Promise<void>;
}

/** How long a node's start waits for Redis to answer. */
const CONNECT_WAIT_MS = 15_000;

/** Resolves once the connection is ready (commands are not queued before); fails the start if Redis never answers. */
async function connected(redis: Redis, url: string): Promise<void> {
  if (redis.status === "ready") return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off("ready", ready);
      redis.disconnect();
      reject(new Error(`Redis at ${url.replace(/\/\/[^@/]*@/, "//")} did not answer within ${CONNECT_WAIT_MS / 1000} s`));
    }, CONNECT_WAIT_MS);
    const ready = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once("ready", ready);
  });
}

export async function openCluster(settings: ClusterSettings, deps: ClusterDeps): Promise<ClusterArea | undefined> {
  if (settings.redisUrl === undefined) return undefined;
  const log = deps.logger.child({ area: "cluster" });
  // AGENTBOX_NODE_ID is server-wide: the sandbox records' owner (src/config.ts) and the cluster's name for this node.
  const nodeId = deps.nodeId;
  const onError = (err: unknown) => log.warn({ err }, "cluster: Redis operation failed");
  // While Redis is away commands fail at once instead of waiting in a queue, so no request waits for
  // it: the rate limits let requests through, routes known before are used, the heartbeat retries.
  // The subscriber reconnects and re-subscribes by itself.
  // Reconnection attempts every half second at most (ioredis backs off to 2 s): the cluster is back
  // within a heartbeat or two of Redis.
  const retryStrategy = (times: number) => Math.min(times * 50, 500);
  const redis = new Redis(settings.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy });
  const sub = new Redis(settings.redisUrl, { retryStrategy });
  redis.on("error", onError);
  sub.on("error", onError);
  await connected(redis, settings.redisUrl);
  const { sandboxes } = deps;
  // A tenant's max_sandboxes and stored bytes hold over every node: counted from the shared records.
  sandboxes.countQuotasOverCluster();
  // The nodes' own routes listen apart from the public port, before the node advertises where.
  const internalHost = settings.internalHost ?? deps.host;
  const internal = await openInternalListener(internalHost, settings.internalPort, onError);
  const membership = new Membership(redis, {
    id: nodeId,
    url: settings.nodeUrl ?? defaultNodeUrl(deps.host, deps.port),
    internalUrl: settings.internalUrl ?? defaultNodeUrl(internalHost, internal.port),
    roles: settings.roles,
    leaseMs: settings.leaseMs,
  });
  let drain: DrainMoves | undefined;
  const load = () => ({
    ...machineLoad(sandboxes.liveCount(), deps.deployments?.gpus() ?? []),
    movedSandboxes: drain?.moved ?? 0,
    remainingSandboxes: sandboxes.liveCount() + sandboxes.hibernatedCount(),
  });
  const self = {
    id: nodeId,
    get epoch() {
      return membership.epoch;
    },
  };
  const routing = new RoutingMap(redis, self, onError);
  const loss = new NodeLoss(
    redis,
    nodeId,
    {
      end: (id, cause, owner) => sandboxes.endElsewhere(id, cause, owner),
      canTakeOver: () => settings.roles !== "api" && !membership.draining,
      takeOver: (id, owner) => sandboxes.takeOverHibernated(id, owner),
      takenOver: (id) => routing.claim(id),
    },
    (msg, fields) => log.warn(fields, msg),
  );

  // Routes follow the sandboxes' own lifecycle: whatever starts one here (create, fork, resume, the E2B API).
  const stopListening = sandboxes.events.on((event) => {
    if (event.type === "created") routing.claim(event.sandboxId);
    else if (event.type === "ended") routing.release(event.sandboxId);
  });

  const broadcast = new Broadcast(redis, sub, nodeId, onError);
  await broadcast.listen({
    keyRevoked(idOrPrefix) {
      deps.keys.forget();
      deps.openRequests.endKey(idOrPrefix);
    },
    async tenantChanged(tenantId) {
      const record = await deps.tenants.reload(tenantId);
      if (record.suspendedAt !== null) {
        deps.openRequests.endTenant(tenantId, new ApiError("tenant_suspended", `${TENANT_SUSPENDED}; this stream has ended`));
        for (const s of sandboxes.liveSandboxes())
          if (s.tenantId === tenantId) await sandboxes.lifecycle.pause(tenantId, s.id).catch(onError);
      }
      await sandboxes.applyTenantQuotas(tenantId).catch(onError);
    },
    webhooksChanged(tenantId) {
      deps.webhooks.forget(tenantId);
    },
  });
  // Messages sent while this node was cut from Redis are not heard again: after a reconnection it
  // forgets every verified key, so a key revoked meanwhile is looked up (and refused) at its next use.
  let subscribed = sub.status === "ready";
  sub.on("ready", () => {
    if (subscribed) {
      deps.keys.forget();
      deps.webhooks.forget();
    }
    subscribed = true;
  });
  deps.keys.onRevoked((key) => broadcast.send({ type: "key_revoked", key }));
  deps.tenants.onChanged((tenant) => broadcast.send({ type: "tenant_changed", tenant }));
  deps.webhooks.onChanged((tenant) => broadcast.send({ type: "webhooks_changed", tenant }));

  /** This node lost its lease: what it runs was (or is now) ended as lost elsewhere; it stops them and joins anew. */
  const fenced = async () => {
    const epoch = membership.epoch;
    const ids = routing.disown();
    log.warn({ epoch, sandboxes: ids.length }, "cluster: this node lost its lease; stopping its sandboxes and joining again");
    for (const id of ids) await sandboxes.lifecycle.abandon(id);
    // Its deployments another node took over meanwhile are that node's now.
    await deps.deployments?.keepOwned().catch(onError);
    // If no other node ended them yet, this one does (the same lock: exactly once).
    await loss.handle(nodeId, epoch);
    await membership.join(load());
  };

  const forwarder = new Forwarder();
  // Executions at once: each key's and tenant's limit counts the runs of every node that runs code.
  const runCounts = new RunCounts(
    redis,
    nodeId,
    deps.gates,
    () => membership.nodes().flatMap((n) => (n.id !== nodeId && n.state !== "lost" && n.roles !== "api" ? [n.id] : [])),
    onError,
  );
  const channel = new ChannelAuth(settings.secret ?? "", nodeId);
  // An executor's drain moves its sandboxes to the other executors (by snapshot, through S3).
  drain =
    settings.roles === "api"
      ? undefined
      : new DrainMoves({
          selfId: nodeId,
          sandboxes: {
            movable: () => sandboxes.movable(),
            hibernateNow: (id, graceMs) => sandboxes.lifecycle.hibernateNow(id, graceMs),
            forget: (id) => sandboxes.lifecycle.abandon(id),
            wakeHere: (tenantId, id) => sandboxes.lifecycle.resume(tenantId, id, "drain"),
            ownerOf: async (id) => (await sandboxes.store.get(id))?.nodeId,
          },
          targets: () => executorsUp(membership).filter((n) => n.id !== nodeId),
          // The hand-over is an internal route: on the new owner's internal listener.
          urlOf: (id) => membership.node(id)?.internalUrl,
          channel,
          placementSample: settings.placementSample,
          graceMs: settings.drainRunGraceS * 1000,
          concurrency: settings.drainConcurrency,
          handedOff: (id) => routing.handOff(id),
          log: (level, fields, msg) => log[level](fields, msg),
        });
  /** Another node's drain hands a hibernated sandbox here: taken over, routed here, started if it ran. */
  const adopt = async (id: string, from: string, wake: boolean) => {
    if (settings.roles === "api" || membership.draining || membership.left)
      throw new ApiError("at_capacity", "This node takes no sandboxes now (draining)", 5);
    if (!(await sandboxes.adoptMoved(id, from, wake))) return false;
    routing.claim(id);
    await routing.flush();
    return true;
  };
  const owners = new VectorOwners(membership);
  /** The owners' generation the vectors area was last told of (-1: never). */
  let heldGeneration = -1;
  /** Tells the vectors area which indexes are this node's now (it loads those, drops the others' after a grace). */
  const holdVectors = async () => {
    if (!deps.vectors) return;
    owners.update();
    const changed = owners.generation !== heldGeneration;
    heldGeneration = owners.generation;
    await deps.vectors.hold((id) => owners.ownership(id), changed);
  };
  // The heartbeat and the sweep for lost nodes each run one at a time, apart: ending a lost node's
  // many sandboxes never delays this node's own renewals.
  let beating = false;
  let sweeping = false;
  /** Lost epochs (`node epoch`) whose deployments this node has taken all it could of. */
  const adopted = new Set<string>();
  /** When this node found each lost epoch lost (executors less loaded than this one go first). */
  const lostSeenAt = new Map<string, number>();
  let ownedCheckedAt = Date.now();
  /**
   * An executor takes over one deployment of each lost node per sweep, the least loaded surviving
   * executors first, so the survivors share them. Every few seconds it also checks that what it
   * runs is still its own: a node restarted just as another found its old epoch lost may have
   * started a deployment the other then took.
   */
  const moveDeployments = async (nodes: readonly NodeView[]) => {
    const moves = deps.deployments;
    if (!moves || settings.roles === "api" || membership.draining) return;
    // The survivors in placement order (most memory per live sandbox first, then the id).
    const executors = nodes
      .filter((n) => n.state === "up" && n.roles !== "api")
      .sort((a, b) => score(b) - score(a) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((n) => n.id);
    for (const n of nodes) {
      const memo = `${n.id} ${n.epoch}`;
      if (n.id === nodeId || n.state !== "lost" || adopted.has(memo)) continue;
      const seenAt = lostSeenAt.get(memo) ?? Date.now();
      lostSeenAt.set(memo, seenAt);
      const id = await moves.adoptFrom(n.id, executors, Date.now() - seenAt);
      if (id === undefined) {
        adopted.add(memo);
        lostSeenAt.delete(memo);
      } else if (id !== "later") log.warn({ node: n.id, deployment: id }, "cluster: took over a deployment of a lost node");
    }
    if (Date.now() - ownedCheckedAt >= OWNED_CHECK_MS) {
      ownedCheckedAt = Date.now();
      await moves.keepOwned();
    }
  };
  const sweep = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      const nodes = await membership.refresh();
      for (const n of nodes) if (n.state === "lost") forwarder.abort(n.id);
      await loss.sweep(nodes);
      await moveDeployments(nodes);
      // Not awaited: dropping a copy waits for its load to end, which must not hold up the sweep.
      void holdVectors().catch(onError);
    } catch (err) {
      onError(err);
    } finally {
      sweeping = false;
    }
  };
  const tick = async () => {
    if (beating) return;
    beating = true;
    try {
      // Drained and gone: no lease to renew; the view is still kept, for forwarding and placement.
      if (membership.left) return;
      const beat = await membership.heartbeat(load());
      if (beat === "fenced") await fenced();
      // Redis lost what it had (a restart without persistence): the routes are written again.
      else if (beat === "retaken" || routing.unsaved) routing.rewrite();
      else if (membership.draining) {
        // Its sandboxes move to the other executors (what cannot move runs on here).
        void drain?.kick();
        // Drained, and its last sandbox has ended or moved: it leaves the membership by itself.
        if (sandboxes.liveCount() === 0 && !drain?.holding()) {
          await routing.flush();
          await membership.leave();
          log.info({ node: nodeId, epoch: membership.epoch, moved: drain?.moved ?? 0 }, "cluster: drained; left the membership");
        }
      }
    } catch (err) {
      onError(err);
    } finally {
      beating = false;
    }
    void sweep();
  };
  let timer: NodeJS.Timeout | undefined;

  const deploymentRouting =
    deps.deployments &&
    new DeploymentRouting({ membership, forwarder, channel, placementSample: settings.placementSample, directory: deps.deployments });
  const peerReads = new PeerReads(membership, channel, settings.statsTimeoutMs);
  const peerModels = new PeerModels({ peers: peerReads, membership, forwarder, channel });
  const hookDeps: HookDeps = {
    membership,
    routing,
    forwarder,
    channel,
    placementSample: settings.placementSample,
    deployments: deploymentRouting,
    vectorRequest:
      deps.vectors &&
      vectorRouting({
        indexes: deps.vectors,
        owners,
        forwarder,
        channel,
        selfId: nodeId,
        leaseMs: settings.leaseMs,
        warn: (msg, fields) => log.warn(fields, msg),
      }),
    ...(deps.templates
      ? {
          templates: deps.templates,
          builds: buildRouting({ membership, forwarder, channel, placementSample: settings.placementSample, builds: deps.templates }),
        }
      : {}),
    ...(drain ? { moves: drain } : {}),
  };
  const templateRoutes = internalRoutes(channel, deps.templates, (fields, msg) => log.warn(fields, msg));
  const moveRoute = adoptRoute(channel, adopt);
  internal.serve((req, res) => moveRoute(req, res) || templateRoutes(req, res));
  return {
    redis,
    nodeId: nodeId,
    install: (app) => installClusterHook(app, hookDeps),
    // The public port has no internal route: /v1/internal/* is 404 there.
    relay: clusterRelay(hookDeps, refuseInternal),
    peers: templatePeers(membership, channel),
    upgrade: clusterUpgrade(hookDeps),
    forwardModel: async (request, reply, model, body, servedHere) => {
      if (deploymentRouting && (await deploymentRouting.forwardModel(request, reply, model, body))) return true;
      return !servedHere && peerModels.forward(request, reply, model, body);
    },
    peerModels: (request) => peerModels.list(request),
    counted: (request) => deploymentRouting?.counted(request) ?? false,
    peerReads,
    async join() {
      await membership.join(load(), { starting: true });
      for (const { id } of sandboxes.liveSandboxes()) routing.claim(id);
      await routing.flush();
      await membership.refresh();
      // The indexes this node owns start loading now (in the background).
      await holdVectors().catch(onError);
      // At least every second: a lost node is found within a second of its lease expiring (lease + 2 s in all).
      timer = setInterval(() => void tick(), Math.max(100, Math.min(1000, Math.floor(settings.leaseMs / 3))));
      timer.unref();
      // An API-only node runs no code: it has nothing to publish and no gate to count with.
      if (settings.roles !== "api") runCounts.start();
      log.info({ node: nodeId, epoch: membership.epoch, roles: settings.roles }, "cluster: joined");
    },
    routes: async (app) => {
      await app.register(clusterAdminRoutes, { prefix: "/v1/admin", membership });
    },
    async close() {
      clearInterval(timer);
      await runCounts.close();
      stopListening();
      forwarder.close();
      await internal.close();
      await routing.flush().catch(() => {});
      sub.disconnect();
      redis.disconnect();
    },
  };
}
