// What an OpenAI-compatible upstream answers is untrusted (a deployment's replica is a tenant's own
// server): its JSON is checked here for the shapes the gateway reads (choices, deltas, tool calls,
// usage) before anything indexes into it, and a bad answer is an `upstream_error` (502) for that
// request alone, never a TypeError deep in a route or a usage batch the database refuses.
import { ApiError } from "../errors.js";
import type { ChatCompletion, ChatCompletionChunk, Usage } from "./types.js";

/** Tool calls one message may carry (their `index` picks a slot: a huge one must not make a huge array). */
const MAX_TOOL_CALLS = 128;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const bad = (what: string) => new ApiError("upstream_error", `The model's upstream answered with ${what}`);

/** A token count as the database stores it: a non-negative safe integer, else 0. */
export function tokenCount(v: unknown): number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : 0;
}

/** `usage` when it is an object of counts (the counts made safe), else undefined. */
function usageOf(v: unknown): Usage | undefined {
  if (!isObject(v)) return undefined;
  const prompt = tokenCount(v.prompt_tokens);
  const completion = tokenCount(v.completion_tokens);
  return { ...v, prompt_tokens: prompt, completion_tokens: completion, total_tokens: tokenCount(v.total_tokens) } as Usage;
}

function checkToolCalls(calls: unknown, streamed: boolean): void {
  if (calls === undefined || calls === null) return;
  if (!Array.isArray(calls) || calls.length > MAX_TOOL_CALLS) throw bad("'tool_calls' that is not a list of calls");
  for (const c of calls) {
    if (!isObject(c)) throw bad("a tool call that is not an object");
    if (streamed && !(Number.isInteger(c.index) && (c.index as number) >= 0 && (c.index as number) < MAX_TOOL_CALLS))
      throw bad(`a tool call index outside 0-${MAX_TOOL_CALLS - 1}`);
    if (c.function !== undefined && !isObject(c.function)) throw bad("a tool call whose 'function' is not an object");
    const f = c.function as Record<string, unknown> | undefined;
    for (const key of ["name", "arguments"] as const)
      if (f?.[key] !== undefined && typeof f[key] !== "string") throw bad(`a tool call whose '${key}' is not a string`);
  }
}

function checkChoices(choices: unknown, key: "delta" | "message"): void {
  if (!Array.isArray(choices)) throw bad("no 'choices' list");
  for (const c of choices) {
    if (!isObject(c)) throw bad("a choice that is not an object");
    const m = c[key];
    if (m === undefined || m === null) continue;
    if (!isObject(m)) throw bad(`a '${key}' that is not an object`);
    checkToolCalls(m.tool_calls, key === "delta");
  }
}

/** One streamed event's data as a chat completion chunk; throws upstream_error when it is not one. */
export function chunkOf(data: string): ChatCompletionChunk {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw bad("an event that is not JSON");
  }
  if (!isObject(value)) throw bad("an event that is not a JSON object");
  if (value.choices !== undefined) checkChoices(value.choices, "delta");
  const usage = usageOf(value.usage);
  return { ...value, usage: usage ?? null } as ChatCompletionChunk;
}

/** A whole chat completion's JSON, checked (its usage counts made safe); throws upstream_error when it is not one. */
export function checkedCompletion(value: unknown): ChatCompletion {
  if (!isObject(value)) throw bad("a body that is not a JSON object");
  checkChoices(value.choices, "message");
  const usage = usageOf(value.usage);
  if (usage) value.usage = usage;
  else delete value.usage;
  return value as ChatCompletion;
}

/** A whole text completion's JSON: an object with a 'choices' list of objects. */
export function checkedTextCompletion<T>(value: unknown): T {
  if (!isObject(value)) throw bad("a body that is not a JSON object");
  if (!Array.isArray(value.choices) || !value.choices.every(isObject)) throw bad("no 'choices' list of objects");
  const usage = usageOf(value.usage);
  if (usage) value.usage = usage;
  else delete value.usage;
  return value as T;
}
