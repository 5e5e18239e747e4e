// End to end: the inference gateway in the real service, in front of a scripted OpenAI-compatible
// upstream on loopback (test/helpers/upstream.ts). Chat completions plain and streamed (flushed as
// they arrive, a client disconnect aborts the upstream), pass-through of unknown fields and of the
// upstream's 4xx, every upstream failure mapped to its status, routing by model and prefix, per-key
// usage, the providers file's validation, and the built-in code tool running code in real sandboxes.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { loadProviders } from "../src/inference/providers.js";
import { createKey, eventually } from "./helpers/leftovers.js";
import { client, freePort, startServer, type TestServer } from "./helpers/server.js";
import { startUpstream, type Upstream } from "./helpers/upstream.js";

interface Completion {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{ index: number; message: { role: string; content: string | null; tool_calls?: unknown[] }; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  steps?: Array<{
    tool_call_id: string;
    language: string;
    code: string;
    result: { logs: { stdout: string; stderr: string }; error: string | null; execution_time_ms: number };
  }>;
}

interface SseEvent {
  event?: string;
  data: string;
  /** ms since the request was sent */
  at: number;
}

const SLOW_CHUNK_MS = 150;
/** The embedded default embedding model every gateway lists. */
const EMBEDDING_MODEL = "universal-sentence-encoder-lite";
const UPSTREAM_KEY = "sk-upstream-secret-123";

/** Posts a streamed request and collects its events with their arrival times. */
async function streamEvents(
  server: { url: string; key: string },
  body: unknown,
  opts: { stopAfter?: number; path?: string } = {},
): Promise<{ status: number; headers: Headers; events: SseEvent[]; text: string }> {
  const t0 = performance.now();
  const controller = new AbortController();
  const res = await fetch(`${server.url}/v1/inference${opts.path ?? "/chat/completions"}`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  if (!res.headers.get("content-type")?.startsWith("text/event-stream")) {
    return { status: res.status, headers: res.headers, events: [], text: await res.text() };
  }
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buf = "";
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const piece = decoder.decode(value, { stream: true });
    text += piece;
    buf += piece;
    let end = buf.indexOf("\n\n");
    while (end >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const ev: SseEvent = { data: "", at: performance.now() - t0 };
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) ev.event = line.slice(7);
        else if (line.startsWith("data: ")) ev.data += line.slice(6);
      }
      events.push(ev);
      end = buf.indexOf("\n\n");
    }
    if (opts.stopAfter !== undefined && events.length >= opts.stopAfter) {
      controller.abort();
      break;
    }
  }
  return { status: res.status, headers: res.headers, events, text };
}

function contentOf(events: SseEvent[]): string {
  let s = "";
  for (const e of events) {
    if (e.event !== undefined || e.data === "[DONE]") continue;
    const chunk = JSON.parse(e.data) as { choices: Array<{ delta: { content?: string } }> };
    s += chunk.choices[0]?.delta.content ?? "";
  }
  return s;
}

