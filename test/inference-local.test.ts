// End to end: the local engine (a "local" provider running a GGUF model with node-llama-cpp) in the
// real service. The model is a tiny llama-architecture GGUF with random weights that the suite
// writes itself (test/helpers/gguf.ts): the real load, tokenize, generate and stream path, with no
// download. Its output rows for control and byte tokens are zero, so greedy decoding (temperature 0)
// never ends by itself and is deterministic: `max_tokens` and `stop` decide where answers end.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { LANGUAGES } from "../src/sandbox/languages.js";
import { writeTinyLlama } from "./helpers/gguf.js";
import { eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer, withServiceLog } from "./helpers/server.js";

const MODEL = "tiny-llama";
const CONTEXT = 2048;

interface Completion {
  object: string;
  model: string;
  choices: Array<{ index: number; message: { role: string; content: string }; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

interface Chunk {
  object: string;
  model: string;
  choices: Array<{ index: number; delta: { role?: string; content?: string }; finish_reason: string | null }>;
  usage?: { prompt_tokens: number; completion_tokens: number };
}

describe("local engine (tiny GGUF model)", () => {
  let server: TestServer;
  let call: ReturnType<typeof client>;
  let dir: string;
  const messages = [
    { role: "system", content: "You are a test." },
    { role: "user", content: "hello world the cat sat on the mat" },
  ];

  /** Streams a request; stops reading (closing the connection) after `stopAfter` events if given. */
  async function stream(body: Record<string, unknown>, stopAfter?: number): Promise<{ status: number; chunks: Chunk[]; done: boolean }> {
    const controller = new AbortController();
    const res = await fetch(`${server.url}/v1/inference/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages, temperature: 0, ...body, stream: true }),
      signal: controller.signal,
    });
    const chunks: Chunk[] = [];
    let done = false;
    let buf = "";
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      buf += decoder.decode(value, { stream: true });
      let i = buf.indexOf("\n\n");
      while (i >= 0) {
        const data = buf.slice(0, i).replace(/^data: /, "");
        buf = buf.slice(i + 2);
        if (data === "[DONE]") done = true;
        else chunks.push(JSON.parse(data) as Chunk);
        i = buf.indexOf("\n\n");
      }
      if (stopAfter !== undefined && chunks.length >= stopAfter) {
        controller.abort();
        break;
      }
    }
    return { status: res.status, chunks, done };
  }

  const text = (chunks: Chunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");

  async function complete(body: Record<string, unknown>): Promise<{ status: number; body: Completion }> {
    return call<Completion>("POST", "/v1/inference/chat/completions", { model: MODEL, messages, temperature: 0, ...body });
  }

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-local-"));
    const modelPath = writeTinyLlama(path.join(dir, "tiny.gguf"), { contextLength: CONTEXT });
    const file = path.join(dir, "providers.json");
    fs.writeFileSync(
      file,
      JSON.stringify({
        providers: [
          // `model_path` relative to the providers file; one sequence, so a leaked one would block the next request.
          {
            name: "local",
            type: "local",
            model_path: path.basename(modelPath),
            model_name: MODEL,
            context_size: CONTEXT,
            threads: 1,
            parallel: 1,
            timeout_ms: 20_000,
          },
        ],
      }),
    );
    server = await startServer({ env: { AGENTBOX_PROVIDERS_FILE: file } });
    call = client(server);
  });

  after(async () => {
    await server?.dispose();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test("the model is listed", async () => {
    const res = await call<{ data: Array<{ id: string; owned_by: string; capabilities: string[] }> }>("GET", "/v1/inference/models");
    // After the providers' models, the embedded default embedding model.
    assert.deepEqual(
      res.body.data.map((m) => [m.id, m.owned_by, m.capabilities]),
      [
        [MODEL, "local", ["chat", "completions"]],
        ["universal-sentence-encoder-lite", "agentbox", ["embeddings"]],
      ],
    );
  });

  test("a completion: generated text, finish_reason length at max_tokens, usage counted in tokens; greedy is deterministic", async () => {
    const res = await complete({ max_tokens: 8 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.object, "chat.completion");
    assert.equal(res.body.model, MODEL);
    const choice = res.body.choices[0];
    assert.equal(choice?.message.role, "assistant");
    assert.ok((choice?.message.content.length ?? 0) > 0);
    assert.equal(choice?.finish_reason, "length");
    assert.equal(res.body.usage.completion_tokens, 8);
    assert.ok(res.body.usage.prompt_tokens > 10);
    assert.equal(res.body.usage.total_tokens, res.body.usage.prompt_tokens + 8);
    const again = await complete({ max_tokens: 8 });
    assert.equal(again.body.choices[0]?.message.content, choice?.message.content);
  });

  test("max_tokens bounds the generated tokens", async () => {
    for (const n of [1, 3, 17]) {
      const res = await complete({ max_tokens: n });
      assert.equal(res.body.usage.completion_tokens, n);
      assert.equal(res.body.choices[0]?.finish_reason, "length");
    }
    // max_completion_tokens (the newer name) too.
    const res = await complete({ max_completion_tokens: 2 });
    assert.equal(res.body.usage.completion_tokens, 2);
  });

  test("streaming: a chunk per piece of text, the same text as the completion, usage chunk on request, [DONE]", async () => {
    const whole = await complete({ max_tokens: 12 });
    const { status, chunks, done } = await stream({ max_tokens: 12, stream_options: { include_usage: true } });
    assert.equal(status, 200);
    assert.ok(done);
    for (const c of chunks) {
      assert.equal(c.object, "chat.completion.chunk");
      assert.equal(c.model, MODEL);
    }
    assert.equal(chunks[0]?.choices[0]?.delta.role, "assistant");
    const content = chunks.filter((c) => c.choices[0]?.delta.content);
    assert.ok(content.length >= 2 && content.length <= 12, `${content.length} content chunks`);
    assert.equal(text(chunks), whole.body.choices[0]?.message.content);
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    assert.equal(finish?.choices[0]?.finish_reason, "length");
    const usage = chunks.at(-1);
    assert.deepEqual(usage?.choices, []);
    assert.equal(usage?.usage?.completion_tokens, 12);
    // Without include_usage there is no usage chunk.
    const plain = await stream({ max_tokens: 3 });
    assert.ok(plain.chunks.every((c) => c.choices.length === 1 && c.usage === undefined));
  });

  test("stop strings end the answer before them, in completions and streams", async () => {
    const full = (await complete({ max_tokens: 40 })).body.choices[0]?.message.content ?? "";
    // The latest 3-character stop string that first occurs where it is (greedy output may loop).
    let at = -1;
    for (let k = full.length - 3; k > 0; k--) {
      const s = full.slice(k, k + 3);
      if (s.trim().length === 3 && full.indexOf(s) === k) {
        at = k;
        break;
      }
    }
    assert.ok(at > 0, `no usable stop string in ${JSON.stringify(full)}`);
    const stop = full.slice(at, at + 3);
    const res = await complete({ max_tokens: 40, stop: ["zzz-never", stop] });
    assert.equal(res.body.choices[0]?.message.content, full.slice(0, at));
    assert.equal(res.body.choices[0]?.finish_reason, "stop");
    assert.ok(res.body.usage.completion_tokens < 40);
    const streamed = await stream({ max_tokens: 40, stop });
    assert.equal(text(streamed.chunks), full.slice(0, at));
    assert.equal(streamed.chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, "stop");
  });

  test("a client that disconnects mid-stream stops generation and frees the sequence", async (t) => {
    const before = await call<{ usage: Array<{ requests: number; completion_tokens: number }> }>("GET", "/v1/inference/usage");
    const row0 = before.body.usage[0] ?? { requests: 0, completion_tokens: 0 };
    const maxTokens = CONTEXT - 200;
    const { chunks } = await stream({ max_tokens: maxTokens }, 4);
    assert.ok(chunks.length >= 4);
    // The aborted request is recorded with what was generated, far short of max_tokens.
    let row = row0;
    assert.ok(
      await eventually(async () => {
        const now = await call<{ usage: Array<{ requests: number; completion_tokens: number }> }>("GET", "/v1/inference/usage");
        row = now.body.usage[0] ?? row0;
        return row.requests === row0.requests + 1;
      }, 10_000),
      "the aborted request was not recorded",
    );
    const generated = row.completion_tokens - row0.completion_tokens;
    t.diagnostic(`aborted after 4 chunks: ${generated} tokens generated of max_tokens ${maxTokens}`);
    assert.ok(generated >= 3 && generated < maxTokens / 2, `${generated} tokens generated after the client left`);
    // With one sequence, the next request can only run if the aborted one gave it back.
    const next = await complete({ max_tokens: 2 });
    assert.equal(next.status, 200);
    assert.equal(next.body.usage.completion_tokens, 2);
  });

  test("legacy completions: the prompt continued as it is, n choices per prompt, echo, stop, usage", async () => {
    type Text = {
      object: string;
      model: string;
      choices: Array<{ index: number; text: string; finish_reason: string }>;
      usage: Completion["usage"];
    };
    const res = await call<Text>("POST", "/v1/inference/completions", {
      model: MODEL,
      prompt: ["the cat sat on", "one two three"],
      n: 2,
      max_tokens: 5,
      temperature: 0,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.object, "text_completion");
    assert.deepEqual(
      res.body.choices.map((c) => [c.index, c.finish_reason]),
      [
        [0, "length"],
        [1, "length"],
        [2, "length"],
        [3, "length"],
      ],
    );
    const [a, b, c, d] = res.body.choices.map((ch) => ch.text);
    assert.equal(a, b, "greedy: the same prompt gives the same text");
    assert.equal(c, d);
    assert.notEqual(a, c, "each prompt is continued on its own");
    assert.equal(res.body.usage.completion_tokens, 20);
    assert.ok(res.body.usage.prompt_tokens >= 8);
    // No chat template: a text completion differs from the chat answer to the same words.
    const chat = await call<Completion>("POST", "/v1/inference/chat/completions", {
      model: MODEL,
      messages: [{ role: "user", content: "the cat sat on" }],
      max_tokens: 5,
      temperature: 0,
    });
    assert.notEqual(chat.body.choices[0]?.message.content, a);

    const echoed = await call<Text>("POST", "/v1/inference/completions", {
      model: MODEL,
      prompt: "the cat sat on",
      max_tokens: 5,
      temperature: 0,
      echo: true,
    });
    assert.equal(echoed.body.choices[0]?.text, `the cat sat on${a}`);
    const stop = (a ?? "").slice(2, 5);
    const stopped = await call<Text>("POST", "/v1/inference/completions", {
      model: MODEL,
      prompt: "the cat sat on",
      max_tokens: 5,
      temperature: 0,
      stop,
    });
    assert.equal(stopped.body.choices[0]?.text, (a ?? "").slice(0, (a ?? "").indexOf(stop)));
    assert.equal(stopped.body.choices[0]?.finish_reason, "stop");

    // Streamed: text_completion chunks with the same text, a usage chunk on request, [DONE].
    const streamed = await fetch(`${server.url}/v1/inference/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        prompt: "the cat sat on",
        max_tokens: 5,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    assert.equal(streamed.headers.get("content-type")?.startsWith("text/event-stream"), true);
    const events = (await streamed.text())
      .split("\n\n")
      .filter((e) => e !== "")
      .map((e) => e.replace(/^data: /, ""));
    assert.equal(events.at(-1), "[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Text);
    assert.ok(chunks.every((ch) => ch.object === "text_completion" && ch.model === MODEL));
    assert.equal(chunks.map((ch) => ch.choices[0]?.text ?? "").join(""), a);
    assert.equal(chunks.find((ch) => ch.choices[0]?.finish_reason)?.choices[0]?.finish_reason, "length");
    assert.equal(chunks.at(-1)?.usage?.completion_tokens, 5);

    const long = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/completions", {
      model: MODEL,
      prompt: "hello ".repeat(3000),
    });
    assert.equal(long.status, 400);
    assert.match(long.body.error.message, /context of \d+ tokens/);
  });

  describe("tool calls (node-llama-cpp function calling with the model's chat template)", () => {
    // The tiny model cannot choose to call a tool, so calls are forced (tool_choice): the grammar
    // then makes the function name and its JSON arguments follow the tool's schema, and the gateway
    // parses them into OpenAI tool_calls.
    const pick = {
      type: "function",
      function: {
        name: "pick_color",
        description: "Picks a color",
        parameters: { type: "object", properties: { color: { type: "string", enum: ["red", "green", "blue"] } }, required: ["color"] },
      },
    };
    const other = {
      type: "function",
      function: { name: "count", parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
    };

    test("a forced call is a real tool_calls entry following the tool's schema, plain and streamed", async () => {
      const res = await complete({ tools: [pick, other], tool_choice: "required", max_tokens: 200 });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const choice = res.body.choices[0] as unknown as {
        message: { content: string | null; tool_calls: Array<{ id: string; type: string; function: { name: string; arguments: string } }> };
        finish_reason: string;
      };
      assert.equal(choice.finish_reason, "tool_calls");
      assert.equal(choice.message.content, null);
      const call = choice.message.tool_calls[0];
      assert.ok(call);
      assert.match(call.id, /^call_/);
      assert.equal(call.type, "function");
      const args = JSON.parse(call.function.arguments) as Record<string, unknown>;
      if (call.function.name === "pick_color") {
        assert.deepEqual(Object.keys(args), ["color"]);
        assert.ok(["red", "green", "blue"].includes(args.color as string), call.function.arguments);
      } else {
        assert.equal(call.function.name, "count");
        assert.ok(Number.isInteger(args.n), call.function.arguments);
      }
      assert.ok(res.body.usage.completion_tokens > 3);

      const streamed = await stream({ tools: [pick, other], tool_choice: "required", max_tokens: 200 });
      assert.ok(streamed.done);
      type CallDelta = { index: number; function: { name: string; arguments: string } };
      const deltas = streamed.chunks.flatMap((c) => (c.choices[0]?.delta as { tool_calls?: CallDelta[] } | undefined)?.tool_calls ?? []);
      assert.equal(deltas.length, 1);
      assert.equal(deltas[0]?.index, 0);
      assert.deepEqual(deltas[0]?.function, call.function, "greedy: the same call streamed");
      assert.equal(streamed.chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, "tool_calls");
    });

    test("tool_choice naming a function calls that one; a tool result goes back through the template", async () => {
      const res = await complete({ tools: [pick, other], tool_choice: { type: "function", function: { name: "count" } }, max_tokens: 200 });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const message = res.body.choices[0]?.message as unknown as {
        tool_calls: Array<{ id: string; function: { name: string; arguments: string } }>;
      };
      assert.equal(message.tool_calls[0]?.function.name, "count");
      assert.ok(Number.isInteger((JSON.parse(message.tool_calls[0]?.function.arguments ?? "{}") as { n: unknown }).n));

      // The call and its result rendered by the template: the model's turn goes on after them.
      const id = message.tool_calls[0]?.id as string;
      const followUp = await call<Completion>("POST", "/v1/inference/chat/completions", {
        model: MODEL,
        temperature: 0,
        max_tokens: 4,
        tools: [pick, other],
        messages: [
          ...messages,
          { role: "assistant", content: null, tool_calls: message.tool_calls },
          { role: "tool", tool_call_id: id, content: '{"result": 42}' },
        ],
      });
      assert.equal(followUp.status, 200, JSON.stringify(followUp.body));
      assert.ok(followUp.body.usage.prompt_tokens > res.body.usage.prompt_tokens, "the call and its result are in the prompt");
      const unknown = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
        model: MODEL,
        messages: [...messages, { role: "tool", tool_call_id: "call_nope", content: "1" }],
      });
      assert.equal(unknown.status, 400);
      assert.match(unknown.body.error.message, /tool_call_id/);
    });

    test("the built-in code tool with the local model: the forced call runs in a real sandbox and the model answers", async () => {
      // A failure carries the service's log (a sandbox process that died says why there).
      await withServiceLog(server, async () => {
        // The random model never ends a free-text JSON string by itself: a bias towards the '"' byte
        // token (id 3 + 0x22) ends `code` at once, so the program is empty, but the call is the model's
        // own (its language picked under the schema's enum) and runs in a real sandbox.
        const res = await call<
          Completion & {
            steps: Array<{ language: string; code: string; result: { logs: { stdout: string; stderr: string }; error: string | null } }>;
          }
        >("POST", "/v1/inference/chat/completions", {
          model: MODEL,
          messages,
          temperature: 0,
          max_tokens: 120,
          tools: [{ type: "code_interpreter" }],
          tool_choice: "required",
          max_steps: 1,
          logit_bias: { "37": 20 },
        });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal(res.body.steps.length, 1, JSON.stringify(res.body));
        const step = res.body.steps[0] as (typeof res.body.steps)[number];
        assert.ok((LANGUAGES as readonly string[]).includes(step.language), step.language);
        assert.equal(typeof step.code, "string");
        // The result is what code/run gives for the same code in a fresh sandbox.
        const sandbox = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
        const direct = await call<{ logs: { stdout: string; stderr: string }; error: unknown }>(
          "POST",
          `/v1/agents/sandboxes/${sandbox.body.sandbox_id}/code/run`,
          { language: step.language, code: step.code },
        );
        await call("DELETE", `/v1/agents/sandboxes/${sandbox.body.sandbox_id}`);
        assert.equal(direct.status, 200, JSON.stringify(direct.body));
        assert.deepEqual(step.result.logs, direct.body.logs);
        assert.equal(
          step.result.error === null,
          direct.body.error === null || direct.body.error === undefined,
          JSON.stringify([step, direct.body]),
        );
        const final = res.body.choices[0];
        assert.equal(typeof final?.message.content, "string", "after max_steps the model answers in text");
        assert.ok(res.body.usage.prompt_tokens > 0 && res.body.usage.completion_tokens > 0);
      });
    });

    test("bad tool requests are 400s", async () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ tools: [pick], tool_choice: { type: "function", function: { name: "nope" } } }, /not among the tools/],
        [{ tools: [pick], tool_choice: "sometimes" }, /tool_choice/],
        [{ tools: [{ type: "function", function: { name: "bad name!" } }] }, /name/],
        [{ tools: [pick, pick] }, /given twice/],
        [{ tools: [pick], logit_bias: { "99999999": 5 } }, /not a token id/],
      ];
      for (const [body, message] of cases) {
        const res = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
          model: MODEL,
          messages,
          ...body,
        });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error.code, "invalid_request");
        assert.match(res.body.error.message, message);
      }
    });
  });

  test("requests the local engine cannot serve are 400s", async () => {
    const long = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: MODEL,
      messages: [{ role: "user", content: "hello ".repeat(3000) }],
    });
    assert.equal(long.status, 400);
    assert.match(long.body.error.message, /context of \d+ tokens/);
  });
});
