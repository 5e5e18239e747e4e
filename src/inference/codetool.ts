// The built-in code tool. A request may list `{"type": "code_interpreter", "sandbox_id"?: "...",
// "timeout"?: seconds}` among its tools. Upstream it is an ordinary function tool
// `code_interpreter(language, code)`; when the model calls it, the gateway runs the code in the
// caller's sandbox (a fresh one, killed at the end, when no id is given), appends the result as a
// `tool` message and asks the model again, until it answers without calling the tool or `max_steps`
// rounds ran code (then it is asked once more with tool_choice "none").
import { ApiError } from "../errors.js";
import { isLanguage, LANGUAGES } from "../sandbox/languages.js";
import type { Caller, SandboxService } from "../sandbox/service.js";
import type { ChatMessage, ChatRequest, ToolCall, Usage } from "./types.js";

export interface CodeToolResult {
  logs: { stdout: string; stderr: string };
  error: string | null;
  execution_time_ms: number;
}

/** The slice of the sandbox service the built-in code tool uses: the same runs, gates and checks as code/run. */
export type CodeToolSandboxes = Pick<SandboxService, "createSandbox" | "runCode" | "killSandbox">;

export const DEFAULT_MAX_STEPS = 8;
/** Characters of each output stream the model is shown (the step in the response has the same cut). */
const OUTPUT_LIMIT = 16_384;

export interface CodeToolSpec {
  sandboxId: string | undefined;
  timeout: number | undefined;
}

export interface Step {
  tool_call_id: string;
  language: string;
  code: string;
  result: CodeToolResult;
}

export const CODE_FUNCTION = {
  type: "function",
  function: {
    name: "code_interpreter",
    description:
      "Runs code in a persistent sandbox (variables, imports and files survive between calls; the working directory is /home/user; no network). Returns stdout, stderr and error (null when the code ran without error).",
    parameters: {
      type: "object",
      properties: {
        language: { type: "string", enum: LANGUAGES, description: "Language of the code" },
        code: { type: "string", description: "The code to run" },
      },
      required: ["language", "code"],
      additionalProperties: false,
    },
  },
} as const;

/** The code tool of a request, if it has one; a malformed one is a 400. */
export function findCodeTool(tools: ChatRequest["tools"]): CodeToolSpec | undefined {
  if (!tools) return undefined;
  let spec: CodeToolSpec | undefined;
  for (const t of tools) {
    if (t.type === "function" && (t.function as { name?: unknown } | undefined)?.name === "code_interpreter")
      throw new ApiError("invalid_request", "The function name 'code_interpreter' is reserved for the built-in code tool");
    if (t.type !== "code_interpreter") continue;
    if (spec) throw new ApiError("invalid_request", "Only one code_interpreter tool may be given");
    for (const key of Object.keys(t)) {
      if (key !== "type" && key !== "sandbox_id" && key !== "timeout")
        throw new ApiError("invalid_request", `Unknown field '${key}' in the code_interpreter tool (fields: type, sandbox_id, timeout)`);
    }
    if (t.sandbox_id !== undefined && (typeof t.sandbox_id !== "string" || t.sandbox_id === "" || t.sandbox_id.length > 128))
      throw new ApiError("invalid_request", "The code_interpreter tool's 'sandbox_id' must be a sandbox id");
    if (t.timeout !== undefined && (typeof t.timeout !== "number" || !Number.isInteger(t.timeout) || t.timeout < 1))
      throw new ApiError("invalid_request", "The code_interpreter tool's 'timeout' must be a whole number of seconds");
    spec = { sandboxId: t.sandbox_id as string | undefined, timeout: t.timeout as number | undefined };
  }
  return spec;
}

/** The body sent upstream on each round: the code tool as a function, our own fields removed. */
export function upstreamBody(body: ChatRequest, messages: ChatMessage[], last: boolean, stream: boolean): ChatRequest {
  const { max_steps: _steps, ...rest } = body;
  const tools = (body.tools ?? []).map((t) => (t.type === "code_interpreter" ? CODE_FUNCTION : t));
  let toolChoice = body.tool_choice;
  if ((toolChoice as { type?: unknown } | undefined)?.type === "code_interpreter")
    toolChoice = { type: "function", function: { name: "code_interpreter" } };
  const out: ChatRequest = { ...rest, messages, tools, stream };
  if (last) out.tool_choice = "none";
  else if (toolChoice !== undefined) out.tool_choice = toolChoice;
  if (stream) out.stream_options = { ...body.stream_options, include_usage: true };
  else delete out.stream_options;
  return out;
}

