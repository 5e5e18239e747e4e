// Where requests meet the cluster (installed only when AGENTBOX_REDIS_URL is set): a request for a
// sandbox that another node owns is forwarded to it, and a create is placed on an executor chosen
// by load. It runs right after authentication, before rate limits and body parsing, so a forwarded
// request is counted, parsed and answered once, by its owner. A sandbox this node runs is served
// here without asking Redis. Its hot path (clusterRelay) runs before Fastify: a request for another
// node's sandbox is relayed (its route cached, or read first) without Fastify's routing, hooks or
// authentication, which the owner runs.
// A request for one vector index goes to the index's owner node the same way (vector-routing.ts).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";
import { type ChannelAuth, FORWARDED_BY, ORIGIN_HOST } from "./channel-auth.js";
import type { Forwarder } from "./forward.js";
import { type Route, routeTarget } from "./lease.js";
import type { Membership, NodeView } from "./membership.js";
import { parseReadBodies, readCreateBody, templateNamed } from "./create-body.js";
import { type Candidate, choose, preferHolders } from "./placement.js";
import type { RoutingMap } from "./routing.js";
import { mayTarget, targetOf } from "./targets.js";

export { ORIGIN_HOST } from "./channel-auth.js";

/** The deployments' routes that name one deployment or create one (./deployments.ts). */
const DEPLOYMENTS = "/v1/deployments/";

/** Where a template build's routes begin, native and root alias (./template-builds.ts tells them apart). */
const mayBeBuild = (url: string) => url.startsWith("/v1/agents/templates/build") || url.startsWith("/templates/build");

/**
 * Whether another node forwarded this request here (a valid channel signature): it is then answered
 * here, never forwarded again, with the Host its client sent to that node. A request that claims to
 * come from a node with a wrong signature is refused.
 */
export function signedByNode(auth: ChannelAuth, request: FastifyRequest): boolean {
  const channel = auth.verify(request.headers, request.method, request.url);
  if (channel === "invalid") throw new ApiError("unauthorized", "A forwarded request's node signature is invalid or too old");
  if (channel !== "valid") return false;
  const origin = request.headers[ORIGIN_HOST];
  if (typeof origin === "string") request.headers.host = origin;
  return true;
}

/** What a forwarded request carries besides its own headers: the node's signature and the client's Host (signed with it). */
export function forwardedHeaders(auth: ChannelAuth, method: string, url: string, host: string | undefined): Record<string, string> {
  return auth.sign(method, url, Date.now(), host);
}

/** What placement asks of the templates area: the nodes that hold a tenant's template's files. */
export interface TemplateCopies {
  /** Undefined for a built-in or unknown template (placed by load alone). */
  copiesOf(tenantId: string, idOrName: string): Promise<string[] | undefined>;
}

