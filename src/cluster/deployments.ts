// Deployments across the nodes of a cluster: a request for one (its status, its delete, a completion
// whose `model` names it) that reaches a node not running it is forwarded to the node that does (its
// row's node_id), and a create is placed on an executor by load, as a sandbox's is. Status, delete
// and create are forwarded before they are counted or parsed (like a sandbox's requests); a
// completion only once its body has said which model it is for, so this node has counted it
// already and the node that answers does not count it again (counted()).
import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";
import type { ChannelAuth } from "./channel-auth.js";
import type { Forwarder } from "./forward.js";
import { readCreateBody } from "./create-body.js";
import { executorsUp, forwardRequest, placeCreate, signedByNode } from "./hook.js";
import type { Membership, NodeView } from "./membership.js";
import { chooseWithGpus, type GpuRequest } from "./placement.js";

/** Where deployments run, as the deployments area knows it (src/deployments/service.ts). */
export interface DeploymentDirectory {
  /** Whether this node runs the deployment. */
  runsHere(id: string): boolean;
  /** The node that runs a tenant's deployment when that is another one; undefined: answered here (or a 404). */
  nodeOf(tenantId: string, id: string): Promise<string | undefined>;
  /** The node that serves a tenant's deployment of that name (a completion's `model`) when that is another one. */
  nodeOfName(tenantId: string, name: string): Promise<string | undefined>;
  /** What a create's body (parsed JSON, not yet validated) asks of GPUs; undefined: a CPU deployment. */
  gpuRequest(body: unknown): Promise<GpuRequest | undefined>;
}

export type DeploymentTarget = "create" | { deployment: string; method: "GET" | "DELETE" } | undefined;

const ONE = /^\/v1\/deployments\/([^/]+)$/;
const DELETE = /^\/v1\/deployments\/delete\/([^/]+)$/;

/** What a /v1/deployments/... request is: a create, about one deployment (status, delete), or neither (the list). Pure. */
export function deploymentTargetOf(method: string, url: string): DeploymentTarget {
  const path = url.split("?", 1)[0] as string;
  if (path === "/v1/deployments/create") return method === "POST" ? "create" : undefined;
  const m = method === "DELETE" ? DELETE.exec(path) : method === "GET" ? ONE.exec(path) : null;
  if (!m || m[1] === "list") return undefined;
  try {
    return { deployment: decodeURIComponent(m[1] as string), method: method as "GET" | "DELETE" };
  } catch {
    return undefined; // the router answers a malformed path
  }
}

/** The gateway's routes a forwarded completion comes in on. */
const INFERENCE = "/v1/inference/";

/**
 * How long the node of a tenant's model name is reused without reading the rows again: every
 * completion asks (a deployment's name comes before the providers file's models, as on its own
 * node), so a model of the providers file costs one read per tenant every 2 s, not one per request.
 */
const NAME_CACHE_MS = 2000;
const NAME_CACHE_MAX = 10_000;

const noop = () => {};

/** A create's body as JSON; undefined when it is not (the route's parser then answers it, as it would have). */
function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

export interface DeploymentRoutingDeps {
  membership: Membership;
  forwarder: Forwarder;
  channel: ChannelAuth;
  placementSample: number;
  directory: DeploymentDirectory;
}

export class DeploymentRouting {
  /** `tenant\nname` → the node of that deployment (undefined: none elsewhere), as read at `at`. */
  private readonly names = new Map<string, { node: string | undefined; at: number }>();

  constructor(private readonly deps: DeploymentRoutingDeps) {}

  /** The other node that runs the tenant's deployment of that name, if any (rows read at most every NAME_CACHE_MS). */
  private async nodeOfName(tenantId: string, name: string, now = Date.now()): Promise<string | undefined> {
    const key = `${tenantId}\n${name}`;
    const hit = this.names.get(key);
    if (hit && now - hit.at < NAME_CACHE_MS) return hit.node;
    let node: string | undefined;
    try {
      node = await this.deps.directory.nodeOfName(tenantId, name);
    } catch {
      // The rows cannot be read now (the database is away): the model is answered here, as it can be.
      return hit?.node;
    }
    if (this.names.size >= NAME_CACHE_MAX) this.names.clear();
    this.names.set(key, { node, at: now });
    return node;
  }

