// A sandbox's egress policy (GET/PUT /sandboxes/{id}/network) and egress log (GET .../network/log).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { policyJson } from "../policy.js";
import type { NetworkService } from "../service.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
import { EgressLog, EgressLogQuery, NetworkPolicyBody, NetworkPolicyJson } from "../schemas.js";

export const networkRoutes: FastifyPluginAsyncTypebox<{ network: NetworkService }> = async (app, { network }) => {
  const tags = ["network"];

  app.get(
    "/sandboxes/:sandbox_id/network",
    {
      schema: {
        tags,
        summary: "The sandbox's egress policy",
        params: SandboxIdParams,
        response: { 200: NetworkPolicyJson, ...errors(401, 404) },
      },
    },
    async (request) => policyJson(await network.getPolicy(request.apiKey.tenantId, request.params.sandbox_id)),
  );

  app.put(
    "/sandboxes/:sandbox_id/network",
    {
      schema: {
        tags,
        summary: "Change the egress policy of a running sandbox (fields left out keep their value); applies to the next connection",
        params: SandboxIdParams,
        body: NetworkPolicyBody,
        response: { 200: NetworkPolicyJson, ...errors(400, 401, 404) },
      },
    },
    async (request) => policyJson(await network.setPolicy(request.apiKey.tenantId, request.params.sandbox_id, request.body)),
  );

  app.get(
    "/sandboxes/:sandbox_id/network/log",
    {
      schema: {
        tags,
        summary: "The sandbox's egress attempts, oldest first (bounded per sandbox)",
        params: SandboxIdParams,
        querystring: EgressLogQuery,
        response: { 200: EgressLog, ...errors(400, 401, 404) },
      },
    },
    async (request) => ({
      entries: await network.egressLog(request.apiKey.tenantId, request.params.sandbox_id, Math.max(1, Number(request.query.limit ?? 100))),
    }),
  );
};