export interface HookDeps {
  membership: Membership;
  routing: RoutingMap;
  forwarder: Forwarder;
  channel: ChannelAuth;
  placementSample: number;
  /** A request for one vector index: forwarded to its owner (vector-routing.ts); absent when vectors are not shared. */
  vectorRequest?: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;
  /** Deployments' requests (/v1/deployments/...), forwarded to the node that runs each (./deployments.ts). */
  deployments?: { route(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> };
  /** Absent: creates are placed by load alone. */
  templates?: TemplateCopies;
  /** Template builds (placed on an executor) and their logs (forwarded to the node that runs the build): ./template-builds.ts. */
  builds?: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;
  /** This node's drain moving its sandboxes to other nodes (./drain.ts); absent on an API-only node. */
  moves?: { waitFor(id: string): Promise<void> | undefined; newOwner(id: string): string | undefined };
}

/**
 * Forwards a request Fastify has taken to `owner` (its answer goes back as it comes); `body`: the
 * bytes of a body Fastify has already read (else the request's own stream is sent on). Such a
 * request passed this node's rate limit: the headers that set on the reply go back with the answer.
 */
export function forwardRequest(
  deps: Pick<HookDeps, "forwarder" | "channel">,
  request: FastifyRequest,
  reply: FastifyReply,
  owner: { id: string; url: string },
  onFail: () => void,
  body?: Buffer,
): FastifyReply {
  reply.hijack();
  const extra = forwardedHeaders(deps.channel, request.method, request.url, request.headers.host);
  deps.forwarder.forward(request.raw, reply.raw, owner, extra, onFail, body, body && reply.getHeaders());
  return reply;
}

/** The executors that take new work now, as this node's view of the cluster has them. */
export function executorsUp(membership: Membership): NodeView[] {
  return membership.nodes().filter((n) => n.state === "up" && n.roles !== "api");
}

/**
 * The executor a create goes to (sampled by load, placement.ts) among `candidates` (default: every
 * executor up), undefined when none takes new work.
 */
export function placeCreate(
  membership: Membership,
  sample: number,
  candidates: readonly Candidate[] = executorsUp(membership),
): NodeView | undefined {
  const chosen = choose(candidates, sample);
  return chosen && membership.node(chosen.id);
}

/** Where the vectors area's routes begin: the only other requests the hook looks at. */
const VECTORS = "/v1/vectors/";

export function installClusterHook(app: FastifyInstance, deps: HookDeps): void {
  const { membership, routing, channel: auth } = deps;
  const selfId = membership.self.id;

  const forward = (request: FastifyRequest, reply: FastifyReply, owner: { id: string; url: string }, sandboxId?: string, body?: Buffer) =>
    forwardRequest(
      deps,
      request,
      reply,
      owner,
      () => {
        if (sandboxId) routing.forget(sandboxId);
      },
      body,
    );

  const leaseHeld = () => {
    if (!membership.leaseHeld()) throw new ApiError("node_unavailable", "This node cannot renew its cluster lease now; retry shortly", 1);
  };

  /** The executor a create goes to, among `candidates` (default: every executor up): this node when it is chosen, another, or none (503). */
  const place = (candidates?: readonly Candidate[]) => {
    const chosen = placeCreate(membership, deps.placementSample, candidates);
    if (!chosen) throw new ApiError("at_capacity", "No executor node of the cluster takes new sandboxes now; retry shortly", 5);
    return chosen;
  };

  const { vectorRequest } = deps;
  /** A request for a vector index: forwarded to the index's owner unless a node sent it here. */
  const vectors = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!vectorRequest || !request.url.startsWith(VECTORS)) return;
    // Forwarded here by a node that takes this one for the owner: answered here, never forwarded again.
    if (signedByNode(auth, request)) return;
    return vectorRequest(request, reply);
  };

  /**
   * A create of one of the tenant's templates goes to an executor that holds its files when one
   * is up (any executor otherwise, which fetches them): its body is read first, when there is a
   * choice to make and it is small JSON. The body read, if any, is returned to be sent on.
   */
  const placeByTemplate = async (request: FastifyRequest) => {
    const executors = executorsUp(membership);
    const tenantId = (request.apiKey as FastifyRequest["apiKey"] | undefined)?.tenantId;
    if (!deps.templates || executors.length < 2 || tenantId === undefined) return { node: place(executors) };
    const body = await readCreateBody(request.raw);
    const name = body && templateNamed(request.url, body);
    // Records out of reach (the database away): placed by load, as a create of a built-in is.
    const holders = name ? await deps.templates.copiesOf(tenantId, name).catch(() => undefined) : undefined;
    return { node: place(preferHolders(executors, holders)), body };
  };

  if (deps.templates || deps.deployments) parseReadBodies(app);

  app.addHook("onRequest", async (request, reply) => {
    const url = request.url;
    if (!mayTarget(url)) {
      if (deps.deployments && url.startsWith(DEPLOYMENTS)) return deps.deployments.route(request, reply);
      if (deps.builds && mayBeBuild(url)) return deps.builds(request, reply);
      return vectors(request, reply);
    }
    const fromNode = signedByNode(auth, request);
    const target = targetOf(request.method, url, request.headers);
    if (target === undefined) return;
    if (target === "create") {
      // Draining: no new sandbox here, even from a node whose view is a heartbeat old.
      if (membership.draining || membership.left)
        throw new ApiError("at_capacity", "This node is draining and takes no new sandboxes; retry shortly", 5);
      // Forwarded here by the node that placed it: created here.
      if (fromNode) return leaseHeld();
      const { node: chosen, body } = await placeByTemplate(request);
      if (!chosen || chosen.id === selfId) return leaseHeld();
      // Its body, when read for placement, is sent on as read (the only header this node has set
      // on the reply yet, its request id, gives way to the executor's).
      return forward(request, reply, chosen, undefined, body);
    }
    const id = target.sandbox;
    if (routing.local.has(id)) {
      // Being moved by this node's drain: the request waits for the move, then goes where the sandbox is.
      const moving = deps.moves?.waitFor(id);
      if (!moving) return leaseHeld();
      await moving;
      if (routing.local.has(id)) return leaseHeld();
    }
    // Moved to another node by this node's drain: sent on there (a route cached a moment ago led here).
    const movedTo = deps.moves?.newOwner(id);
    const newOwner = movedTo === undefined ? undefined : membership.node(movedTo);
    if (newOwner) return forward(request, reply, newOwner, id);
    // Otherwise a forwarded request is never forwarded again: the owner answers, from its records if need be.
    if (fromNode) return;
    let route = await routing.lookup(id);
    if (!route) return;
    const self = { id: selfId, epoch: membership.epoch };
    let where = routeTarget(route, self, (node) => membership.node(node)?.leaseEpoch);
    // The view is a heartbeat old: a node that joined since is read now (at most a few times a second);
    // and the route may be a cached one of a sandbox that has moved since (a drain): read again.
    if (where === "stale" && route.node !== selfId) {
      await membership.refreshSoon();
      routing.forget(id);
      route = await routing.lookup(id);
      if (!route) return;
      where = routeTarget(route, self, (node) => membership.node(node)?.leaseEpoch);
    }
    const owner = membership.node(route.node);
    if (where === "forward" && owner) return forward(request, reply, owner, id);
    if (where === "stale" && route.node !== selfId)
      throw new ApiError(
        "node_unavailable",
        `The node that ran sandbox '${id}' was lost; the sandbox is being ended (reason node_lost)`,
        1,
      );
  });

  // A create answers once its route is in Redis: the client's next request may reach any node.
  app.addHook("onSend", async () => {
    if (routing.busy) await routing.flush();
  });
}

