// End to end, a fuzz test: answers from servers the service does not control are data, never a
// crash. Hostile loopback servers (test/helpers/hostile-http.ts: raw TCP, any bytes) stand in for a
// model upstream of the inference gateway (whole and streamed answers), a webhook receiver, and an
// image registry during a template build. Each sends malformed status lines, every byte value in a
// header's name and value, bad chunking, early closes, huge heads and slow drips. After each, the
// service still answers /health, the bad answer was an error for that request alone (a 502, 503 or
// 504, never a 500 or a success), and another tenant's code/run still works.
// (A sandbox's ports and cluster forwarding have their own tests: ports.test.ts, cluster tests.)
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { createSandbox } from "./helpers/api.js";
import { type Hostile, answer, hostileAnswers, raw, reset, startHostile, type HostileServer } from "./helpers/hostile-http.js";
import { eventually } from "./helpers/leftovers.js";
import { haveImageTools } from "./helpers/oci-image.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { startUpstream, type Upstream } from "./helpers/upstream.js";

let server: TestServer;
let call: ReturnType<typeof client>;
/** Another tenant, whose work must go on whatever the first one's upstreams answer. */
let other: ReturnType<typeof client>;
let otherSandbox: string;
let bad: HostileServer;
let registry: HostileServer;
let good: Upstream;
let dir: string;
let templateDir: string;

const ERROR_STATUSES = [502, 503, 504];

const completion = JSON.stringify({
  id: "c1",
  object: "chat.completion",
  created: 1,
  model: "bad-model",
  choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});
const chunk = (delta: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "bad-model",
    choices: [{ index: 0, delta, finish_reason: null }],
    ...extra,
  });
const sse = `data: ${chunk({ content: "hi" })}\n\ndata: [DONE]\n\n`;

before(async () => {
  bad = await startHostile(() => raw(answer("200 OK", ["content-type: application/json"], completion)));
  registry = await startHostile(() => reset);
  good = await startUpstream();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-untrusted-"));
  templateDir = fs.mkdtempSync(path.join("/var/tmp", "agentbox-templates-untrusted-"));
  fs.chmodSync(templateDir, 0o711);
  const providers = path.join(dir, "providers.json");
  fs.writeFileSync(
    providers,
    JSON.stringify({
      providers: [
        {
          name: "hostile",
          type: "openai",
          base_url: `http://127.0.0.1:${bad.port}/v1`,
          models: ["bad-model"],
          timeout_ms: 1500,
          retries: 0,
        },
        { name: "good", type: "openai", base_url: good.baseUrl, models: ["echo"], retries: 0 },
      ],
    }),
  );
  const host = `127.0.0.1:${registry.port}`;
  server = await startServer({
    env: {
      AGENTBOX_PROVIDERS_FILE: providers,
      AGENTBOX_WEBHOOK_ALLOW_PRIVATE: "1",
      AGENTBOX_WEBHOOK_TIMEOUT_MS: "1500",
      AGENTBOX_WEBHOOK_RETRY_BASE_MS: "20",
      AGENTBOX_WEBHOOK_RETRY_MAX_MS: "50",
      AGENTBOX_TEMPLATE_DIR: templateDir,
      AGENTBOX_TEMPLATE_REGISTRIES: host,
      AGENTBOX_TEMPLATE_INSECURE_REGISTRIES: host,
      // The registry's cases are builds run side by side (each waits on skopeo for seconds).
      AGENTBOX_TEMPLATE_PARALLEL_BUILDS: "16",
      AGENTBOX_TEMPLATE_BUILDS_PER_TENANT: "16",
    },
  });
  call = client(server);
  const admin = client({ url: server.url, key: server.adminKey });
  const made = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "other", tenant_id: "other-tenant" });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  other = client({ url: server.url, key: made.body.key });
  otherSandbox = await createSandbox(other);
});

after(async () => {
  await server?.dispose();
  await bad?.close();
  await registry?.close();
  await good?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  if (templateDir) fs.rmSync(templateDir, { recursive: true, force: true });
});

