// The template routes (under /v1/agents): build from an image, build status and logs, get, delete,
// and a running sandbox saved as a template.
// The list (GET /templates) stays with the sandbox routes and asks the same service.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { errors, SandboxIdParams } from "../api/schemas/common.js";
import { EventStream } from "../api/sse.js";
import {
  BuildAccepted,
  BuildBody,
  BuildIdParams,
  BuildList,
  BuildListQuery,
  BuildStatus,
  SaveSandboxBody,
  TemplateDetail,
  TemplateIdParams,
} from "./schemas.js";
import type { TemplateService } from "./service.js";
import type { BuildRecord } from "./store.js";

function statusJson(b: BuildRecord) {
  return {
    build_id: b.id,
    template_id: b.templateId,
    status: b.status,
    phase: b.phase,
    progress_percent: b.progress,
    error: b.error,
    started_at: b.startedAt,
    completed_at: b.completedAt,
    node_id: b.nodeId,
  };
}

export const templateRoutes: FastifyPluginAsyncTypebox<{ templates: TemplateService }> = async (app, { templates }) => {
  app.post(
    "/templates/build",
    {
      schema: {
        tags: ["templates"],
        summary: "Build a template from an image",
        description:
          "Starts building a template of your own from `docker_image` (pulled from a registry the operator allows; `registry_auth` for a private one), " +
          "or from `template_id` (one of your templates), and then runs `build_steps` on it in a build sandbox. Answers 202 at once; follow the " +
          "build with GET /templates/builds/{build_id}/status or its logs. Sandboxes created with the template's id (or name) run in its root " +
          "filesystem. Or from `dockerfile` (its COPY/ADD files in `context`; multi-stage with COPY --from), translated onto the same steps.",
        body: BuildBody,
        response: { 202: BuildAccepted, ...errors(400, 401, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const { template, build } = await templates.build(request.apiKey.tenantId, {
        name: b.name,
        ...(b.description !== undefined ? { description: b.description } : {}),
        ...(b.docker_image !== undefined ? { dockerImage: b.docker_image } : {}),
        ...(b.dockerfile !== undefined ? { dockerfile: b.dockerfile } : {}),
        ...(b.context !== undefined ? { context: b.context } : {}),
        ...(b.build_steps !== undefined ? { buildSteps: b.build_steps } : {}),
        ...(b.template_id !== undefined ? { baseTemplateId: b.template_id } : {}),
        ...(b.vcpu_count !== undefined ? { vcpuCount: b.vcpu_count } : {}),
        ...(b.memory_mb !== undefined ? { memoryMb: b.memory_mb } : {}),
        ...(b.disk_mb !== undefined ? { diskMb: b.disk_mb } : {}),
        ...(b.start_cmd !== undefined ? { startCmd: b.start_cmd } : {}),
        ...(b.ready_cmd !== undefined ? { readyCmd: b.ready_cmd } : {}),
        ...(b.environment !== undefined ? { environment: b.environment } : {}),
        ...(b.tags !== undefined ? { tags: b.tags } : {}),
        ...(b.registry_auth !== undefined ? { registryAuth: b.registry_auth } : {}),
        ...(b.network !== undefined ? { network: b.network } : {}),
      });
      reply.code(202);
      return { build_id: build.id, template_id: template.id, status: build.status, message: "Build started" };
    },
  );

  app.get(
    "/templates/builds",
    {
      schema: {
        tags: ["templates"],
        summary: "Your latest template builds",
        description: "Newest first, each with its status (as GET /templates/builds/{build_id}/status shows it) and its template's name.",
        querystring: BuildListQuery,
        response: { 200: BuildList, ...errors(401) },
      },
    },
    async (request) => ({
      builds: (await templates.builds(request.apiKey.tenantId, Number(request.query.limit ?? 50))).map((b) => ({
        ...statusJson(b),
        template_name: b.templateName,
        created_at: b.createdAt,
      })),
    }),
  );

  app.get(
    "/templates/builds/:build_id/status",
    {
      schema: {
        tags: ["templates"],
        summary: "A template build's status",
        params: BuildIdParams,
        response: { 200: BuildStatus, ...errors(401, 404) },
      },
    },
    async (request) => statusJson(await templates.status(request.apiKey.tenantId, request.params.build_id)),
  );

  app.delete(
    "/templates/builds/:build_id",
    {
      schema: {
        tags: ["templates"],
        summary: "Cancel a template build",
        description:
          "Cancels a build of yours that waits or runs: a waiting one leaves the queue, a running one has its tools and its build " +
          "sandbox killed. Answers once it has ended, with its status (`cancelled`); its template is `failed` (delete it, or build " +
          "again under another name) and what the build held is given back. 409 when the build has ended already.",
        params: BuildIdParams,
        response: { 200: BuildStatus, ...errors(401, 404, 409) },
      },
    },
    async (request) => statusJson(await templates.cancel(request.apiKey.tenantId, request.params.build_id)),
  );

  app.get(
    "/templates/builds/:build_id/logs",
    {
      schema: {
        tags: ["templates"],
        summary: "A template build's log",
        description:
          "text/event-stream: one `log` event ({n, at, line}) per line so far, then each new line as the build writes it, then `end` " +
          "with the build's status. A log keeps its latest lines (AGENTBOX_TEMPLATE_LOG_KB); when earlier ones were dropped, a first " +
          "`log` event with `n` -1 says how many. Kept until the build's template is deleted.",
        params: BuildIdParams,
        response: { ...errors(401, 404) },
      },
    },
    async (request, reply) => {
      const tenantId = request.apiKey.tenantId;
      const log = await templates.log(tenantId, request.params.build_id);
      const stream = new EventStream(request, reply);
      stream.open();
      await new Promise<void>((resolve) => {
        const unfollow = log.follow({
          line: (l) => stream.send("log", l),
          end: () => resolve(),
        });
        stream.signal.addEventListener("abort", () => {
          unfollow();
          resolve();
        });
      });
      stream.end(statusJson(await templates.status(tenantId, request.params.build_id)));
      return reply;
    },
  );

  app.get(
    "/templates/:template_id",
    {
      schema: {
        tags: ["templates"],
        summary: "Get a template",
        params: TemplateIdParams,
        response: { 200: TemplateDetail, ...errors(401, 404) },
      },
    },
    async (request) => templates.get(request.apiKey.tenantId, request.params.template_id),
  );

  app.delete(
    "/templates/:template_id",
    {
      schema: {
        tags: ["templates"],
        summary: "Delete a template",
        description: "204. Refused (409) while live sandboxes run from it or while it builds; built-in templates cannot be deleted (400).",
        params: TemplateIdParams,
        response: { 204: Type.Null(), ...errors(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      await templates.delete(request.apiKey.tenantId, request.params.template_id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/sandboxes/:sandbox_id/template",
    {
      schema: {
        tags: ["templates"],
        summary: "Save a sandbox as a template",
        description:
          "201 with the new template, ready at once. It runs in the same root as the sandbox (its template's root filesystem, shared, or " +
          "the built-ins' system) and every sandbox created from it starts with the files the sandbox's /home/user holds now (archived " +
          "inside the sandbox, as a snapshot is, and held to the snapshot size limit); its limits, environment and workdir are those of " +
          "the sandbox's template. The sandbox must be running (409 when paused). 409 when the name is taken, 429 past the template count.",
        params: SandboxIdParams,
        body: SaveSandboxBody,
        response: { 201: TemplateDetail, ...errors(400, 401, 404, 409, 413, 429, 507) },
      },
    },
    async (request, reply) => {
      const { name, description } = request.body;
      const detail = await templates.saveSandbox(request.apiKey.tenantId, request.params.sandbox_id, {
        name,
        ...(description !== undefined ? { description } : {}),
      });
      reply.code(201);
      return detail;
    },
  );
};
