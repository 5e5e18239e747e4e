// Requests for one vector index in a cluster (`/v1/vectors/indexes/{index}`, `/v1/vectors/{index}/...`):
// one that reaches a node other than the index's owner (vector-owners.ts) is forwarded there over
// the internal channel, before rate limits and body parsing, as a sandbox's request is to its node;
// the owner answers from the copy it holds. An owner that cannot be reached (refused, or no answer
// to the request's head within CONNECT_WAIT_MS: see Forwarder.connect) is not waited for: the
// request is answered here from the records, as any node could (correct, slower the first time: the
// index loads here), and the owner is passed over for a lease, by when it is either back or lost
// (and another node owns its indexes).
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ChannelAuth } from "./channel-auth.js";
import type { Forwarder } from "./forward.js";
import type { VectorOwners } from "./vector-owners.js";

/** What the cluster asks of the vectors area (src/vectors/setup.ts). */
export interface VectorIndexes {
  /** The id of the tenant's index `ref` (an id or a name); undefined when there is none (answered here: 404). */
  indexOf(tenantId: string, ref: string): Promise<string | undefined>;
  /**
   * Which indexes are this node's, at each look at the membership (`changed`: the nodes that serve
   * vectors changed since the last call): it loads what it owns and drops what others own.
   */
  hold(ownership: (indexId: string) => "mine" | "theirs" | "none", changed: boolean): Promise<void>;
}

/**
 * How long a forward waits for the owner to answer the request's head (its 100 Continue) before the
 * request is answered here instead: a node that died leaves no connection to answer, and a busy
 * owner answers well within it (its event loop is not held that long).
 */
const CONNECT_WAIT_MS = 2000;

export interface VectorRoutingDeps {
  indexes: VectorIndexes;
  owners: VectorOwners;
  forwarder: Forwarder;
  channel: ChannelAuth;
  selfId: string;
  leaseMs: number;
  warn: (msg: string, fields: Record<string, unknown>) => void;
}

/** The route prefix of the vectors area's routes (src/api/app.ts). */
const VECTORS = "/v1/vectors/";

/** Forwards a request for another node's index and answers with the hijacked reply; undefined: answered here. */
export function vectorRouting(
  deps: VectorRoutingDeps,
): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined> {
  const { indexes, owners, forwarder, channel, selfId } = deps;
  /** Owners that could not be reached, until when they are passed over. */
  const unreachable = new Map<string, number>();
  return async (request, reply) => {
    // The matched route names the index (`:index`, or `:index_id` of /indexes/{index_id}); the list and create have none.
    if (!request.routeOptions.url?.startsWith(VECTORS)) return undefined;
    const params = request.params as { index?: string; index_id?: string };
    const ref = params.index ?? params.index_id;
    const tenantId = request.apiKey?.tenantId;
    if (ref === undefined || tenantId === undefined) return undefined;
    const indexId = await indexes.indexOf(tenantId, ref);
    if (indexId === undefined) return undefined;
    const owner = owners.owner(indexId);
    if (!owner || owner.id === selfId) return undefined;
    const until = unreachable.get(owner.id);
    if (until !== undefined) {
      if (Date.now() < until) return undefined;
      unreachable.delete(owner.id);
    }
    const opened = await forwarder.connect(request.raw, owner, channel.sign(request.method, request.url), CONNECT_WAIT_MS);
    if (!opened) {
      unreachable.set(owner.id, Date.now() + deps.leaseMs);
      deps.warn("cluster: the owner of a vector index cannot be reached; its requests are answered here meanwhile", {
        node: owner.id,
        index: indexId,
      });
      return undefined;
    }
    reply.hijack();
    const failure = "The node that holds this vector index did not answer; retry shortly";
    forwarder.relay(opened.out, request.raw, reply.raw, () => {}, { failure, early: opened.answer });
    return reply;
  };
}
