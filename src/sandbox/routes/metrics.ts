// GET /sandboxes/{id}/metrics: the sandbox's resource use, from its cgroup and from inside it.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { SandboxService } from "../service.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
import { SandboxMetrics } from "../schemas/metrics.js";

const round2 = (v: number) => Math.round(v * 100) / 100;

export const metricsRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService }> = async (app, { sandbox }) => {
  app.get(
    "/sandboxes/:sandbox_id/metrics",
    {
      schema: {
        tags: ["sandboxes"],
        summary: "Resource use of a sandbox",
        description:
          "CPU (percent of the sandbox's CPU allowance since the previous call) and memory (MiB) from the sandbox's cgroup; " +
          "network bytes from its own network namespace; disk_read/disk_write are bytes read and written by its processes.",
        params: SandboxIdParams,
        response: { 200: SandboxMetrics, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const m = await sandbox.usage(request.apiKey, request.params.sandbox_id);
      return {
        timestamp: new Date().toISOString(),
        cpu_usage: round2(m.cpuPercent),
        memory_usage: round2(m.memoryBytes / 2 ** 20),
        memory_total: m.memoryTotalMb,
        disk_read: Math.round(m.diskRead),
        disk_write: Math.round(m.diskWrite),
        network_rx: Math.round(m.networkRx),
        network_tx: Math.round(m.networkTx),
      };
    },
  );
};
