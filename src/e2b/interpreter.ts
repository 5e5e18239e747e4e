// The E2B code interpreter (port 49999 in E2B; here the same /e2b prefix, told apart by path):
// POST /execute streams a run as NDJSON lines (stdout, stderr, result, error,
// number_of_executions, end_of_execution) from the sandbox service's run observer, and
// /contexts maps onto the service's code contexts. Rich results are the service's own (the same
// representations E2B names: text, html, markdown, png, jpeg, svg, json, latex).
import { PassThrough } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { Services } from "../api/services.js";
import { invalid } from "../errors.js";
import { isLanguage, type Language } from "../sandbox/languages.js";
import type { CodeContext } from "../sandbox/contexts.js";
import type { RichResult } from "../sandbox/protocol.js";
import { installTextErrors } from "./errors.js";
import { targetResolver } from "./target.js";

/** E2B's language names (and this service's own) as this service's languages. */
const ALIASES: Record<string, Language> = { js: "javascript", ts: "typescript", sh: "bash", python3: "python" };

function languageOf(value: unknown): Language {
  if (value === undefined || value === null) return "python";
  const name = typeof value === "string" ? (ALIASES[value.toLowerCase()] ?? value.toLowerCase()) : value;
  if (!isLanguage(name)) throw invalid(`Language '${String(value).slice(0, 40)}' is not supported (python, javascript, typescript, bash)`);
  return name;
}

const ERROR_LINE = /^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning)\w*)(?::\s?(.*))?$/;

/** A run's error text as E2B's {name, value, traceback}: the exception line (Python's is last, Node's first). */
export function errorParts(text: string, language: Language): { name: string; value: string; traceback: string } {
  const lines = text.split("\n").map((l) => l.trimEnd());
  const candidates = lines.filter((l) => ERROR_LINE.test(l.trim()));
  const pick = language === "python" ? candidates.at(-1) : candidates[0];
  const m = pick ? ERROR_LINE.exec(pick.trim()) : null;
  if (m) return { name: m[1] as string, value: m[2] ?? "", traceback: text };
  return { name: "Error", value: lines.find((l) => l.trim() !== "")?.trim() ?? text, traceback: text };
}

const contextJson = (c: CodeContext) => ({ id: c.id, language: c.language, cwd: c.cwd });

export async function interpreterRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  installTextErrors(app);
  const { sandbox, sandboxes, config } = services;
  const sandboxIdOf = targetResolver(services.sandboxes);
  /** Executions so far per sandbox and context (E2B's execution_count); forgotten with the sandbox. */
  const counts = new Map<string, Map<string, number>>();
  sandboxes.onEnded((id) => counts.delete(id));
  const count = (id: string, key: string, reset = false) => {
    let perSandbox = counts.get(id);
    if (!perSandbox) {
      perSandbox = new Map();
      counts.set(id, perSandbox);
    }
    const n = reset ? 0 : (perSandbox.get(key) ?? 0) + 1;
    perSandbox.set(key, n);
    return n;
  };

  app.post<{ Body: { code?: unknown; context_id?: unknown; language?: unknown; env_vars?: unknown } | undefined }>(
    "/execute",
    async (request, reply) => {
      const body = request.body ?? {};
      if (typeof body.code !== "string") throw invalid("'code' is required");
      const id = sandboxIdOf(request);
      const contextId = typeof body.context_id === "string" && body.context_id !== "" ? body.context_id : undefined;
      const language = contextId ? (await sandbox.getContext(request.apiKey, id, contextId)).language : languageOf(body.language);
      const env = body.env_vars ?? undefined;
      if (env !== undefined && (typeof env !== "object" || Object.values(env as object).some((v) => typeof v !== "string")))
        throw invalid("'env_vars' must map strings to strings");
      const gone = new AbortController();
      reply.raw.once("close", () => gone.abort());
      let out: PassThrough | undefined;
      const line = (message: object) => out?.write(`${JSON.stringify(message)}\n`);
      const observer = {
        // The stream opens once the run is accepted: a refusal before that is a plain HTTP error.
        started: () => {
          out = new PassThrough();
          reply.holdOpen(); // revoking the key ends the stream, and the run with it
          reply.status(200).header("content-type", "application/x-ndjson").send(out);
        },
        output: (stream: "stdout" | "stderr", text: string) => line({ type: stream, text }),
        result: (r: RichResult) => line({ type: "result", ...r, is_main_result: r.is_main_result ?? false }),
        signal: gone.signal,
      };
      try {
        const result = await sandbox.runCode(
          request.apiKey,
          id,
          // E2B puts no time limit on a run but the client's own: the longest this service allows.
          { code: body.code, language, contextId, environment: env as Record<string, string> | undefined, timeout: config.maxRunTimeoutS },
          observer,
        );
        if (result.error !== null) line({ type: "error", ...errorParts(result.error, language) });
      } catch (err) {
        if (!out) throw err;
        line({ type: "error", name: "ServiceError", value: (err as Error).message, traceback: "" });
      }
      line({ type: "number_of_executions", execution_count: count(id, contextId ?? language) });
      line({ type: "end_of_execution" });
      out?.end();
      return reply;
    },
  );

  app.post<{ Body: { language?: unknown; cwd?: unknown } | undefined }>("/contexts", async (request) => {
    const body = request.body ?? {};
    if (body.cwd !== undefined && body.cwd !== null && typeof body.cwd !== "string") throw invalid("'cwd' must be a string");
    const context = await sandbox.createContext(request.apiKey, sandboxIdOf(request), {
      language: languageOf(body.language),
      cwd: (body.cwd as string | null | undefined) ?? undefined,
    });
    return contextJson(context);
  });

  app.get("/contexts", async (request) => (await sandbox.listContexts(request.apiKey, sandboxIdOf(request))).map(contextJson));

  app.delete<{ Params: { contextId: string } }>("/contexts/:contextId", async (request, reply) => {
    await sandbox.deleteContext(request.apiKey, sandboxIdOf(request), request.params.contextId);
    return reply.status(204).send();
  });

  // A fresh kernel in the same context (same id, language and working directory); its state is gone.
  app.post<{ Params: { contextId: string } }>("/contexts/:contextId/restart", async (request, reply) => {
    const id = sandboxIdOf(request);
    const context = await sandbox.getContext(request.apiKey, id, request.params.contextId);
    const box = await sandboxes.box(request.apiKey.tenantId, id);
    await box.killKernel(context.kernel);
    await box.startKernel(context.kernel, context.language, context.cwd);
    count(id, context.id, true);
    return reply.status(204).send();
  });
}
