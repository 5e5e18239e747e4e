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
import { writeTinyLlama } from "./helpers/gguf.js";
import { eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

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
    const res = await call<{ data: Array<{ id: string; owned_by: string }> }>("GET", "/v1/inference/models");
    // After the providers' models, the embedded default embedding model.
    assert.deepEqual(
      res.body.data.map((m) => [m.id, m.owned_by]),
      [
        [MODEL, "local"],
        ["universal-sentence-encoder-lite", "agentbox"],
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

  test("requests the local engine cannot serve are 400s", async () => {
    const tools = await complete({ tools: [{ type: "function", function: { name: "f", parameters: {} } }] });
    assert.equal(tools.status, 400);
    const code = await complete({ tools: [{ type: "code_interpreter" }] });
    assert.equal(code.status, 400);
    const long = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: MODEL,
      messages: [{ role: "user", content: "hello ".repeat(3000) }],
    });
    assert.equal(long.status, 400);
    assert.match(long.body.error.message, /context of \d+ tokens/);
  });
});
