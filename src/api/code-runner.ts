// Running code for a tenant: the one path from a validated request to a kernel, shared by
// POST /code/run and the inference gateway's built-in code tool.
import type { Config } from "../config.js";
import { ApiError, invalid } from "../errors.js";
import type { Language } from "../sandbox/box.js";
import { prepareJs } from "../sandbox/transpile.js";
import type { Services } from "./services.js";

export interface CodeRunInput {
  code: string;
  language: Language;
  /** Seconds; the default of 30 applies when absent. */
  timeout?: number;
  contextId?: string;
  environment?: Record<string, string>;
}

/** The seed's code-run result. */
export interface CodeRunOutput {
  logs: { stdout: string; stderr: string };
  error: string | null;
  execution_time_ms: number;
}

/** The run's timeout in seconds: the client's value, else the default of 30; above the configured maximum is a 400. */
export function effectiveTimeout(bodyTimeout: number | undefined, config: Pick<Config, "defaultRunTimeoutS" | "maxRunTimeoutS">): number {
  const timeoutS = bodyTimeout ?? config.defaultRunTimeoutS;
  if (timeoutS > config.maxRunTimeoutS) throw invalid(`'timeout' must be at most ${config.maxRunTimeoutS} seconds`);
  return timeoutS;
}

export async function runCode(services: Services, tenantId: string, sandboxId: string, input: CodeRunInput): Promise<CodeRunOutput> {
  const { sandboxes, config, metrics } = services;
  const { code, language } = input;
  const timeoutS = effectiveTimeout(input.timeout, config);
  if (Buffer.byteLength(code) > config.maxCodeBytes)
    throw new ApiError("payload_too_large", `'code' is larger than ${config.maxCodeBytes} bytes`);
  const box = sandboxes.box(tenantId, sandboxId);
  let kernel: string | undefined;
  let cwd: string | undefined;
  if (input.contextId !== undefined) {
    const context = services.contexts.get(sandboxId, input.contextId);
    if (context.language !== language) throw invalid(`Context '${input.contextId}' runs ${context.language}, not ${language}`);
    kernel = context.kernel;
    cwd = context.cwd; // a context kernel restarted after a timeout comes back in its own cwd
  }
  const prepared =
    language === "javascript" || language === "typescript" ? prepareJs(code, language === "typescript") : { code, isAsync: false };
  const result = await sandboxes.execute(() =>
    box.run({ language, code: prepared.code, isAsync: prepared.isAsync, timeoutS, kernel, cwd, env: input.environment }),
  );
  metrics?.executions.inc({ language, outcome: result.outcome });
  if (result.outcome === "kernel_lost" || result.error?.includes("state was lost")) metrics?.kernelRestarts.inc({ language });
  return { logs: { stdout: result.stdout, stderr: result.stderr }, error: result.error, execution_time_ms: result.executionTimeMs };
}
