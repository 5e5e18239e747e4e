// Code contexts: POST/GET/DELETE /sandboxes/{id}/code/contexts[/{context_id}]. Each context is its
// own kernel (own globals, own working directory) inside the sandbox; code/run with `context_id`
// runs there. A context lives until it is deleted or its sandbox ends.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { ApiError, invalid } from "../../errors.js";
import type { CodeContext } from "../../sandbox/contexts.js";
import type { Services } from "../services.js";
import { errors, SandboxIdParams } from "../schemas/common.js";
import {
  CodeContext as CodeContextSchema,
  ContextList,
  ContextParams,
  CreateContextBody,
  DeleteContextResult,
} from "../schemas/contexts.js";

const HOME = "/home/user";

/** A sandbox path as the supervisor resolves it: absolute, or relative to /home/user, normalised. */
function sandboxPath(p: string): string {
  const parts: string[] = [];
  for (const part of (p.startsWith("/") ? p : `${HOME}/${p}`).split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return `/${parts.join("/")}`;
}

export const contextRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const { sandboxes, contexts } = services;
  // Contexts are processes of their sandbox: forget them when it ends.
  sandboxes.onEnded(contexts.dropSandbox);
  const tags = ["code"];

  const json = (c: CodeContext, expiresAt: string) => ({
    context_id: c.id,
    language: c.language,
    cwd: c.cwd,
    created_at: c.createdAt,
    expires_at: expiresAt,
    status: "active" as const,
  });

  app.post(
    "/sandboxes/:sandbox_id/code/contexts",
    {
      schema: {
        tags,
        summary: "Create a code context (an isolated kernel)",
        description:
          "Starts a new kernel for `language` (default python) in `cwd` (default /home/user; must be a directory in the sandbox). " +
          "Pass its `context_id` to code/run to run there.",
        params: SandboxIdParams,
        body: Type.Optional(CreateContextBody),
        response: { 201: CodeContextSchema, ...errors(400, 401, 404) },
      },
      // Every field is optional: no body at all is a default context.
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
    },
    async (request, reply) => {
      const { tenantId } = request.apiKey;
      const id = request.params.sandbox_id;
      const language = request.body?.language ?? "python";
      const cwd = sandboxPath(request.body?.cwd ?? HOME);
      if (cwd.includes("\0")) throw invalid("'cwd' must not contain NUL bytes");
      const box = sandboxes.box(tenantId, id);
      const stat = await box.file({ action: "stat", path: cwd });
      if (stat.header.ev !== "file" || stat.header.status !== "ok")
        throw invalid(`'cwd' could not be checked: ${String(stat.header.message ?? "")}`);
      if (stat.header.is_dir !== true) throw invalid(`'cwd' ${cwd} is not a directory in the sandbox`);
      const context = contexts.add(id, language, cwd);
      try {
        await box.startKernel(context.kernel, language, cwd);
      } catch (err) {
        contexts.remove(id, context.id);
        throw new ApiError("invalid_state", `The context's ${language} kernel could not be started: ${(err as Error).message}`);
      }
      const record = sandboxes.get(tenantId, id);
      return reply.status(201).send(json(context, record.timeoutAt));
    },
  );

  app.get(
    "/sandboxes/:sandbox_id/code/contexts",
    {
      schema: {
        tags,
        summary: "List a sandbox's code contexts",
        params: SandboxIdParams,
        response: { 200: ContextList, ...errors(401, 404) },
      },
    },
    async (request) => {
      const record = sandboxes.get(request.apiKey.tenantId, request.params.sandbox_id);
      return { contexts: contexts.list(record.id).map((c) => json(c, record.timeoutAt)) };
    },
  );

  app.get(
    "/sandboxes/:sandbox_id/code/contexts/:context_id",
    {
      schema: { tags, summary: "Get a code context", params: ContextParams, response: { 200: CodeContextSchema, ...errors(401, 404) } },
    },
    async (request) => {
      const record = sandboxes.get(request.apiKey.tenantId, request.params.sandbox_id);
      return json(contexts.get(record.id, request.params.context_id), record.timeoutAt);
    },
  );

  app.delete(
    "/sandboxes/:sandbox_id/code/contexts/:context_id",
    {
      schema: {
        tags,
        summary: "Delete a code context: its kernel process ends",
        params: ContextParams,
        response: { 200: DeleteContextResult, ...errors(401, 404) },
      },
    },
    async (request) => {
      const { tenantId } = request.apiKey;
      const { sandbox_id: id, context_id: contextId } = request.params;
      sandboxes.get(tenantId, id);
      const context = contexts.get(id, contextId);
      const box = sandboxes.box(tenantId, id);
      await box.killKernel(context.kernel);
      contexts.remove(id, contextId);
      return { message: "Context deleted", context_id: contextId };
    },
  );
};
