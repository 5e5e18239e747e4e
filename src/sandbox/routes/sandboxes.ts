// Sandbox lifecycle routes: create, list, get, kill, extend, and the template catalogue.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { invalid } from "../../errors.js";
import { type ListFilter, MAX_METADATA_FILTERS, METADATA_FILTER_KEY, type SandboxRecord } from "../store/sandboxes.js";
import { SandboxCreated } from "../schemas/lifecycle.js";
import type { NetworkService } from "../../network/service.js";
import type { SandboxService } from "../service.js";
import { errors, Pagination, page, SandboxIdParams } from "../../api/schemas/common.js";
import type { TemplateService } from "../../templates/service.js";
import {
  CreateSandboxBody,
  KillResponse,
  Sandbox,
  SandboxList,
  SandboxListQuery,
  SetTimeoutBody,
  SetTimeoutResponse,
  TemplateList,
} from "../schemas/sandbox.js";

export function sandboxJson(r: SandboxRecord) {
  return {
    sandbox_id: r.id,
    status: r.status,
    template: r.template,
    template_id: r.template,
    started_at: r.startedAt,
    timeout_at: r.timeoutAt,
    cpu_count: r.cpuCount,
    memory_mb: r.memoryMb,
    metadata: r.metadata,
    ended_at: r.endedAt,
  };
}

/** The list filter of a query; metadata keys the schema's pattern did not take are refused here. */
function listFilter(query: Record<string, unknown>): ListFilter {
  const metadata: [string, string][] = [];
  for (const [name, value] of Object.entries(query)) {
    if (!name.startsWith("metadata.")) continue;
    const key = name.slice("metadata.".length);
    if (!METADATA_FILTER_KEY.test(key) || typeof value !== "string") {
      throw invalid(
        `'${name.slice(0, 80)}' is not a metadata filter: use metadata.KEY=VALUE once per key, KEY of letters, digits and _ . : -`,
      );
    }
    metadata.push([key, value]);
  }
  if (metadata.length > MAX_METADATA_FILTERS) throw invalid(`At most ${MAX_METADATA_FILTERS} metadata filters`);
  return { status: query.state as ListFilter["status"], metadata };
}

/** The network area's part in a create (absent when the service runs without it). */
type CreateNetworking = Pick<NetworkService, "forCreate" | "attach">;

export const sandboxRoutes: FastifyPluginAsyncTypebox<{
  sandbox: SandboxService;
  network?: CreateNetworking;
  /** Tenants' own templates (src/templates/); absent, only the built-ins are listed. */
  templates?: Pick<TemplateService, "list">;
}> = async (app, { sandbox, network: networking, templates }) => {
  const tags = ["sandboxes"];

  app.post(
    "/sandboxes",
    {
      schema: {
        tags,
        summary: "Create a sandbox",
        body: Type.Optional(CreateSandboxBody),
        response: { 201: SandboxCreated, ...errors(400, 401, 404, 409, 413, 429, 503, 507) },
      },
      // Every field is optional, so a POST with no body at all creates a default sandbox.
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      // Validated before the sandbox exists: a bad policy is a 400 and no sandbox.
      // From a snapshot with no network fields given: the snapshot's own policy applies.
      const fromSnapshot = body.snapshot_id !== undefined && body.internet_access === undefined && body.network === undefined;
      const network = fromSnapshot ? undefined : networking?.forCreate(body);
      const record = await sandbox.createSandbox(request.apiKey, {
        template: body.template,
        timeoutS: body.timeout,
        envVars: body.env_vars,
        metadata: body.metadata,
        snapshotId: body.snapshot_id,
        onTimeout: body.lifecycle?.on_timeout,
      });
      if (network) await networking?.attach(request.apiKey.tenantId, record.id, network);
      // Started from a snapshot: its files are there, its processes' memory is not (said so, never silently).
      return reply.status(201).send(body.snapshot_id ? { ...sandboxJson(record), kernel_state: "lost" as const } : sandboxJson(record));
    },
  );

  app.get(
    "/sandboxes",
    {
      schema: {
        tags,
        summary: "List your sandboxes (filter: ?state=running&metadata.KEY=VALUE, keys AND-ed)",
        querystring: SandboxListQuery,
        response: { 200: SandboxList, ...errors(400, 401) },
      },
    },
    async (request) => {
      const { limit, offset } = page(request.query);
      const result = await sandbox.listSandboxes(request.apiKey, limit, offset, listFilter(request.query));
      return { sandboxes: result.sandboxes.map(sandboxJson), total: result.total };
    },
  );

  app.get(
    "/sandboxes/:sandbox_id",
    { schema: { tags, summary: "Get a sandbox", params: SandboxIdParams, response: { 200: Type.Ref(Sandbox), ...errors(401, 404) } } },
    async (request) => sandboxJson(await sandbox.getSandbox(request.apiKey, request.params.sandbox_id)),
  );

  app.delete(
    "/sandboxes/:sandbox_id",
    {
      schema: {
        tags,
        summary: "Kill a sandbox: every process ends, its files are removed",
        params: SandboxIdParams,
        response: { 200: KillResponse, ...errors(401, 404) },
      },
    },
    async (request) => {
      await sandbox.killSandbox(request.apiKey, request.params.sandbox_id);
      return { message: "Sandbox killed", sandbox_id: request.params.sandbox_id };
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/timeout",
    {
      schema: {
        tags,
        summary: "Set the sandbox's remaining life",
        params: SandboxIdParams,
        body: SetTimeoutBody,
        response: { 200: SetTimeoutResponse, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { timeout } = request.body;
      const record = await sandbox.setSandboxTimeout(request.apiKey, request.params.sandbox_id, timeout);
      return { message: "Timeout updated", timeout, timeout_at: record.timeoutAt };
    },
  );

  app.get(
    "/templates",
    {
      schema: {
        tags: ["templates"],
        summary: "List templates",
        querystring: Pagination,
        response: { 200: TemplateList, ...errors(400, 401) },
      },
    },
    async (request) => {
      const { limit, offset } = page(request.query);
      // The built-ins, then the caller's own ready templates (src/templates/).
      const all = (await templates?.list(request.apiKey.tenantId)) ?? sandbox.templates;
      return { templates: all.slice(offset, offset + limit), limit, offset };
    },
  );
};