describe("inference gateway", () => {
  let server: TestServer;
  let upstream: Upstream;
  let call: ReturnType<typeof client>;
  let dir: string;
  let deadPort: number;

  before(async () => {
    upstream = await startUpstream({ slowChunkMs: SLOW_CHUNK_MS });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-inference-"));
    deadPort = await freePort(); // nothing listens there: connection refused
    const file = path.join(dir, "providers.json");
    fs.writeFileSync(
      file,
      JSON.stringify({
        providers: [
          {
            name: "scripted",
            type: "openai",
            base_url: upstream.baseUrl,
            api_key_env: "TEST_UPSTREAM_KEY",
            models: ["echo", "slow", "fail-500", "fail-400", "fail-429", "fail-401", "hang", "hang-stream", "reset-once", "scripted"],
            timeout_ms: 800,
            retries: 0,
          },
          { name: "prefixed", type: "openai", base_url: upstream.baseUrl, model_prefix: "up/", strip_prefix: true, retries: 0 },
          { name: "down", type: "openai", base_url: `http://127.0.0.1:${deadPort}/v1`, models: ["down-model"], retries: 1 },
        ],
      }),
    );
    server = await startServer({ env: { AGENTBOX_PROVIDERS_FILE: file, TEST_UPSTREAM_KEY: UPSTREAM_KEY } });
    call = client(server);
  });

  after(async () => {
    await server?.dispose();
    await upstream?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test("GET /models lists the routable models in OpenAI's list shape, each with what it can do", async () => {
    const res = await call<{
      object: string;
      data: Array<{ id: string; object: string; created: number; owned_by: string; capabilities: string[] }>;
    }>("GET", "/v1/inference/models");
    assert.equal(res.status, 200);
    assert.equal(res.body.object, "list");
    const ids = res.body.data.map((m) => m.id);
    assert.ok(ids.includes("echo") && ids.includes("down-model"));
    for (const m of res.body.data) {
      assert.deepEqual(Object.keys(m).sort(), ["capabilities", "created", "id", "object", "owned_by"]);
      assert.equal(m.object, "model");
      assert.equal(typeof m.created, "number");
    }
    const echo = res.body.data.find((m) => m.id === "echo");
    assert.equal(echo?.owned_by, "scripted");
    // An OpenAI-compatible upstream gets chat, text completions and embeddings.
    assert.deepEqual(echo?.capabilities, ["chat", "completions", "embeddings"]);
    // The embedded embedding model is listed too, and only for embeddings.
    assert.deepEqual(res.body.data.find((m) => m.id === EMBEDDING_MODEL)?.capabilities, ["embeddings"]);
  });

  test("a listed model that cannot chat: 400 saying so, not model_not_found", async () => {
    const chat = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: EMBEDDING_MODEL,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(chat.status, 400, JSON.stringify(chat.body));
    assert.equal(chat.body.error.code, "invalid_request");
    assert.match(chat.body.error.message, /is an embedding model/);
    assert.match(chat.body.error.message, /capabilities/);
    const text = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/completions", {
      model: EMBEDDING_MODEL,
      prompt: "hi",
    });
    assert.equal(text.status, 400, JSON.stringify(text.body));
    assert.match(text.body.error.message, /not text completions/);
  });

  test("a completion is the upstream's chat.completion; unknown fields and the upstream key reach the upstream", async () => {
    const before = upstream.requests.length;
    const body = {
      model: "echo",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hello gateway" },
      ],
      temperature: 0.2,
      max_tokens: 50,
      stop: ["\n\n"],
      response_format: { type: "text" },
      tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
      tool_choice: "auto",
      some_vendor_field: { nested: [1, 2, 3] },
      user: "u-1",
    };
    const res = await call<Completion>("POST", "/v1/inference/chat/completions", body);
    assert.equal(res.status, 200);
    assert.equal(res.body.object, "chat.completion");
    assert.equal(res.body.model, "echo");
    assert.equal(res.body.choices[0]?.message.content, "echo: hello gateway");
    assert.equal(res.body.choices[0]?.finish_reason, "stop");
    assert.equal(typeof res.body.usage.prompt_tokens, "number");
    assert.equal((res.body as unknown as { system_fingerprint: string }).system_fingerprint, "fp_scripted");
    assert.equal(upstream.requests.length, before + 1);
    const sent = upstream.requests.at(-1);
    assert.deepEqual(sent?.body, body);
    assert.equal(sent?.headers.authorization, `Bearer ${UPSTREAM_KEY}`);
    assert.ok(res.headers.get("x-request-id"));
  });

  test("the upstream gets the client's exact bytes when nothing had to change", async () => {
    const text =
      '{ "messages" : [ {"role":"user","content":"spacing \\u00e9 kept"} ],\n  "model":"echo", "n": 1.0, "logit_bias": {"42": -1e2} }';
    const res = await call<Completion>("POST", "/v1/inference/chat/completions", text);
    assert.equal(res.status, 200);
    assert.equal(upstream.requests.at(-1)?.raw, text);
    assert.equal(res.body.choices[0]?.message.content, "echo: spacing é kept");
  });

  test("a model prefix routes to its provider, which gets the id without the prefix", async () => {
    const res = await call<Completion>("POST", "/v1/inference/chat/completions", {
      model: "up/echo",
      messages: [{ role: "user", content: "via prefix" }],
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.choices[0]?.message.content, "echo: via prefix");
    assert.equal(upstream.requests.at(-1)?.body.model, "echo");
    assert.equal(upstream.requests.at(-1)?.headers.authorization, undefined); // that provider has no key
  });

  test("a streamed completion: one event per delta, flushed as the upstream sends them, ending with [DONE]", async () => {
    const { status, headers, events } = await streamEvents(server, {
      model: "slow",
      stream: true,
      messages: [{ role: "user", content: "one two three" }],
    });
    assert.equal(status, 200);
    assert.match(headers.get("content-type") ?? "", /^text\/event-stream/);
    assert.equal(events.at(-1)?.data, "[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as { object: string; choices: unknown[]; usage?: unknown });
    for (const c of chunks) assert.equal(c.object, "chat.completion.chunk");
    // The client did not ask for usage: no usage-only chunk (the gateway asks the upstream for one itself).
    assert.ok(chunks.every((c) => c.choices.length > 0));
    assert.equal(contentOf(events), "echo: one two three");
    assert.deepEqual(upstream.requests.at(-1)?.body.stream_options, { include_usage: true });
    // Flushed: the upstream spaces its chunks SLOW_CHUNK_MS apart, and they arrive spaced too
    // (buffered, they would all arrive at the end).
    const first = events[0] as SseEvent;
    const last = events.at(-2) as SseEvent;
    assert.ok(chunks.length >= 6, `${chunks.length} chunks`);
    assert.ok(last.at - first.at >= SLOW_CHUNK_MS * (chunks.length - 2), `first at ${first.at} ms, last at ${last.at} ms`);
    const distinct = new Set(events.map((e) => Math.round(e.at / (SLOW_CHUNK_MS / 2)))).size;
    assert.ok(distinct >= chunks.length - 1, `events arrived in ${distinct} bursts`);
  });

  test("stream_options.include_usage gives the final usage chunk", async () => {
    const { events } = await streamEvents(server, {
      model: "echo",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "count me" }],
    });
    const usageChunk = JSON.parse(events.at(-2)?.data ?? "{}") as { choices: unknown[]; usage: { completion_tokens: number } };
    assert.deepEqual(usageChunk.choices, []);
    assert.equal(typeof usageChunk.usage.completion_tokens, "number");
    assert.equal(events.at(-1)?.data, "[DONE]");
  });

  test("a client that disconnects mid-stream aborts the upstream request", async () => {
    const abortedBefore = upstream.aborted;
    const { events } = await streamEvents(
      server,
      { model: "slow", stream: true, messages: [{ role: "user", content: "a b c d e f g h i j k l m n o p" }] },
      { stopAfter: 2 },
    );
    assert.ok(events.length >= 2);
    assert.ok(
      await eventually(() => upstream.aborted > abortedBefore, 3000),
      "the upstream's response was not closed after the client left",
    );
  });

  test("a client that disconnects while waiting for a (non-streamed) answer aborts the upstream request", async () => {
    const abortedBefore = upstream.aborted;
    const controller = new AbortController();
    const pending = fetch(`${server.url}/v1/inference/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "hang", messages: [{ role: "user", content: "hi" }] }),
      signal: controller.signal,
    });
    await eventually(() => upstream.requests.at(-1)?.body.model === "hang", 2000);
    controller.abort();
    await assert.rejects(pending);
    assert.ok(await eventually(() => upstream.aborted > abortedBefore, 3000), "the upstream request was not closed");
  });

  test("a kept-alive connection the upstream closed under the request is retried at once (even with retries: 0)", async () => {
    await call("POST", "/v1/inference/chat/completions", { model: "echo", messages: [{ role: "user", content: "warm" }] });
    const res = await call<Completion>("POST", "/v1/inference/chat/completions", {
      model: "reset-once",
      messages: [{ role: "user", content: "again" }],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.choices[0]?.message.content, "echo: again");
    assert.equal(upstream.requests.filter((r) => r.body.model === "reset-once").length, 2);
  });

  test("unknown model: 404 model_not_found", async () => {
    const res = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: "no-such-model",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, "model_not_found");
    assert.match(res.body.error.message, /no-such-model/);
    // There are chat models here: no setup advice.
    assert.doesNotMatch(res.body.error.message, /no chat model/);
  });

  test("upstream connection refused (after its retry): 503 upstream_unavailable with Retry-After", async () => {
    for (const stream of [false, true]) {
      const res = await call<{ error: { code: string } }>("POST", "/v1/inference/chat/completions", {
        model: "down-model",
        stream,
        messages: [{ role: "user", content: "hi" }],
      });
      assert.equal(res.status, 503);
      assert.equal(res.body.error.code, "upstream_unavailable");
      assert.ok(Number(res.headers.get("retry-after")) >= 1);
    }
  });

  test("upstream timeout: 504 upstream_timeout; mid-stream it is an error event", async () => {
    const t0 = Date.now();
    const res = await call<{ error: { code: string } }>("POST", "/v1/inference/chat/completions", {
      model: "hang",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(res.status, 504);
    assert.equal(res.body.error.code, "upstream_timeout");
    assert.ok(Date.now() - t0 < 5000);
    const streamed = await streamEvents(server, { model: "hang-stream", stream: true, messages: [{ role: "user", content: "hi" }] });
    assert.equal(streamed.status, 200);
    const last = JSON.parse(streamed.events.at(-1)?.data ?? "{}") as { error?: { code: string } };
    assert.equal(last.error?.code, "upstream_timeout");
  });

  test("upstream 5xx: 502 upstream_error", async () => {
    const res = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: "fail-500",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(res.status, 502);
    assert.equal(res.body.error.code, "upstream_error");
    assert.match(res.body.error.message, /internal error/);
  });

  test("upstream 401 (the gateway's key for it is wrong): 502, not the client's 401", async () => {
    const res = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: "fail-401",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(res.status, 502);
    assert.equal(res.body.error.code, "upstream_error");
    assert.match(res.body.error.message, /refused the gateway's credentials \(401\): Incorrect API key/);
  });

  test("upstream 4xx: passed through with its status, message and Retry-After", async () => {
    const bad = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: "fail-400",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.error, { code: "invalid_value", message: "temperature is out of range" });
    const limited = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: "fail-429",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.message, "Rate limit reached");
    assert.equal(limited.headers.get("retry-after"), "7");
  });

  test("invalid requests are 400 invalid_request", async () => {
    const cases: unknown[] = [
      { model: "echo" },
      { model: "echo", messages: [] },
      { model: "echo", messages: [{ role: "wizard", content: "x" }] },
      { model: "echo", messages: [{ role: "user", content: "x" }], temperature: 3 },
      { model: "echo", messages: [{ role: "user", content: "x" }], stop: ["a", "b", "c", "d", "e"] },
      { model: "echo", messages: [{ role: "user", content: "x" }], tools: [{ type: "code_interpreter", bogus: 1 }] },
      "{not json",
    ];
    for (const body of cases) {
      const res = await call<{ error: { code: string } }>("POST", "/v1/inference/chat/completions", body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, "invalid_request");
    }
  });

  test("legacy completions go to the upstream's /completions: plain, streamed, refused, with usage recorded", async () => {
    const other = createKey(server.dataDir, "completions-usage");
    const otherCall = client({ ...server, key: other.key });
    const res = await otherCall<{ object: string; choices: Array<{ text: string; index: number }>; usage: { completion_tokens: number } }>(
      "POST",
      "/v1/inference/completions",
      { model: "echo", prompt: ["one two", "three"], max_tokens: 5, logit_bias: { "50256": -100 } },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.object, "text_completion");
    assert.deepEqual(
      res.body.choices.map((c) => [c.index, c.text]),
      [
        [0, "echo: one two"],
        [1, "echo: three"],
      ],
    );
    const sent = upstream.requests.at(-1);
    assert.deepEqual(sent?.body.logit_bias, { "50256": -100 }, "unknown fields reach the upstream");

    const streamed = await streamEvents(
      { url: server.url, key: other.key },
      { model: "echo", prompt: "a b c", stream: true },
      { path: "/completions" },
    );
    assert.equal(streamed.status, 200);
    assert.equal(streamed.events.at(-1)?.data, "[DONE]");
    const chunks = streamed.events.slice(0, -1).map((e) => JSON.parse(e.data) as { object: string; choices: Array<{ text: string }> });
    assert.ok(chunks.every((c) => c.object === "text_completion"));
    assert.equal(chunks.map((c) => c.choices[0]?.text ?? "").join(""), "echo: a b c");
    assert.ok(
      chunks.every((c) => c.choices.length > 0),
      "the usage chunk the gateway asked for is not passed on unasked",
    );
    assert.deepEqual(upstream.requests.at(-1)?.body.stream_options, { include_usage: true });

    const refused = await otherCall<{ error: { code: string; message: string } }>("POST", "/v1/inference/completions", {
      model: "fail-400",
      prompt: "x",
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.message, "max_tokens is too large");

    // The plain and the streamed one (the refused one is under its own model id); a read flushes what is queued.
    const usage = await otherCall<{ usage: Array<{ model: string; requests: number; completion_tokens: number }> }>(
      "GET",
      "/v1/inference/usage",
    );
    const echo = usage.body.usage.find((u) => u.model === "echo");
    assert.equal(echo?.requests, 2);
    assert.ok((echo?.completion_tokens ?? 0) > 0);

    for (const body of [
      { model: "echo" },
      { model: "echo", prompt: [] },
      { model: "echo", prompt: "x", n: 0 },
      { model: "echo", prompt: [1, 2] },
    ]) {
      const bad = await call<{ error: { code: string } }>("POST", "/v1/inference/completions", body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.error.code, "invalid_request");
    }
    const unknown = await call<{ error: { code: string } }>("POST", "/v1/inference/completions", { model: "nope", prompt: "x" });
    assert.equal(unknown.status, 404);
  });

  test("GET /usage sums the calling key's tokens per model; another key sees only its own", async () => {
    const other = createKey(server.dataDir, "usage-other");
    const otherCall = client({ url: server.url, key: other.key });
    const empty = await otherCall<{ usage: unknown[]; total_tokens: number }>("GET", "/v1/inference/usage");
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, { usage: [], total_tokens: 0 });
    const one = await otherCall<Completion>("POST", "/v1/inference/chat/completions", {
      model: "echo",
      messages: [{ role: "user", content: "x y" }],
    });
    const two = await otherCall<Completion>("POST", "/v1/inference/chat/completions", {
      model: "echo",
      messages: [{ role: "user", content: "z" }],
    });
    const report = await otherCall<{
      usage: Array<{ model: string; prompt_tokens: number; completion_tokens: number; requests: number }>;
      total_tokens: number;
    }>("GET", "/v1/inference/usage");
    assert.equal(report.body.usage.length, 1);
    const row = report.body.usage[0];
    assert.equal(row?.model, "echo");
    assert.equal(row?.requests, 2);
    assert.equal(row?.prompt_tokens, one.body.usage.prompt_tokens + two.body.usage.prompt_tokens);
    assert.equal(row?.completion_tokens, one.body.usage.completion_tokens + two.body.usage.completion_tokens);
    assert.equal(report.body.total_tokens, one.body.usage.total_tokens + two.body.usage.total_tokens);
    // Streams count too (from the usage chunk the gateway asks for).
    await streamEvents({ url: server.url, key: other.key }, { model: "echo", stream: true, messages: [{ role: "user", content: "s" }] });
    const after = await otherCall<{ usage: Array<{ requests: number; completion_tokens: number }> }>("GET", "/v1/inference/usage");
    assert.equal(after.body.usage[0]?.requests, 3);
    assert.ok((after.body.usage[0]?.completion_tokens ?? 0) > (row?.completion_tokens ?? 0));
    // The bootstrap key's own usage is separate and includes its earlier requests.
    const mine = await call<{ usage: Array<{ model: string; requests: number }> }>("GET", "/v1/inference/usage");
    assert.ok((mine.body.usage.find((u) => u.model === "echo")?.requests ?? 0) >= 1);
  });

  test("the inference routes are in a valid OpenAPI document", async () => {
    const res = await fetch(`${server.url}/openapi.json`);
    const doc = (await res.json()) as { paths: Record<string, Record<string, { requestBody?: unknown; tags?: string[] }>> };
    const result = await new Validator().validate(doc as Parameters<Validator["validate"]>[0]);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    assert.ok(doc.paths["/v1/inference/chat/completions"]?.post?.requestBody);
    assert.ok(doc.paths["/v1/inference/models"]?.get);
    assert.ok(doc.paths["/v1/inference/usage"]?.get);
  });

  test("the inference routes need a key", async () => {
    const res = await fetch(`${server.url}/v1/inference/models`);
    assert.equal(res.status, 401);
  });

  describe("code tool", () => {
    test("the model's code runs in a fresh sandbox that is killed afterwards; the result goes back to the model", async () => {
      upstream.script([
        { tool_calls: [{ name: "code_interpreter", arguments: JSON.stringify({ language: "python", code: "x = 6 * 7\nprint(x)" }) }] },
        { content: "The answer is 42." },
      ]);
      const sent = upstream.requests.length;
      const res = await call<Completion>("POST", "/v1/inference/chat/completions", {
        model: "scripted",
        messages: [{ role: "user", content: "What is 6 times 7? Use code." }],
        tools: [{ type: "code_interpreter" }],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.choices[0]?.message.content, "The answer is 42.");
      assert.equal(res.body.steps?.length, 1);
      const step = res.body.steps?.[0];
      assert.equal(step?.language, "python");
      assert.equal(step?.code, "x = 6 * 7\nprint(x)");
      assert.deepEqual(step?.result.logs, { stdout: "42\n", stderr: "" });
      assert.equal(step?.result.error, null);
      assert.equal(typeof step?.result.execution_time_ms, "number");
      // Usage is summed over both upstream calls.
      const [first, second] = upstream.requests.slice(sent);
      assert.ok(first && second);
      assert.equal(
        res.body.usage.prompt_tokens,
        (JSON.stringify(first.body.messages).length >> 2) + (JSON.stringify(second.body.messages).length >> 2),
      );
      // Upstream, the tool is an ordinary function tool.
      const tool = (first.body.tools as Array<{ type: string; function: { name: string; parameters: { required: string[] } } }>)[0];
      assert.equal(tool?.type, "function");
      assert.equal(tool?.function.name, "code_interpreter");
      assert.deepEqual(tool?.function.parameters.required, ["language", "code"]);
      // The second call carries the assistant's tool call and the tool result.
      const msgs = second.body.messages as Array<{
        role: string;
        content: string | null;
        tool_call_id?: string;
        tool_calls?: Array<{ id: string }>;
      }>;
      assert.equal(msgs.at(-2)?.role, "assistant");
      assert.equal(msgs.at(-1)?.role, "tool");
      assert.equal(msgs.at(-1)?.tool_call_id, msgs.at(-2)?.tool_calls?.[0]?.id);
      assert.deepEqual(JSON.parse(msgs.at(-1)?.content ?? "{}"), { stdout: "42\n", stderr: "", error: null });
      assert.equal(second.body.max_steps, undefined);
      // The sandbox it made is gone.
      const list = await call<{ sandboxes: Array<{ status: string }> }>("GET", "/v1/agents/sandboxes?limit=1000");
      assert.ok(
        list.body.sandboxes.every((s) => s.status !== "running"),
        JSON.stringify(list.body.sandboxes),
      );
    });

    test("with a sandbox_id: state persists across steps and the sandbox stays; a user error goes back to the model", async () => {
      const created = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
      assert.equal(created.status, 201);
      const id = created.body.sandbox_id;
      upstream.script([
        { tool_calls: [{ name: "code_interpreter", arguments: JSON.stringify({ language: "python", code: "data = [1, 2, 3]" }) }] },
        { tool_calls: [{ name: "code_interpreter", arguments: JSON.stringify({ language: "python", code: "print(sum(data))" }) }] },
        { tool_calls: [{ name: "code_interpreter", arguments: JSON.stringify({ language: "python", code: "print(undefined_name)" }) }] },
        { tool_calls: [{ name: "code_interpreter", arguments: "{not json" }] },
        { content: "sum is 6" },
      ]);
      const res = await call<Completion>("POST", "/v1/inference/chat/completions", {
        model: "scripted",
        messages: [{ role: "user", content: "sum it" }],
        tools: [{ type: "code_interpreter", sandbox_id: id, timeout: 10 }],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.steps?.length, 4);
      assert.equal(res.body.steps?.[1]?.result.logs.stdout, "6\n");
      assert.match(res.body.steps?.[2]?.result.error ?? "", /NameError/);
      assert.match(res.body.steps?.[3]?.result.error ?? "", /not valid JSON/);
      assert.equal(res.body.choices[0]?.message.content, "sum is 6");
      // The caller's sandbox is still there, with the state.
      const run = await call<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
        language: "python",
        code: "print(data)",
      });
      assert.equal(run.body.logs.stdout, "[1, 2, 3]\n");
      await call("DELETE", `/v1/agents/sandboxes/${id}`);
    });

    test("another tenant's sandbox_id is a 404", async () => {
      const other = createKey(server.dataDir, "code-tool-other");
      const theirs = await client({ url: server.url, key: other.key })<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
      upstream.script([{ tool_calls: [{ name: "code_interpreter", arguments: JSON.stringify({ language: "bash", code: "echo hi" }) }] }]);
      const res = await call<{ error: { code: string } }>("POST", "/v1/inference/chat/completions", {
        model: "scripted",
        messages: [{ role: "user", content: "x" }],
        tools: [{ type: "code_interpreter", sandbox_id: theirs.body.sandbox_id }],
      });
      assert.equal(res.status, 404);
      assert.equal(res.body.error.code, "sandbox_not_found");
    });

    test("the tool's runs hold an execution slot of the key, as code/run's do: over the key's limit, 429", async () => {
      const admin = client({ url: server.url, key: server.adminKey });
      const made = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "code-tool-one-slot", max_concurrent_runs: 1 });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const one = client({ url: server.url, key: made.body.key });
      const id = (await one<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {})).body.sandbox_id;
      const slow = one("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "sleep 1.5" });
      await new Promise((r) => setTimeout(r, 300));
      const tool = { tool_calls: [{ name: "code_interpreter", arguments: JSON.stringify({ language: "bash", code: "echo hi" }) }] };
      upstream.script([tool]);
      const chat = {
        model: "scripted",
        messages: [{ role: "user", content: "x" }],
        tools: [{ type: "code_interpreter", sandbox_id: id }],
      };
      const refused = await one<{ error: { code: string } }>("POST", "/v1/inference/chat/completions", chat);
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "rate_limited");
      assert.equal(refused.headers.get("retry-after"), "1");
      assert.equal((await slow).status, 200);
      // The slot is free again: the same request now runs the tool.
      upstream.script([tool, { content: "done" }]);
      const ok = await one<Completion>("POST", "/v1/inference/chat/completions", chat);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.steps?.[0]?.result.logs.stdout, "hi\n");
      assert.equal((await one("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    });

    test("max_steps bounds the rounds; then the model is asked once more with tool_choice none", async () => {
      const turn = { tool_calls: [{ name: "code_interpreter", arguments: JSON.stringify({ language: "bash", code: "echo step" }) }] };
      upstream.script([turn, turn, { content: "stopping here" }]);
      const sent = upstream.requests.length;
      const res = await call<Completion>("POST", "/v1/inference/chat/completions", {
        model: "scripted",
        max_steps: 2,
        messages: [{ role: "user", content: "loop" }],
        tools: [{ type: "code_interpreter" }],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.steps?.length, 2);
      assert.equal(res.body.steps?.[0]?.result.logs.stdout, "step\n");
      const calls = upstream.requests.slice(sent);
      assert.equal(calls.length, 3);
      assert.equal(calls[0]?.body.tool_choice, undefined);
      assert.equal(calls[2]?.body.tool_choice, "none");
      assert.equal(res.body.choices[0]?.message.content, "stopping here");
    });

    test("streamed: upstream chunks of every round, a tool_step chunk per run, one [DONE]", async () => {
      upstream.script([
        { tool_calls: [{ name: "code_interpreter", arguments: JSON.stringify({ language: "javascript", code: "console.log(2 ** 10)" }) }] },
        { content: "It is 1024." },
      ]);
      const { status, events } = await streamEvents(server, {
        model: "scripted",
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "2^10?" }],
        tools: [{ type: "code_interpreter" }],
      });
      assert.equal(status, 200);
      // Each run is one chunk with an empty delta and a tool_step field.
      const steps = events.filter((e) => e.data.includes('"tool_step"'));
      assert.equal(steps.length, 1);
      const chunk = JSON.parse(steps[0]?.data ?? "{}") as {
        object: string;
        choices: Array<{ delta: Record<string, unknown> }>;
        tool_step: { index: number; language: string; result: { logs: { stdout: string } } };
      };
      assert.equal(chunk.object, "chat.completion.chunk");
      assert.deepEqual(chunk.choices[0]?.delta, {});
      assert.equal(chunk.tool_step.index, 0);
      assert.equal(chunk.tool_step.language, "javascript");
      assert.equal(chunk.tool_step.result.logs.stdout, "1024\n");
      assert.ok(events.every((e) => e.event === undefined));
      assert.equal(contentOf(events), "It is 1024.");
      assert.equal(events.filter((e) => e.data === "[DONE]").length, 1);
      assert.equal(events.at(-1)?.data, "[DONE]");
      // One usage chunk, the sum of both rounds.
      const usage = events.filter((e) => e.data.includes('"usage":{'));
      assert.equal(usage.length, 1);
      assert.ok((JSON.parse(usage[0]?.data ?? "{}") as { usage: { completion_tokens: number } }).usage.completion_tokens >= 3 + 5);
      // The step event comes after the first round's finish and before the answer's text.
      const stepAt = events.indexOf(steps[0] as SseEvent);
      const finishAt = events.findIndex((e) => e.data.includes('"finish_reason":"tool_calls"'));
      assert.ok(finishAt >= 0 && finishAt < stepAt);
    });
  });
});

describe("a gateway without a chat model (a fresh install)", () => {
  let server: TestServer;
  let call: ReturnType<typeof client>;

  before(async () => {
    server = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
    call = client(server);
  });
  after(async () => {
    await server?.dispose();
  });

  test("the list has only the embedding model, and a chat's 404 says the three ways to get a chat model", async () => {
    const list = await call<{ data: Array<{ id: string; capabilities: string[] }> }>("GET", "/v1/inference/models");
    assert.deepEqual(
      list.body.data.map((m) => [m.id, m.capabilities]),
      [[EMBEDDING_MODEL, ["embeddings"]]],
    );
    const res = await call<{ error: { code: string; message: string } }>("POST", "/v1/inference/chat/completions", {
      model: "qwen2.5-1.5b-instruct",
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, "model_not_found");
    assert.match(res.body.error.message, /no chat model/);
    for (const way of ["AGENTBOX_PROVIDERS_FILE", "models pull", "AGENTBOX_MODEL"]) assert.ok(res.body.error.message.includes(way), way);
  });
});

describe("providers file", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-providers-"));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (doc: unknown) => {
    const file = path.join(dir, `p${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, typeof doc === "string" ? doc : JSON.stringify(doc));
    return file;
  };
  const openai = { name: "a", type: "openai", base_url: "http://127.0.0.1:1/v1", models: ["m"] };

  test("no file: no providers, every model is a 404", async () => {
    const registry = loadProviders(undefined);
    assert.deepEqual(registry.models(), []);
    assert.throws(() => registry.resolve("gpt-4o"), /does not exist/);
  });

  test("a valid file", async () => {
    const registry = loadProviders(write({ providers: [openai, { ...openai, name: "b", models: [], model_prefix: "b/" }] }), {
      KEY: "x",
    });
    assert.equal(registry.resolve("m").name, "a");
    assert.equal(registry.resolve("b/anything").name, "b");
    await registry.close();
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ["not JSON", "{", /is not valid JSON/],
    ["no providers array", { providers: {} }, /providers must be an array/],
    ["unknown top-level field", { providers: [], extra: 1 }, /extra is not a known field/],
    ["missing name", { providers: [{ ...openai, name: undefined }] }, /providers\[0\]\.name is required/],
    ["bad type", { providers: [{ ...openai, type: "anthropic" }] }, /providers\[0\]\.type must be "openai" or "local"/],
    ["missing base_url", { providers: [{ ...openai, base_url: undefined }] }, /providers\[0\]\.base_url is required/],
    ["bad base_url", { providers: [{ ...openai, base_url: "ftp://x" }] }, /providers\[0\]\.base_url must be an http/],
    ["key inline", { providers: [{ ...openai, api_key: "sk-123" }] }, /providers\[0\]\.api_key is not accepted.*api_key_env/],
    [
      "key env not set",
      { providers: [{ ...openai, api_key_env: "NOPE_NOT_SET" }] },
      /api_key_env names the environment variable NOPE_NOT_SET, which is not set/,
    ],
    [
      "key env not a name",
      { providers: [{ ...openai, api_key_env: "sk-abc" }] },
      /api_key_env must be the NAME of an environment variable(?!.*sk-abc)/,
    ],
    ["no models", { providers: [{ ...openai, models: undefined }] }, /needs 'models'/],
    ["bad timeout", { providers: [{ ...openai, timeout_ms: -5 }] }, /providers\[0\]\.timeout_ms must be an integer/],
    ["bad retries", { providers: [{ ...openai, retries: 1.5 }] }, /providers\[0\]\.retries must be an integer/],
    ["typo", { providers: [{ ...openai, modles: ["x"] }] }, /providers\[0\]\.modles is not a field/],
    ["duplicate name", { providers: [openai, { ...openai, models: ["n"] }] }, /providers\[1\]\.name 'a' is used by an earlier provider/],
    ["duplicate model", { providers: [openai, { ...openai, name: "b" }] }, /providers\[1\] lists model 'm', which provider 'a' lists too/],
    ["local without model_path", { providers: [{ name: "l", type: "local" }] }, /providers\[0\]\.model_path is required/],
    [
      "local model missing",
      { providers: [{ name: "l", type: "local", model_path: "/nonexistent/x.gguf" }] },
      /model_path names .* which does not exist/,
    ],
  ];
  for (const [name, doc, message] of bad) {
    test(`rejected with the field named: ${name}`, () => {
      const file = write(doc);
      assert.throws(
        () => loadProviders(file, {}),
        (err: Error) => {
          assert.match(err.message, message);
          assert.ok(err.message.includes(file), "the message names the file");
          return true;
        },
      );
    });
  }

  test("a local model file that is not GGUF is rejected", () => {
    const model = path.join(dir, "fake.gguf");
    fs.writeFileSync(model, "not a model");
    assert.throws(
      () => loadProviders(write({ providers: [{ name: "l", type: "local", model_path: model }] }), {}),
      /which is not a GGUF file/,
    );
  });

  test("the service refuses to start with a bad providers file and says why", async () => {
    const file = write({ providers: [{ ...openai, base_url: "nope" }] });
    await assert.rejects(startServer({ env: { AGENTBOX_PROVIDERS_FILE: file } }), (err: Error) =>
      /providers\[0\]\.base_url must be an http/.test(err.message),
    );
  });
});
