// Code contexts: POST/GET/DELETE /sandboxes/{id}/code/contexts[/{context_id}]. Each context is its
// own kernel (own globals, own working directory) inside the sandbox; code/run with `context_id`
// runs there. A context lives until it is deleted or its sandbox ends.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { CodeContext } from "../contexts.js";
import type { SandboxService } from "../service.js";
import { errors, SandboxIdParams } from "../../api/schemas/common.js";
import {
  CodeContext as CodeContextSchema,
  ContextList,
  ContextParams,
  CreateContextBody,
  DeleteContextResult,
} from "../schemas/contexts.js";

export const contextRoutes: FastifyPluginAsyncTypebox<{ sandbox: SandboxService }> = async (app, { sandbox }) => {
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
      const id = request.params.sandbox_id;
      const context = await sandbox.createContext(request.apiKey, id, { language: request.body?.language, cwd: request.body?.cwd });
      const record = await sandbox.getSandbox(request.apiKey, id);
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
      const id = request.params.sandbox_id;
      const list = await sandbox.listContexts(request.apiKey, id);
      const record = await sandbox.getSandbox(request.apiKey, id);
      return { contexts: list.map((c) => json(c, record.timeoutAt)) };
    },
  );

  app.get(
    "/sandboxes/:sandbox_id/code/contexts/:context_id",
    {
      schema: { tags, summary: "Get a code context", params: ContextParams, response: { 200: CodeContextSchema, ...errors(401, 404) } },
    },
    async (request) => {
      const { sandbox_id: id, context_id: contextId } = request.params;
      const context = await sandbox.getContext(request.apiKey, id, contextId);
      return json(context, (await sandbox.getSandbox(request.apiKey, id)).timeoutAt);
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
      const { sandbox_id: id, context_id: contextId } = request.params;
      await sandbox.deleteContext(request.apiKey, id, contextId);
      return { message: "Context deleted", context_id: contextId };
    },
  );
};
