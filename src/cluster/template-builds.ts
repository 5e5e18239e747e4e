// Template builds across the nodes of a cluster: a build is an executor's work, so a build request
// reaching any node is placed on an executor by load (as a sandbox's create is) and forwarded there
// before it is counted or parsed; the build's record says which node runs it (its status is read
// from the shared records by any node), and a request for its log, which that node keeps, or to
// cancel it, which only that node can do, is forwarded there from any node.
import type { FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";
import type { ChannelAuth } from "./channel-auth.js";
import type { Forwarder } from "./forward.js";
import { forwardRequest, placeCreate, signedByNode } from "./hook.js";
import type { Membership } from "./membership.js";

/** Where builds run, as the templates area knows it (src/templates/service.ts). */
export interface BuildDirectory {
  /** The node that runs (ran) a tenant's build when that is another one; undefined: answered here (or a 404). */
  nodeOfBuild(tenantId: string, buildId: string): Promise<string | undefined>;
}

export type BuildTarget = "build" | { logs: string } | { cancel: string } | undefined;

/** The native routes and their root aliases (src/api/app.ts mounts both). */
const BUILD = /^(?:\/v1\/agents)?\/templates\/build$/;
const LOGS = /^(?:\/v1\/agents)?\/templates\/builds\/([^/]+)\/logs$/;
const ONE = /^(?:\/v1\/agents)?\/templates\/builds\/([^/]+)$/;

/** What a request is: a build, the log of one, or neither. Pure. */
export function buildTargetOf(method: string, url: string): BuildTarget {
  const path = url.split("?", 1)[0] as string;
  if (method === "POST" && BUILD.test(path)) return "build";
  const m = method === "GET" ? LOGS.exec(path) : method === "DELETE" ? ONE.exec(path) : null;
  if (!m) return undefined;
  try {
    const id = decodeURIComponent(m[1] as string);
    return method === "GET" ? { logs: id } : { cancel: id };
  } catch {
    return undefined; // the router answers a malformed path
  }
}

const noop = () => {};

export interface BuildRoutingDeps {
  membership: Membership;
  forwarder: Forwarder;
  channel: ChannelAuth;
  placementSample: number;
  builds: BuildDirectory;
}

/** The cluster hook's part for builds: the reply when forwarded, undefined when answered here. */
export function buildRouting(deps: BuildRoutingDeps) {
  const { membership, channel, builds } = deps;
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const target = buildTargetOf(request.method, request.url);
    if (target === undefined) return undefined;
    // Forwarded here by another node: answered here, never forwarded again.
    if (signedByNode(channel, request)) return undefined;
    if (target === "build") {
      const chosen = placeCreate(membership, deps.placementSample);
      if (!chosen) throw new ApiError("at_capacity", "No executor node of the cluster takes template builds now; retry shortly", 5);
      return chosen.id === membership.self.id ? undefined : forwardRequest(deps, request, reply, chosen, noop);
    }
    const nodeId = await builds.nodeOfBuild(request.apiKey.tenantId, "logs" in target ? target.logs : target.cancel);
    if (nodeId === undefined) return undefined;
    if (!membership.node(nodeId)) await membership.refreshSoon();
    const node = membership.node(nodeId);
    // Its node gone: answered here (its status from the records; its log went with that node; a
    // cancel records it cancelled).
    if (!node || (node.state !== "up" && node.state !== "draining")) return undefined;
    return forwardRequest(deps, request, reply, node, noop);
  };
}