/** The service is up and another tenant's code still runs. */
async function othersUnaffected(when: string): Promise<void> {
  const health = await fetch(`${server.url}/health`);
  assert.equal(health.status, 200, `health after ${when}`);
  const run = await other<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${otherSandbox}/code/run`, {
    language: "python",
    code: "print(6 * 7)",
  });
  assert.equal(run.status, 200, `another tenant's code/run after ${when}: ${JSON.stringify(run.body)}`);
  assert.equal(run.body.logs.stdout, "42\n");
}

/** A chat completion as this tenant; a request that hangs fails after 60 s (a hang is a defect too). */
const ask = (model: string, stream = false) =>
  fetch(`${server.url}/v1/inference/chat/completions`, {
    method: "POST",
    signal: AbortSignal.timeout(60_000),
    headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hello" }] }),
  });

/** Runs `check` for each hostile answer in turn, checking on the others every `every` answers. */
async function each(cases: Hostile[], check: (h: Hostile) => Promise<void>, every = 64): Promise<void> {
  for (const [i, h] of cases.entries()) {
    bad.pick = () => h.answer;
    await check(h).catch((err: Error) => {
      throw new Error(`${h.name}: ${err.message}`, { cause: err });
    });
    if (i % every === every - 1) await othersUnaffected(h.name);
  }
  await othersUnaffected(`${cases.length} hostile answers`);
}