export function addUsage(total: Usage, u: Partial<Usage> | null | undefined): void {
  if (!u) return;
  total.prompt_tokens += u.prompt_tokens ?? 0;
  total.completion_tokens += u.completion_tokens ?? 0;
  total.total_tokens = total.prompt_tokens + total.completion_tokens;
}

function cut(s: string): string {
  return s.length <= OUTPUT_LIMIT ? s : `${s.slice(0, OUTPUT_LIMIT)}\n[... ${s.length - OUTPUT_LIMIT} more characters cut]`;
}

/** Runs the tool calls of one model turn; keeps the sandbox it creates so the caller can kill it. */
export class CodeRunner {
  private sandboxId: string | undefined;
  private created = false;

  constructor(
    private readonly sandboxes: CodeToolSandboxes,
    /** The request's API key: the runs count against its limits and its tenant's, as code/run does. */
    private readonly caller: Caller,
    private readonly spec: CodeToolSpec,
  ) {
    this.sandboxId = spec.sandboxId;
  }

  async run(call: ToolCall): Promise<Step> {
    let args: { language?: unknown; code?: unknown } = {};
    let problem: string | undefined;
    try {
      args = JSON.parse(call.function.arguments || "{}");
    } catch {
      problem = "arguments are not valid JSON";
    }
    const language = typeof args.language === "string" ? args.language : "";
    const code = typeof args.code === "string" ? args.code : "";
    const known = isLanguage(language) ? language : undefined;
    if (!problem && known === undefined) problem = `language must be one of ${LANGUAGES.join(", ")}`;
    if (!problem && typeof args.code !== "string") problem = "code must be a string";
    if (problem || known === undefined) {
      return {
        tool_call_id: call.id,
        language,
        code,
        result: { logs: { stdout: "", stderr: "" }, error: `Invalid code_interpreter call: ${problem}`, execution_time_ms: 0 },
      };
    }
    if (this.sandboxId === undefined) {
      this.sandboxId = (await this.sandboxes.createSandbox(this.caller)).id;
      this.created = true;
    }
    let result: CodeToolResult;
    try {
      result = await this.sandboxes.runCode(this.caller, this.sandboxId, {
        language: known,
        code,
        timeout: this.spec.timeout,
      });
    } catch (err) {
      // The sandbox is gone or the service is full: the request fails. Anything else the model may fix.
      if (!(err instanceof ApiError) || err.status === 404 || err.status === 429 || err.status >= 500) throw err;
      result = { logs: { stdout: "", stderr: "" }, error: err.message, execution_time_ms: 0 };
    }
    const logs = { stdout: cut(result.logs.stdout), stderr: cut(result.logs.stderr) };
    return { tool_call_id: call.id, language, code, result: { logs, error: result.error, execution_time_ms: result.execution_time_ms } };
  }

  /** The `tool` message that gives a step's result to the model. */
  static message(step: Step): ChatMessage {
    const { logs, error } = step.result;
    return { role: "tool", tool_call_id: step.tool_call_id, content: JSON.stringify({ stdout: logs.stdout, stderr: logs.stderr, error }) };
  }

  /** Kills the sandbox this runner created (a given sandbox is the caller's and stays). */
  async dispose(): Promise<void> {
    if (this.created && this.sandboxId !== undefined) {
      const id = this.sandboxId;
      this.created = false;
      await this.sandboxes.killSandbox(this.caller, id).catch(() => undefined);
    }
  }
}

/** Accumulates a streamed turn (content and tool-call deltas) into an assistant message. */
export class TurnAccumulator {
  content = "";
  private readonly calls: ToolCall[] = [];
  finishReason: string | null = null;

  add(chunk: {
    choices?: Array<{
      delta?: {
        content?: string | null;
        tool_calls?: Array<{ index: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }>;
      };
      finish_reason?: string | null;
    }>;
  }): void {
    const choice = chunk.choices?.[0];
    if (!choice) return;
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (!delta) return;
    if (typeof delta.content === "string") this.content += delta.content;
    for (const d of delta.tool_calls ?? []) {
      let call = this.calls[d.index];
      if (!call) {
        call = { id: "", type: "function", function: { name: "", arguments: "" } };
        this.calls[d.index] = call;
      }
      if (d.id) call.id = d.id;
      if (d.function?.name) call.function.name += d.function.name;
      if (d.function?.arguments) call.function.arguments += d.function.arguments;
    }
  }

  toolCalls(): ToolCall[] {
    return this.calls.filter((c) => c !== undefined);
  }

  message(): ChatMessage {
    const calls = this.toolCalls();
    const m: ChatMessage = { role: "assistant", content: this.content === "" ? null : this.content };
    if (calls.length > 0) m.tool_calls = calls;
    return m;
  }
}
