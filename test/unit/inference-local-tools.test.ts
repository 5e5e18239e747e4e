// The local engine's mapping of OpenAI tool shapes to node-llama-cpp: tools and tool_choice to the
// functions offered (and whether a call is forced), messages with tool calls and results to the chat
// history, rendered by real chat templates (Llama 3.1, Qwen) in their own function-call syntax.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Llama3_1ChatWrapper, QwenChatWrapper } from "node-llama-cpp";
import { ApiError } from "../../src/errors.js";
import { toHistory, toolSetup, toToolCall } from "../../src/inference/local-tools.js";
import type { ChatMessage, ChatRequest } from "../../src/inference/types.js";

const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const noArgs = { type: "function", function: { name: "now", parameters: {} } };

const req = (extra: Partial<ChatRequest>): ChatRequest => ({ model: "m", messages: [{ role: "user", content: "hi" }], ...extra });

describe("toolSetup", () => {
  test("tools become functions; auto offers them, required and a named function force a call", () => {
    const auto = toolSetup(req({ tools: [weather, noArgs] }));
    assert.deepEqual(Object.keys(auto?.functions ?? {}), ["get_weather", "now"]);
    assert.equal(auto?.forced, false);
    assert.deepEqual(auto?.functions.get_weather?.params, weather.function.parameters);
    assert.equal(auto?.functions.now?.params, undefined, "an empty parameters object: called with none");
    assert.equal(toolSetup(req({ tools: [weather], tool_choice: "required" }))?.forced, true);
    const named = toolSetup(req({ tools: [weather, noArgs], tool_choice: { type: "function", function: { name: "now" } } }));
    assert.deepEqual(Object.keys(named?.functions ?? {}), ["now"]);
    assert.equal(named?.forced, true);
    assert.equal(toolSetup(req({ tools: [weather], tool_choice: "none" })), undefined);
    assert.equal(toolSetup(req({})), undefined);
    assert.equal(toolSetup(req({ tools: [weather], parallel_tool_calls: false }))?.maxParallel, 1);
  });

  test("bad tools are 400s", () => {
    const bad: Array<Partial<ChatRequest>> = [
      { tools: [{ type: "retrieval" }] },
      { tools: [{ type: "function", function: { name: "has space" } }] },
      { tools: [weather, weather] },
      { tools: [{ type: "function", function: { name: "f", parameters: [] } }] },
      { tools: [weather], tool_choice: { type: "function", function: { name: "other" } } },
      { tools: [weather], tool_choice: 7 },
      { tool_choice: "required" },
    ];
    for (const b of bad)
      assert.throws(
        () => toolSetup(req(b)),
        (err: unknown) => err instanceof ApiError && err.status === 400,
        JSON.stringify(b),
      );
  });
});

describe("toHistory", () => {
  const call = toToolCall("get_weather", { city: "Oslo" });
  const conversation: ChatMessage[] = [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Weather in Oslo?" },
    { role: "assistant", content: null, tool_calls: [call] },
    { role: "tool", tool_call_id: call.id, content: '{"celsius": -3}' },
  ];

  test("a call and its result are one model turn, continued after the result", () => {
    const history = toHistory(conversation);
    assert.deepEqual(
      history.map((h) => h.type),
      ["system", "user", "model"],
    );
    const model = history[2] as { type: "model"; response: unknown[] };
    assert.deepEqual(model.response, [{ type: "functionCall", name: "get_weather", params: { city: "Oslo" }, result: { celsius: -3 } }]);
    // A user message after it: a new model turn to generate.
    const next = toHistory([...conversation, { role: "assistant", content: "-3 C" }, { role: "user", content: "And tomorrow?" }]);
    assert.deepEqual(
      next.map((h) => h.type),
      ["system", "user", "model", "model", "user", "model"],
    );
  });

  test("a tool message must answer a call of the assistant message before it", () => {
    assert.throws(
      () =>
        toHistory([
          { role: "user", content: "x" },
          { role: "tool", tool_call_id: "call_x", content: "1" },
        ]),
      /tool_call_id/,
    );
    assert.throws(() => toHistory([...conversation.slice(0, 3), { role: "tool", tool_call_id: "other", content: "1" }]), /tool_call_id/);
  });

  test("real chat templates render the call and its result in their own syntax", () => {
    const history = toHistory(conversation);
    const functions = toolSetup(req({ tools: [weather] }))?.functions;
    const llama = new Llama3_1ChatWrapper()
      .generateContextState({ chatHistory: history, availableFunctions: functions })
      .contextText.toString();
    assert.match(llama, /get_weather/);
    assert.match(llama, /<function=get_weather>\{"city": ?"Oslo"\}<\/function>/);
    assert.match(llama, /"celsius": ?-3/);
    const qwen = new QwenChatWrapper().generateContextState({ chatHistory: history, availableFunctions: functions }).contextText.toString();
    assert.match(qwen, /<tool_call>[\s\S]*"name": ?"get_weather"[\s\S]*"Oslo"[\s\S]*<\/tool_call>/);
    assert.match(qwen, /<tool_response>[\s\S]*-3[\s\S]*<\/tool_response>/);
  });

  test("toToolCall gives OpenAI tool calls with unique ids and JSON arguments", () => {
    const a = toToolCall("f", { x: 1 });
    const b = toToolCall("f", undefined);
    assert.notEqual(a.id, b.id);
    assert.deepEqual(a.function, { name: "f", arguments: '{"x":1}' });
    assert.equal(b.function.arguments, "{}");
  });
});