describe("a model upstream's hostile answers", () => {
  test("a whole answer: each bad one is a 502/503/504 for that request", async () => {
    const cases = hostileAnswers({ type: "application/json", body: completion }, { bytes: true });
    cases.push(
      { name: "body null", answer: raw(answer("200 OK", ["content-type: application/json"], "null")) },
      { name: "choices not a list", answer: raw(answer("200 OK", ["content-type: application/json"], '{"choices":"x"}')) },
      { name: "a choice null", answer: raw(answer("200 OK", ["content-type: application/json"], '{"choices":[null]}')) },
      {
        name: "tool_calls not a list",
        answer: raw(answer("200 OK", ["content-type: application/json"], '{"choices":[{"message":{"tool_calls":7}}]}')),
      },
      { name: "not JSON", answer: raw(answer("200 OK", ["content-type: application/json"], "\u0000\u00ff{")) },
      {
        name: "an answer over the size limit",
        answer: raw(answer("200 OK", ["content-type: application/json"], `{"pad":"${"x".repeat(70 * 2 ** 20)}","choices":[]}`)),
      },
    );
    await each(cases, async (h) => {
      const res = await ask("bad-model");
      const text = await res.text();
      if (h.mayPass && res.status === 200) return;
      if (h.refusal && res.status >= 400 && res.status < 500) {
        assert.ok(text.length < 4000, `${h.name}: an upstream's refusal is passed on cut short (${text.length} bytes)`);
        return;
      }
      assert.ok(ERROR_STATUSES.includes(res.status), `${h.name}: ${res.status} ${text.slice(0, 300)}`);
      assert.match(text, /"code":"upstream_(error|timeout|unavailable)"/, h.name);
    });
  });

  test("a streamed answer: a bad one is an error status or an upstream_error event, never a 500", async () => {
    const type = "text/event-stream";
    const cases = hostileAnswers({ type, body: sse });
    const ev = (body: string): Hostile["answer"] => raw(answer("200 OK", [`content-type: ${type}`], body));
    cases.push(
      { name: "an event that is not JSON but names usage", answer: ev('data: {"usage":{ nope\n\n') },
      { name: "an event null with usage", answer: ev('data: null\n\ndata: {"usage":{"prompt_tokens":{}}, "choices": "x"}\n\n') },
      {
        name: "events then an early close",
        answer: raw(`HTTP/1.1 200 OK\r\ncontent-type: ${type}\r\ncontent-length: 9999\r\n\r\n${sse.slice(0, 40)}`),
      },
      { name: "an endless event", answer: ev(`data: ${"x".repeat(20 * 2 ** 20)}`) },
      { name: "a JSON answer to a stream request, null", answer: raw(answer("200 OK", ["content-type: application/json"], "null")) },
      { name: "a JSON answer with choices null", answer: raw(answer("200 OK", ["content-type: application/json"], '{"choices":[null]}')) },
    );
    await each(cases, async (h) => {
      const res = await ask("bad-model", true);
      const text = await res.text();
      assert.doesNotMatch(text, /internal_error/, `${h.name}: ${text.slice(0, 300)}`);
      if (res.status === 200) {
        assert.ok(
          text.endsWith("data: [DONE]\n\n") || /"code":"upstream_(error|timeout)"/.test(text),
          `${h.name}: a stream ends with [DONE] or an upstream error: ${text.slice(-300)}`,
        );
        if (!h.mayPass && text.endsWith("data: [DONE]\n\n"))
          assert.fail(`${h.name}: a hostile answer streamed as a success: ${text.slice(0, 300)}`);
      } else if (!(h.refusal && res.status >= 400 && res.status < 500))
        assert.ok(ERROR_STATUSES.includes(res.status), `${h.name}: ${res.status} ${text.slice(0, 300)}`);
    });
  });

  test("token counts that are not counts do not lose another tenant's usage", async () => {
    bad.pick = () =>
      raw(
        answer(
          "200 OK",
          ["content-type: application/json"],
          JSON.stringify({ ...JSON.parse(completion), usage: { prompt_tokens: { x: 1 }, completion_tokens: "7", total_tokens: [] } }),
        ),
      );
    // The other tenant's requests land in the same usage batches as the hostile ones.
    const otherKey = await otherTenantKey();
    for (let i = 0; i < 5; i++) {
      const [mine, theirs] = await Promise.all([
        ask("bad-model"),
        fetch(`${server.url}/v1/inference/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${otherKey}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "count me" }] }),
        }),
      ]);
      assert.equal(mine.status, 200, await mine.text());
      assert.equal(theirs.status, 200, await theirs.text());
    }
    const usage = await client({ url: server.url, key: otherKey })<{ usage: { model: string; requests: number }[] }>(
      "GET",
      "/v1/inference/usage",
    );
    assert.equal(usage.status, 200);
    assert.equal(usage.body.usage.find((u) => u.model === "echo")?.requests, 5, JSON.stringify(usage.body));
    const mine = await call<{ usage: { model: string; requests: number; prompt_tokens: number }[] }>("GET", "/v1/inference/usage");
    const row = mine.body.usage.find((u) => u.model === "bad-model");
    assert.ok(row && row.requests >= 5, JSON.stringify(mine.body));
  });
});

let otherKeyCache: string | undefined;
/** A second key of the other tenant (made once): the client above keeps its own key to itself. */
async function otherTenantKey(): Promise<string> {
  if (otherKeyCache) return otherKeyCache;
  const admin = client({ url: server.url, key: server.adminKey });
  const made = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "other-usage", tenant_id: "other-tenant" });
  assert.equal(made.status, 201);
  otherKeyCache = made.body.key;
  return otherKeyCache;
}

describe("a webhook receiver's hostile answers", () => {
  test("each is a failed attempt in the delivery log; the service and other tenants go on", async () => {
    // A 500 around each fault: a delivery ends at its first 2xx, and these must go on being retried.
    const cases = hostileAnswers({ status: "500 Server Error", type: "text/plain", body: "ok" }, { bytes: true });
    bad.pick = (_req, n) => (cases[(n - 1) % cases.length] as Hostile).answer;
    const seenBefore = bad.requests.length;
    const hook = await call<{ id: string }>("POST", "/v1/agents/webhooks", {
      url: `http://127.0.0.1:${bad.port}/hook`,
      events: ["created", "ended"],
    });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
    // Each event is a delivery retried every ~50 ms: a few sandboxes' events go through the whole catalogue.
    for (let i = 0; i < 3; i++) {
      const id = await createSandbox(call);
      await call("DELETE", `/v1/agents/sandboxes/${id}`);
    }
    const reached = await eventually(() => bad.requests.length - seenBefore >= cases.length, 240_000, 200);
    assert.ok(reached, `the receiver was asked ${bad.requests.length - seenBefore} times`);
    await othersUnaffected("hostile webhook answers");
    const deliveries = await call<{ deliveries: { attempt_log: { status_code: number | null; error: string | null }[] }[] }>(
      "GET",
      `/v1/agents/webhooks/${hook.body.id}/deliveries`,
    );
    assert.equal(deliveries.status, 200);
    const errors = deliveries.body.deliveries.flatMap((d) => d.attempt_log).filter((a) => a.error !== null);
    assert.ok(errors.length > 0, JSON.stringify(deliveries.body).slice(0, 500));
    await call("DELETE", `/v1/agents/webhooks/${hook.body.id}`);
  });
});

describe("an image registry's hostile answers", { skip: !haveImageTools && "skopeo or umoci missing" }, () => {
  const V2 = answer("200 OK", ["content-type: application/json", "docker-distribution-api-version: registry/2.0"], "{}");
  const manifestType = "content-type: application/vnd.oci.image.manifest.v1+json";
  const config = { mediaType: "application/vnd.oci.image.config.v1+json", size: 2, digest: `sha256:${"4".repeat(64)}` };
  const manifest = (layers: unknown) =>
    JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", config, layers });
  const layer = (size: unknown) => ({ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", size, digest: `sha256:${"5".repeat(64)}` });

  let builds = 0;
  /** The manifest answer of each build's image (`fuzz/image-N`), so that builds can run side by side. */
  const manifests = new Map<string, Hostile["answer"]>();
  async function build(manifestAnswer: Hostile["answer"]): Promise<{ status: string; error: string | null }> {
    const image = `image-${++builds}`;
    manifests.set(image, manifestAnswer);
    registry.pick = (req) => {
      const line = req.head.split("\r\n")[0] ?? "";
      if (/ \/v2\/ /.test(line)) return raw(V2);
      const named = / \/v2\/fuzz\/([^/]+)\/manifests\//.exec(line);
      const hostile = named ? manifests.get(named[1] as string) : undefined;
      if (hostile) return hostile;
      return raw(answer("404 Not Found", ["content-type: application/json"], '{"errors":[{"code":"BLOB_UNKNOWN"}]}'));
    };
    const res = await call<{ build_id: string }>("POST", "/v1/agents/templates/build", {
      name: `fuzz-${builds}`,
      docker_image: `127.0.0.1:${registry.port}/fuzz/${image}:latest`,
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    for (let i = 0; i < 900; i++) {
      const s = await call<{ status: string; error: string | null }>("GET", `/v1/agents/templates/builds/${res.body.build_id}/status`);
      assert.equal(s.status, 200, JSON.stringify(s.body));
      if (s.body.status === "completed" || s.body.status === "failed") return s.body;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error("the build did not end in 180 s");
  }

  test("a layer size that is not a count fails the build before anything is pulled", async () => {
    const sizes = [-(2 ** 40), "123", null, 1.5];
    const ended = await Promise.all(sizes.map((size) => build(raw(answer("200 OK", [manifestType], manifest([layer(size), layer(10)]))))));
    sizes.forEach((size, i) => {
      const s = ended[i] as { status: string; error: string | null };
      assert.equal(s.status, "failed");
      assert.match(String(s.error), /valid size/, `size ${JSON.stringify(size)}: ${s.error}`);
    });
    await othersUnaffected("hostile layer sizes");
  });

  test("malformed manifests and answers fail the build; the service and other tenants go on", async () => {
    const cases: Hostile[] = [
      ...hostileAnswers({ type: "application/vnd.oci.image.manifest.v1+json", body: manifest([layer(10)]) }).filter((h) =>
        /status 000|reason with NUL|reset|huge head|chunked bad|empty answer|no status line/.test(h.name),
      ),
      { name: "manifest not JSON", answer: raw(answer("200 OK", [manifestType], "{not json")) },
      { name: "manifest null", answer: raw(answer("200 OK", [manifestType], "null")) },
      { name: "index whose manifests is an object", answer: raw(answer("200 OK", [manifestType], '{"manifests":{"a":1}}')) },
      { name: "layers not a list", answer: raw(answer("200 OK", [manifestType], '{"layers":"x"}')) },
    ];
    const ended = await Promise.all(cases.map((h) => build(h.answer)));
    cases.forEach((h, i) => {
      const s = ended[i] as { status: string; error: string | null };
      assert.equal(s.status, "failed", h.name);
      assert.doesNotMatch(String(s.error), /internal error/, `${h.name}: ${s.error}`);
    });
    await othersUnaffected("hostile registry answers");
  });
});

describe("an object store's hostile answers", () => {
  let store: HostileServer;
  let withStore: TestServer;
  /** Set per case: the answer to the store's PUT or GET of an object (its listings at start are good). */
  let objectAnswer: Hostile["answer"] | undefined;
  const xml = (body: string) => ["content-type: application/xml", body] as const;
  const etag = answer("200 OK", ['etag: "0123456789abcdef0123456789abcdef"'], "");

  before(async () => {
    store = await startHostile((req) => {
      const line = req.head.split("\r\n")[0] ?? "";
      if (/[?&]uploads/.test(line)) {
        const [type, body] = xml("<Error><Code>NotImplemented</Code><Message>no</Message></Error>");
        return raw(answer("501 Not Implemented", [type], body));
      }
      if (/[?&]list-type=2/.test(line)) {
        const [type, body] = xml('<?xml version="1.0"?><ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>');
        return raw(answer("200 OK", [type], body));
      }
      if (line.startsWith("DELETE ")) return raw(answer("204 No Content", [], ""));
      return objectAnswer ?? raw(etag);
    });
    withStore = await startServer({
      env: {
        AGENTBOX_WARM_POOL: "0",
        AGENTBOX_FILES_BACKEND: "s3",
        AGENTBOX_S3_ENDPOINT: `http://127.0.0.1:${store.port}`,
        AGENTBOX_S3_BUCKET: "fuzz",
        AGENTBOX_S3_FORCE_PATH_STYLE: "1",
        AGENTBOX_S3_ACCESS_KEY_ID: "fuzz",
        AGENTBOX_S3_SECRET_ACCESS_KEY: "fuzz-secret",
      },
    });
  });

  after(async () => {
    await withStore?.dispose();
    await store?.close();
  });

  const upload = async () => {
    const form = new FormData();
    form.append("purpose", "batch");
    form.append("file", new Blob(["hello, store"]), "a.txt");
    const res = await fetch(`${withStore.url}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${withStore.key}` },
      body: form,
      signal: AbortSignal.timeout(120_000),
    });
    return { status: res.status, text: await res.text() };
  };

  // The SDK retries a failed request (three attempts) and waits up to its silence timeout, or for a
  // 101 up to its head timeout (120 s): the slow drips and the 101 are left out here.
  const cases = () =>
    hostileAnswers({ type: "application/octet-stream", body: "hello, store" }).filter((h) => !/slow drip|101/.test(h.name));

  test("an upload the store answers badly is a 502/503/504 for that request", async () => {
    for (const h of cases()) {
      objectAnswer = h.answer;
      const up = await upload();
      if (h.mayPass && up.status === 200) continue;
      assert.ok(ERROR_STATUSES.includes(up.status), `${h.name}: ${up.status} ${up.text.slice(0, 300)}`);
    }
    assert.equal((await fetch(`${withStore.url}/health`)).status, 200);
  });

  test("a download the store answers badly is an error for that request, never a 500", async () => {
    objectAnswer = undefined;
    const up = await upload();
    assert.equal(up.status, 200, up.text);
    const id = (JSON.parse(up.text) as { id: string }).id;
    for (const h of cases()) {
      objectAnswer = h.answer;
      const res = await fetch(`${withStore.url}/v1/files/${id}/content`, {
        headers: { authorization: `Bearer ${withStore.key}` },
        signal: AbortSignal.timeout(120_000),
      });
      // Once the head is sent, a bad body can only cut the answer short.
      const body = await res.text().catch((err: Error) => `(cut: ${err.message})`);
      assert.notEqual(res.status, 500, `${h.name}: ${body.slice(0, 300)}`);
      if (res.status !== 200) assert.ok(ERROR_STATUSES.includes(res.status), `${h.name}: ${res.status} ${body.slice(0, 300)}`);
    }
    assert.equal((await fetch(`${withStore.url}/health`)).status, 200);
  });
});
