// Pause, resume, snapshot and fork routes (thin: the work is in src/sandbox/lifecycle.ts).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { SnapshotRecord } from "../store/snapshots.js";
import { errors, Pagination, page, SandboxIdParams } from "../../api/schemas/common.js";
import {
  DeleteSnapshotResponse,
  ForkBody,
  ForkResponse,
  PauseResponse,
  Snapshot,
  SnapshotIdParams,
  SnapshotList,
} from "../schemas/lifecycle.js";
import type { Lifecycle } from "../lifecycle.js";
import { sandboxJson } from "./sandboxes.js";

function snapshotJson(s: SnapshotRecord) {
  return {
    snapshot_id: s.id,
    sandbox_id: s.sandboxId,
    kind: s.kind,
    created_at: s.createdAt,
    size_bytes: s.sizeBytes,
    files: s.files,
    sha256: s.sha256,
    template: s.settings.template,
    metadata: s.settings.metadata,
  };
}

export const lifecycleRoutes: FastifyPluginAsyncTypebox<{ lifecycle: Lifecycle }> = async (app, { lifecycle }) => {
  const tags = ["sandboxes"];

  app.post(
    "/sandboxes/:sandbox_id/pause",
    {
      schema: {
        tags,
        summary: "Pause a sandbox: every process frozen, memory kept, no CPU used, its life clock stopped",
        params: SandboxIdParams,
        response: { 200: PauseResponse, ...errors(400, 401, 404, 409, 500) },
      },
    },
    async (request) => {
      const record = await lifecycle.pause(request.apiKey.tenantId, request.params.sandbox_id);
      return { sandbox_id: record.id, status: record.status, timeout_at: record.timeoutAt, kernel_state: "preserved" as const };
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/resume",
    {
      schema: {
        tags,
        summary: "Resume a paused sandbox where it stopped (its deadline moves on by the time it was paused)",
        params: SandboxIdParams,
        response: { 200: PauseResponse, ...errors(400, 401, 404, 409, 429, 500, 503) },
      },
    },
    async (request) => {
      const { record, kernelState } = await lifecycle.resume(request.apiKey.tenantId, request.params.sandbox_id);
      return { sandbox_id: record.id, status: record.status, timeout_at: record.timeoutAt, kernel_state: kernelState };
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/snapshots",
    {
      schema: {
        tags: ["snapshots"],
        summary: "Snapshot the sandbox's /home/user and settings (written atomically and verified)",
        params: SandboxIdParams,
        response: { 201: Snapshot, ...errors(400, 401, 404, 409, 413, 429, 500, 503, 507) },
      },
    },
    async (request, reply) => {
      const snapshot = await lifecycle.snapshot(request.apiKey.tenantId, request.params.sandbox_id);
      return reply.status(201).send(snapshotJson(snapshot));
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/fork",
    {
      schema: {
        tags,
        summary: "Make copies of a sandbox (its files and settings; kernel state is lost)",
        params: SandboxIdParams,
        body: ForkBody,
        response: { 201: ForkResponse, ...errors(400, 401, 404, 409, 413, 429, 500, 503, 507) },
      },
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
    },
    async (request, reply) => {
      const records = await lifecycle.fork(request.apiKey.tenantId, request.params.sandbox_id, request.body?.count ?? 1);
      return reply.status(201).send({ sandboxes: records.map(sandboxJson), kernel_state: "lost" as const });
    },
  );

  app.get(
    "/snapshots",
    {
      schema: {
        tags: ["snapshots"],
        summary: "List your snapshots",
        querystring: Pagination,
        response: { 200: SnapshotList, ...errors(400, 401) },
      },
    },
    async (request) => {
      const { limit, offset } = page(request.query);
      const result = await lifecycle.listSnapshots(request.apiKey.tenantId, limit, offset);
      return { snapshots: result.snapshots.map(snapshotJson), total: result.total };
    },
  );

  app.get(
    "/snapshots/:snapshot_id",
    {
      schema: {
        tags: ["snapshots"],
        summary: "Get a snapshot",
        params: SnapshotIdParams,
        response: { 200: Snapshot, ...errors(401, 404) },
      },
    },
    async (request) => snapshotJson(await lifecycle.getSnapshot(request.apiKey.tenantId, request.params.snapshot_id)),
  );

  app.delete(
    "/snapshots/:snapshot_id",
    {
      schema: {
        tags: ["snapshots"],
        summary: "Delete a snapshot (its archive is removed)",
        params: SnapshotIdParams,
        response: { 200: DeleteSnapshotResponse, ...errors(401, 404, 409) },
      },
    },
    async (request) => {
      await lifecycle.deleteSnapshot(request.apiKey.tenantId, request.params.snapshot_id);
      return { message: "Snapshot deleted", snapshot_id: request.params.snapshot_id };
    },
  );
};
