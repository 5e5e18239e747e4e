// OpenAI chat shapes ↔ node-llama-cpp's chat history and functions, for the local engine: messages
// (with assistant `tool_calls` and `tool` results) become the chat template's history, where the
// model's own function-call syntax renders them; `tools` become the functions the template documents
// and the function-calling grammar constrains; `tool_choice` picks which ones and whether a call is
// forced. Pure mapping, no model: unit-tested on its own.
import { ApiError } from "../errors.js";
import type { ChatMessage, ChatRequest, ToolCall } from "./types.js";

type ChatHistoryItem = import("node-llama-cpp").ChatHistoryItem;
type ChatModelResponse = import("node-llama-cpp").ChatModelResponse;
type ChatModelFunctions = import("node-llama-cpp").ChatModelFunctions;
type GbnfJsonSchema = import("node-llama-cpp").GbnfJsonSchema;

const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

export interface ToolSetup {
  functions: ChatModelFunctions;
  /** tool_choice "required" or a named function: the answer must be a call. */
  forced: boolean;
  /** parallel_tool_calls: false → one call per turn. */
  maxParallel: number | undefined;
}

function textOf(m: ChatMessage): string {
  if (m.content == null) return "";
  if (typeof m.content === "string") return m.content;
  let text = "";
  for (const part of m.content) {
    if (part.type !== "text" || typeof part.text !== "string")
      throw new ApiError("invalid_request", `The local model accepts text content only, not '${part.type}'`);
    text += part.text;
  }
  return text;
}

/** A tool call's arguments as the template shows them: the parsed JSON (or the text when it is not JSON). */
function parseArguments(args: string): unknown {
  try {
    return JSON.parse(args || "{}");
  } catch {
    return args;
  }
}

/**
 * OpenAI messages as the chat template's history, ending with the model turn to generate: a new
 * one, or — after `tool` results — the same turn that made the calls, continued.
 */
export function toHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  // The calls of the latest assistant turn still waiting for their results, by id.
  let pending = new Map<string, { result: unknown }>();
  let lastModel: ChatModelResponse | undefined;
  for (const m of messages) {
    switch (m.role) {
      case "system":
      case "developer":
        history.push({ type: "system", text: textOf(m) });
        lastModel = undefined;
        break;
      case "assistant": {
        const response: ChatModelResponse["response"] = [];
        const text = textOf(m);
        if (text !== "") response.push(text);
        pending = new Map();
        for (const call of m.tool_calls ?? []) {
          const item = {
            type: "functionCall" as const,
            name: call.function?.name ?? "",
            params: parseArguments(call.function?.arguments ?? ""),
            result: null as unknown,
          };
          response.push(item);
          pending.set(call.id, item);
        }
        lastModel = { type: "model", response };
        history.push(lastModel);
        break;
      }
      case "tool": {
        const call = m.tool_call_id === undefined ? undefined : pending.get(m.tool_call_id);
        if (!call)
          throw new ApiError(
            "invalid_request",
            `A 'tool' message must answer a tool call of the assistant message before it ('tool_call_id' ${JSON.stringify(m.tool_call_id ?? null)} does not)`,
          );
        call.result = parseArguments(textOf(m));
        break;
      }
      default:
        history.push({ type: "user", text: textOf(m) });
        lastModel = undefined;
    }
  }
  const last = messages[messages.length - 1];
  if (!(last?.role === "tool" && lastModel)) history.push({ type: "model", response: [] });
  return history;
}

/** The functions a request offers the model (none for tool_choice "none"); bad tools are 400s. */
export function toolSetup(body: ChatRequest): ToolSetup | undefined {
  const tools = body.tools ?? [];
  if (tools.length === 0) {
    if (body.tool_choice !== undefined && body.tool_choice !== "none" && body.tool_choice !== "auto")
      throw new ApiError("invalid_request", "'tool_choice' needs 'tools'");
    return undefined;
  }
  const functions: Record<string, { description?: string; params?: GbnfJsonSchema }> = {};
  for (const t of tools) {
    const fn = t.function as { name?: unknown; description?: unknown; parameters?: unknown } | undefined;
    if (t.type !== "function" || typeof fn !== "object" || fn === null)
      throw new ApiError("invalid_request", `The local model supports function tools only, not '${t.type}'`);
    if (typeof fn.name !== "string" || !FUNCTION_NAME.test(fn.name))
      throw new ApiError(
        "invalid_request",
        "A function tool's name must be 1-64 letters, digits, '_', '.', '-' (starting with a letter or '_')",
      );
    if (fn.name in functions) throw new ApiError("invalid_request", `The function '${fn.name}' is given twice`);
    if (fn.parameters !== undefined && (typeof fn.parameters !== "object" || fn.parameters === null || Array.isArray(fn.parameters)))
      throw new ApiError("invalid_request", `The parameters of '${fn.name}' must be a JSON schema object`);
    const params = fn.parameters as GbnfJsonSchema | undefined;
    // A function without parameters is called with none (no grammar for an empty object).
    const shape = params as { type?: unknown; properties?: object } | undefined;
    const empty =
      shape === undefined || ((shape.type === undefined || shape.type === "object") && Object.keys(shape.properties ?? {}).length === 0);
    functions[fn.name] = {
      description: typeof fn.description === "string" ? fn.description : undefined,
      params: empty ? undefined : params,
    };
  }
  const choice = body.tool_choice;
  if (choice === undefined || choice === "auto") return { functions, forced: false, maxParallel: maxParallel(body) };
  if (choice === "none") return undefined;
  if (choice === "required") return { functions, forced: true, maxParallel: maxParallel(body) };
  const named = (choice as { type?: unknown; function?: { name?: unknown } } | null)?.function?.name;
  if ((choice as { type?: unknown } | null)?.type === "function" && typeof named === "string") {
    const only = functions[named];
    if (!only) throw new ApiError("invalid_request", `'tool_choice' names '${named}', which is not among the tools`);
    return { functions: { [named]: only }, forced: true, maxParallel: 1 };
  }
  throw new ApiError(
    "invalid_request",
    `'tool_choice' must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}`,
  );
}

function maxParallel(body: ChatRequest): number | undefined {
  return body.parallel_tool_calls === false ? 1 : undefined;
}

let callSeq = 0;

/** A function call the model made, as an OpenAI tool call. */
export function toToolCall(name: string, params: unknown): ToolCall {
  callSeq = (callSeq + 1) % 1_000_000;
  return {
    id: `call_${Date.now().toString(36)}${callSeq.toString(36)}${Math.random().toString(36).slice(2, 8)}`,
    type: "function",
    function: { name, arguments: params === undefined ? "{}" : JSON.stringify(params) },
  };
}
