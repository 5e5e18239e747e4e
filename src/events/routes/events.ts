// A sandbox's lifecycle events (created, paused, ..., ended with its reason), live or ended.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { EventStore } from "../store/events.js";
import type { SandboxService } from "../../sandbox/service.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
import { SandboxEventList } from "../schemas.js";

export const eventRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService; events: EventStore }> = async (app, { sandbox, events }) => {
  app.get(
    "/sandboxes/:sandbox_id/events",
    {
      schema: {
        tags: ["events"],
        summary: "A sandbox's lifecycle events, oldest first (kept for a while after it ended)",
        params: SandboxIdParams,
        response: { 200: SandboxEventList, ...errors(401, 404) },
      },
    },
    async (request) => {
      const id = request.params.sandbox_id;
      // 404 unless the sandbox is (or was) the caller's.
      const record = await sandbox.getSandbox(request.apiKey, id);
      return events.list(record.tenantId, id);
    },
  );
};