  /** The node a deployment runs on while it is alive (a node not in the view yet is read now); undefined when lost. */
  private async reachable(nodeId: string): Promise<NodeView | undefined> {
    const { membership } = this.deps;
    if (!membership.node(nodeId)) await membership.refreshSoon();
    const node = membership.node(nodeId);
    return node && node.state !== "lost" ? node : undefined;
  }

  /** The cluster hook's part for /v1/deployments/...: the reply when forwarded, undefined when answered here. */
  async route(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const { membership, channel, directory } = this.deps;
    const target = deploymentTargetOf(request.method, request.url);
    if (target === undefined) return undefined;
    // Forwarded here by another node: answered here, never forwarded again.
    if (signedByNode(channel, request)) return undefined;
    if (target === "create") {
      // Its body is read first (a few hundred bytes of JSON): a deployment that asks for GPUs goes
      // to an executor with them free. What was read is parsed here or sent on as read.
      const body = await readCreateBody(request.raw);
      const want = body && (await directory.gpuRequest(parseJson(body)));
      const chosen = want ? this.placeOnGpus(want) : placeCreate(membership, this.deps.placementSample);
      if (!chosen) throw new ApiError("at_capacity", "No executor node of the cluster takes new deployments now; retry shortly", 5);
      return chosen.id === membership.self.id ? undefined : forwardRequest(this.deps, request, reply, chosen, noop, body);
    }
    const id = target.deployment;
    if (directory.runsHere(id)) return undefined;
    const nodeId = await directory.nodeOf(request.apiKey.tenantId, id);
    if (nodeId === undefined) return undefined;
    const owner = await this.reachable(nodeId);
    if (owner) return forwardRequest(this.deps, request, reply, owner, noop);
    // Its node was lost and another executor is taking it over: its status is answered here from its row.
    if (target.method === "GET") return undefined;
    throw new ApiError(
      "node_unavailable",
      `The node that ran deployment '${id}' was lost; another node is taking it over; retry shortly`,
      1,
    );
  }

  /** The executor a deployment asking for GPUs goes to, or the error that says why there is none. */
  private placeOnGpus(want: GpuRequest): NodeView {
    const placed = chooseWithGpus(executorsUp(this.deps.membership), want, this.deps.placementSample);
    if ("node" in placed) return placed.node;
    if (placed.refused === "gpus_busy")
      throw new ApiError(
        "at_capacity",
        `Every node with ${want.count} GPUs '${want.model}' has them held by other deployments; retry once one is deleted (GET /v1/admin/nodes lists each node's free GPUs)`,
        30,
      );
    throw new ApiError(
      "invalid_request",
      placed.refused === "no_such_gpu"
        ? `No executor node of the cluster has a GPU '${want.model}' (GET /v1/admin/nodes lists each node's GPUs; hw_type 'cpu' runs on the CPU)`
        : `No executor node of the cluster has ${want.count} GPUs '${want.model}' (GET /v1/admin/nodes lists each node's GPUs)`,
    );
  }

  /**
   * Forwards a completion whose `model` is a deployment another node runs to that node, with the
   * body as it arrived (`body`); false when it is answered here (a node's own forwarded request
   * always is).
   */
  async forwardModel(request: FastifyRequest, reply: FastifyReply, model: string, body: Buffer): Promise<boolean> {
    if (this.deps.channel.verify(request.headers, request.method, request.url) !== "none") return false;
    const nodeId = await this.nodeOfName(request.apiKey.tenantId, model);
    if (nodeId === undefined) return false;
    const owner = await this.reachable(nodeId);
    if (!owner)
      throw new ApiError(
        "node_unavailable",
        `The node that ran deployment '${model}' was lost; another node is taking it over; retry shortly`,
        1,
      );
    forwardRequest(this.deps, request, reply, owner, noop, body);
    return true;
  }

  /** A completion another node forwarded here: that node counted it against the key's rate limit already. */
  counted(request: FastifyRequest): boolean {
    return request.url.startsWith(INFERENCE) && this.deps.channel.verify(request.headers, request.method, request.url) === "valid";
  }
}
