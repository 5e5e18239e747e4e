// The operator's hand on any tenant's sandbox under /v1/admin (admin key only, see auth.ts): end it
// (recorded as killed by the operator).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { sandboxNotFound } from "../../errors.js";
import type { SandboxManager } from "../manager.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
import { KillResponse } from "../schemas/sandbox.js";

export const adminSandboxRoutes: FastifyPluginAsyncTypebox<{ sandboxes: SandboxManager }> = async (app, { sandboxes }) => {
  app.delete(
    "/sandboxes/:sandbox_id",
    {
      schema: {
        tags: ["admin"],
        summary: "Kill any tenant's sandbox (its ended event says killed by the operator)",
        params: SandboxIdParams,
        response: { 200: KillResponse, ...errors(401, 404) },
      },
    },
    async (request) => {
      const id = request.params.sandbox_id;
      const record = await sandboxes.store.get(id);
      if (!record) throw sandboxNotFound(id);
      await sandboxes.kill(record.tenantId, id, "operator");
      request.log.info({ sandbox_id: id, tenant_id: record.tenantId }, "admin: sandbox killed");
      return { message: "Sandbox killed", sandbox_id: id };
    },
  );
};
