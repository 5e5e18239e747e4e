// The gateway's models of the other nodes of a cluster: each node lists the models it serves itself
// (its providers file, its local models, its deployments) when another node asks (a signed GET
// /v1/inference/models), so the node a client asks lists every node's, and a completion or
// embeddings request naming a model only another node serves is forwarded to it. The other nodes
// are asked all at once, each within AGENTBOX_CLUSTER_STATS_TIMEOUT_MS (peer-reads.ts); a node
// that does not answer in time is left out.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ChannelAuth } from "./channel-auth.js";
import type { Forwarder } from "./forward.js";
import { forwardRequest } from "./hook.js";
import type { Membership } from "./membership.js";
import type { PeerReads } from "./peer-reads.js";

/** A model as another node's GET /v1/inference/models lists it (OpenAI's list shape, with capabilities). */
export interface PeerModel {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
  capabilities?: ("chat" | "completions" | "embeddings")[];
}

/** Whether an item of another node's list has the shape of one (anything else is left out). */
function isModel(m: unknown): m is PeerModel {
  const o = m as Partial<PeerModel> | null;
  return typeof o?.id === "string" && o.object === "model" && typeof o.created === "number" && typeof o.owned_by === "string";
}

const MODELS = "/v1/inference/models";

/** How long the nodes' lists are reused to route a tenant's requests for models not served here. */
const CACHE_MS = 2000;
const CACHE_MAX = 10_000;

const noop = () => {};

export interface PeerModelsDeps {
  peers: PeerReads;
  membership: Membership;
  forwarder: Forwarder;
  channel: ChannelAuth;
}

export class PeerModels {
  /** tenant → which node serves each model (the first node by id), as read at `at`. */
  private readonly served = new Map<string, { byModel: Map<string, string>; at: number }>();

  constructor(private readonly deps: PeerModelsDeps) {}

  /** The other nodes' own lists, each model once (the first node by id); none when another node is asking. */
  async list(request: FastifyRequest): Promise<PeerModel[]> {
    if (this.deps.peers.fromPeer(request.headers, request.method, request.url)) return [];
    const { byModel, models } = await this.read(request);
    this.remember(request.apiKey.tenantId, byModel);
    return models;
  }

  /** The other node that serves `model` for the request's tenant (lists read at most every CACHE_MS), if any. */
  async nodeServing(request: FastifyRequest, model: string, now = Date.now()): Promise<string | undefined> {
    const tenantId = request.apiKey.tenantId;
    const hit = this.served.get(tenantId);
    if (hit && now - hit.at < CACHE_MS) return hit.byModel.get(model);
    const { byModel } = await this.read(request);
    this.remember(tenantId, byModel, now);
    return byModel.get(model);
  }

  /**
   * Forwards a request for a model this node does not serve to the other node that does, with its
   * body (`body`); false when none does (or another node sent it: it is answered here).
   */
  async forward(request: FastifyRequest, reply: FastifyReply, model: string, body: Buffer): Promise<boolean> {
    if (this.deps.channel.verify(request.headers, request.method, request.url) !== "none") return false;
    const nodeId = await this.nodeServing(request, model);
    const node = nodeId === undefined ? undefined : this.deps.membership.node(nodeId);
    if (!node || (node.state !== "up" && node.state !== "draining")) return false;
    forwardRequest(this.deps, request, reply, node, noop, body);
    return true;
  }

  private remember(tenantId: string, byModel: Map<string, string>, now = Date.now()): void {
    if (this.served.size >= CACHE_MAX) this.served.clear();
    this.served.set(tenantId, { byModel, at: now });
  }

  private async read(request: FastifyRequest): Promise<{ byModel: Map<string, string>; models: PeerModel[] }> {
    const { answers } = await this.deps.peers.askEach<{ data?: unknown }>(MODELS, request.headers.authorization ?? "");
    const byModel = new Map<string, string>();
    const models: PeerModel[] = [];
    for (const { node, answer } of answers) {
      if (!Array.isArray(answer.data)) continue;
      for (const m of answer.data as unknown[]) {
        if (!isModel(m) || byModel.has(m.id)) continue;
        byModel.set(m.id, node);
        models.push(m);
      }
    }
    return { byModel, models };
  }
}
