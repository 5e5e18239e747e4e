// End to end: POST /v1/inference/embeddings with the embedded default model (no configuration, no
// network), its listing in GET /models, base64 output, usage per key, and the vectors text routes
// (text upsert and text search find the related sentence first); a model of an OpenAI-compatible
// upstream (a scripted one on loopback) is routed there.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface Embeddings {
  object: string;
  data: Array<{ object: string; embedding: number[] | string; index: number }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

const cosine = (a: number[], b: number[]) => {
  let d = 0;
  let na = 0;
  let nb = 0;
  a.forEach((x, i) => {
    d += x * (b[i] as number);
    na += x * x;
    nb += (b[i] as number) ** 2;
  });
  return d / Math.sqrt(na * nb);
};

describe("embeddings", () => {
  let server: TestServer;
  let call: ReturnType<typeof client>;

  before(async () => {
    // This file starts no sandbox: no warm pool (its two sandboxes would take ~1.5 s of CPU from the tests).
    server = await startServer({ env: { AGENTBOX_WARM_POOL: "0" } });
    call = client(server);
  });
  after(async () => {
    await server?.dispose();
  });

  test("the default model embeds without configuration, and GET /models lists it", async () => {
    const models = await call<{ data: Array<{ id: string }> }>("GET", "/v1/inference/models");
    const id = models.body.data.map((m) => m.id).find((m) => m === "universal-sentence-encoder-lite");
    assert.ok(id, JSON.stringify(models.body));
    const res = await call<Embeddings>("POST", "/v1/inference/embeddings", {
      input: ["How do I reset my password?", "I forgot my login and need to change it", "The weather is sunny"],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.object, "list");
    assert.equal(res.body.model, id);
    assert.deepEqual(
      res.body.data.map((d) => [d.object, d.index]),
      [
        ["embedding", 0],
        ["embedding", 1],
        ["embedding", 2],
      ],
    );
    const [q, related, unrelated] = res.body.data.map((d) => d.embedding as number[]) as [number[], number[], number[]];
    assert.equal(q.length, 512);
    assert.ok(cosine(q, related) > cosine(q, unrelated) + 0.2);
    assert.ok(res.body.usage.prompt_tokens > 0);

    // The same text as base64 float32 decodes to the same vector.
    const b64 = await call<Embeddings>("POST", "/v1/inference/embeddings", {
      model: id,
      input: "How do I reset my password?",
      encoding_format: "base64",
    });
    const buf = Buffer.from(b64.body.data[0]?.embedding as string, "base64");
    const decoded = Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4));
    assert.equal(decoded.length, 512);
    assert.ok(cosine(decoded, q) > 0.9999);

    const usage = await call<{ usage: Array<{ model: string; prompt_tokens: number }> }>("GET", "/v1/inference/usage");
    assert.ok(
      usage.body.usage.some((u) => u.model === id && u.prompt_tokens > 0),
      JSON.stringify(usage.body),
    );
  });

  test("bad requests: other dimensions, empty input, unknown model", async () => {
    assertError(await call("POST", "/v1/inference/embeddings", { input: "x", dimensions: 256 }), 400, "invalid_request");
    assertError(await call("POST", "/v1/inference/embeddings", { input: [] }), 400, "invalid_request");
    assertError(await call("POST", "/v1/inference/embeddings", { input: [""] }), 400, "invalid_request");
    assertError(await call("POST", "/v1/inference/embeddings", { input: "x", model: "no-such-model" }), 404, "model_not_found");
  });

  test("text upsert and text search: the related sentence comes first", async () => {
    const idx = await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "texts", dimension: 512 });
    assert.equal(idx.status, 200);
    const base = `/v1/vectors/${idx.body.id}`;
    const up = await call<{ ids: string[]; usage: { prompt_tokens: number } }>("POST", `${base}/text/batch`, {
      vectors: [
        { id: "weather", text: "The weather is sunny", metadata: { kind: "chat" } },
        { id: "login", text: "I forgot my login and need to change it", metadata: { kind: "support" } },
        { id: "pasta", text: "Boil the pasta for nine minutes", metadata: { kind: "recipe" } },
      ],
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.ok(up.body.usage.prompt_tokens > 0);
    const one = await call<{ ids: string[] }>("POST", `${base}/text/upsert`, { text: "My invoice total looks wrong" });
    assert.equal(one.body.ids.length, 1);
    const res = await call<{ hits: Array<{ id: string; score: number }> }>("POST", `${base}/search/text`, {
      query: "How do I reset my password?",
      top_k: 4,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const ids = res.body.hits.map((h) => h.id);
    assert.equal(ids[0], "login", ids.join());
    assert.ok(ids.indexOf("login") < ids.indexOf("weather"));
    // With a filter the search keeps to the matching vectors.
    const filtered = await call<{ hits: Array<{ id: string }> }>("POST", `${base}/search/text`, {
      query: "How do I reset my password?",
      filter: { kind: { $in: ["chat", "recipe"] } },
    });
    assert.deepEqual(filtered.body.hits.map((h) => h.id).sort(), ["pasta", "weather"]);
    // Text into an index of another dimension is refused, nothing written.
    const small = await call<{ id: string }>("POST", "/v1/vectors/indexes", { name: "small", dimension: 8 });
    assertError(await call("POST", `/v1/vectors/${small.body.id}/text/upsert`, { text: "hello" }), 400, "invalid_request");
    assert.equal((await call<{ vector_count: number }>("GET", `/v1/vectors/indexes/${small.body.id}`)).body.vector_count, 0);
  });
});

describe("embeddings from an upstream", () => {
  test("a model the providers file routes to an OpenAI-compatible upstream is embedded there", async () => {
    const seen: Array<{ url?: string; body: Record<string, unknown> }> = [];
    const upstream = http.createServer((req, res) => {
      let text = "";
      req.on("data", (d) => {
        text += d;
      });
      req.on("end", () => {
        const body = JSON.parse(text) as { input: string[]; dimensions?: number };
        seen.push({ url: req.url, body });
        const dims = body.dimensions ?? 4;
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            object: "list",
            data: body.input.map((t, index) => ({
              object: "embedding",
              index,
              embedding: Array.from({ length: dims }, (_, j) => t.length + j),
            })),
            model: "up-embed",
            usage: { prompt_tokens: 7, total_tokens: 7 },
          }),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "providers-"));
    const file = path.join(dir, "providers.json");
    const port = (upstream.address() as AddressInfo).port;
    fs.writeFileSync(
      file,
      JSON.stringify({ providers: [{ name: "up", type: "openai", base_url: `http://127.0.0.1:${port}/v1`, models: ["up-embed"] }] }),
    );
    const server = await startServer({ env: { AGENTBOX_WARM_POOL: "0", AGENTBOX_PROVIDERS_FILE: file } });
    try {
      const call = client(server);
      const res = await call<Embeddings>("POST", "/v1/inference/embeddings", { model: "up-embed", input: ["abc", "hello"], dimensions: 3 });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.data.map((d) => d.embedding),
        [
          [3, 4, 5],
          [5, 6, 7],
        ],
      );
      assert.equal(res.body.usage.prompt_tokens, 7);
      assert.equal(seen[0]?.url, "/v1/embeddings");
      assert.equal(seen[0]?.body.dimensions, 3);
    } finally {
      await server.dispose();
      upstream.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
