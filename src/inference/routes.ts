// The inference gateway's routes, under /v1/inference: OpenAI-compatible chat completions (plain,
// streamed, and with the built-in code tool), legacy text completions, the model list, and the
// caller's token usage; one plugin per operation in routes/, registered here.
//
// Hot path of a proxied completion: the body is parsed once (the route needs `model`) and its
// original bytes are what goes upstream; the upstream's answer is parsed once (for usage) and its
// bytes are what the client gets. A stream is passed on event by event as it arrives, and a client
// that disconnects aborts the upstream request.
import type { FastifyInstance } from "fastify";
import { installJsonParser } from "../api/json-body.js";
import { chatCompletionRoutes } from "./routes/chat-completions.js";
import { completionRoutes } from "./routes/completions.js";
import { modelRoutes } from "./routes/models.js";
import type { CodeToolSandboxes } from "./codetool.js";
import { keepRawBody, type ServingDeps } from "./routes/serving.js";
import { usageRoutes } from "./routes/usage.js";
import { UsageLog, type UsageStore } from "./usage.js";

/** What the gateway's routes depend on. */
export interface InferenceDeps extends ServingDeps {
  /** Where token usage is recorded. */
  usage: UsageStore;
  sandboxes: CodeToolSandboxes;
  /** Deepest JSON nesting accepted in a request body (the app's own limit; default 64). */
  maxJsonDepth?: number;
}

export { NO_CHAT_MODEL } from "./routes/serving.js";

export async function inferenceRoutes(app: FastifyInstance, opts: { deps: InferenceDeps }): Promise<void> {
  const { deps } = opts;
  const usageLog = new UsageLog(deps.usage, (err) => app.log.warn({ err }, "token usage not stored"));
  app.addHook("onClose", async () => usageLog.flush());
  // JSON bodies in this scope keep their bytes as well (same rules as the app's own parser).
  installJsonParser(app, deps.maxJsonDepth ?? 64, keepRawBody);

  const serving = {
    providers: deps.providers,
    embeddings: deps.embeddings,
    elsewhere: deps.elsewhere,
    elsewhereModels: deps.elsewhereModels,
  };
  await app.register(modelRoutes, { deps: serving });
  await app.register(usageRoutes, { usageLog });
  await app.register(chatCompletionRoutes, { serving, sandboxes: deps.sandboxes, usageLog });
  await app.register(completionRoutes, { serving, usageLog });
}