/**
 * Takes an Upgrade request (a WebSocket to a sandbox's port) for a sandbox another node runs and
 * relays it there; false when it is this node's to answer (its own sandbox, a forwarded one, none).
 */
export function clusterUpgrade(deps: HookDeps): (req: IncomingMessage, socket: Duplex, head: Buffer) => Promise<boolean> {
  const { membership, routing, forwarder, channel } = deps;
  return async (req, socket, head) => {
    const url = req.url ?? "";
    const target = targetOf(req.method ?? "GET", url, req.headers);
    if (typeof target !== "object" || channel.verify(req.headers, req.method ?? "GET", url) !== "none") return false;
    const id = target.sandbox;
    if (routing.local.has(id)) return false;
    const route = await routing.lookup(id);
    if (!route) return false;
    const self = { id: membership.self.id, epoch: membership.epoch };
    if (routeTarget(route, self, (node) => membership.node(node)?.leaseEpoch) !== "forward") return false;
    const owner = membership.node(route.node);
    if (!owner) return false;
    forwarder.tunnel(req, socket, head, owner, channel.sign(req.method ?? "GET", url));
    return true;
  };
}

/** The paths the relay takes before Fastify: a sandbox's own routes, native and operator's (E2B's go through Fastify). */
const RELAYED = /^(?:\/v1\/agents|\/v1\/admin)?\/sandboxes\/[^/?#]/;

/**
 * The hot path of forwarding, before Fastify sees the request (no routing, hooks or reply objects
 * here): a request with a bearer key for a sandbox owned by another live node is relayed at once,
 * as the hook would. The owner authenticates it, counts it against the key's rate limit and
 * answers it, exactly as the hook's forwarded requests (which the forwarding node never
 * authenticated nor counted past the key lookup). The route is the cached one, or, when this node
 * looked it up longer ago than the cache keeps (a client calling every few seconds), read from
 * Redis here, as the hook would read it. False when anything else is to be decided at once;
 * `fallback` (Fastify, and the hook with it) when that comes out of the read: no route, a stale
 * one, an unknown node, Redis away.
 */
export function clusterRelay(
  deps: HookDeps,
  internal: (req: IncomingMessage, res: ServerResponse) => boolean,
): (req: IncomingMessage, res: ServerResponse, fallback: (req: IncomingMessage, res: ServerResponse) => void) => boolean {
  const { membership, routing, forwarder, channel } = deps;
  const leaseEpochOf = (node: string) => membership.node(node)?.leaseEpoch;
  /** Relays the request along `route` when it leads to another live node's lease; false otherwise. */
  const relay = (req: IncomingMessage, res: ServerResponse, id: string, route: Route): boolean => {
    if (routeTarget(route, { id: membership.self.id, epoch: membership.epoch }, leaseEpochOf) !== "forward") return false;
    const owner = membership.node(route.node);
    if (!owner) return false;
    const method = req.method as string;
    const url = req.url as string;
    forwarder.forward(req, res, owner, forwardedHeaders(channel, method, url, req.headers.host), () => routing.forget(id));
    return true;
  };
  return (req, res, fallback) => {
    const url = req.url as string;
    const headers = req.headers;
    // No key (the owner would refuse it: Fastify does here, without asking Redis) or a node's
    // request; the nodes' own internal routes (template copies) are answered here too.
    if (!RELAYED.test(url) || headers.authorization === undefined || headers[FORWARDED_BY] !== undefined) return internal(req, res);
    const target = targetOf(req.method as string, url, headers);
    if (typeof target !== "object" || routing.local.has(target.sandbox)) return false;
    const id = target.sandbox;
    const route = routing.cached(id);
    if (route) return relay(req, res, id, route);
    // Only a route this node looked up before is read again here, before any authentication: a
    // made-up key for a sandbox this node never looked up costs Redis nothing, and for one it did,
    // a read every 2 s at most (each read is cached). Read (the body waits unread meanwhile);
    // whatever is not a relay then goes to Fastify, whose hook finds the same route in the cache
    // (or Redis away again, and answers that).
    if (!routing.expired(id)) return false;
    routing
      .lookup(id)
      .then(
        (found) => {
          // The client went away meanwhile: nothing to relay, nothing to answer.
          if (req.socket.destroyed) return;
          if (!found || !relay(req, res, id, found)) fallback(req, res);
        },
        () => fallback(req, res),
      )
      // What would have been an exception in the request's listener (here a rejection nobody hears):
      // this request's connection is cut, the service goes on.
      .catch(() => res.destroy());
    return true;
  };
}
