// Rate limits, capacity and every size bound, end to end with small limits set by environment:
// exact status codes, error codes and headers (Retry-After, RateLimit-Limit/-Remaining/-Reset).
// Also what operators see: request ids in every request's log lines, and the Prometheus metrics.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createKeys } from "../bench/load.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

const LIMITS = {
  AGENTBOX_RATE_LIMIT_PER_MINUTE: "5",
  AGENTBOX_MAX_CONCURRENT_RUNS_PER_KEY: "1",
  AGENTBOX_MAX_CONCURRENT_RUNS: "3",
  AGENTBOX_MAX_SANDBOXES: "4",
  AGENTBOX_MAX_SANDBOXES_PER_TENANT: "2",
  AGENTBOX_MAX_CONTEXTS_PER_SANDBOX: "2",
  AGENTBOX_MAX_JSON_DEPTH: "8",
  AGENTBOX_MAX_CODE_BYTES: "2000",
  AGENTBOX_BODY_LIMIT_BYTES: "20000",
  AGENTBOX_MAX_HEADER_BYTES: "8192",
  AGENTBOX_OUTPUT_LIMIT_BYTES: "4096",
  AGENTBOX_WARM_POOL: "1",
  AGENTBOX_LOG_LEVEL: "info",
};

interface Envelope {
  error: { code: string; message: string };
}

let server: TestServer;

before(async () => {
  server = await startServer({ env: LIMITS });
});

after(async () => {
  await server?.dispose();
});

/** A client for a fresh key (its own tenant) with the given per-key overrides. */
async function newKey(opts: { rateLimitPerMinute?: number; maxConcurrentRuns?: number } = {}) {
  const [key] = await createKeys(server.dataDir, 1, opts);
  return client({ url: server.url, key: key as string });
}

/** A key with no per-minute limit worth the name, for the tests that are not about it. */
const roomy = (maxConcurrentRuns?: number) => newKey({ rateLimitPerMinute: 1_000_000, maxConcurrentRuns });

type Call = ReturnType<typeof client>;

async function createSandbox(call: Call): Promise<string> {
  const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.sandbox_id;
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) if (line.startsWith(name)) total += Number(line.split(" ").pop());
  return total;
}

function assertEnvelope(body: unknown, code: string): void {
  const env = body as Envelope;
  assert.equal(env.error?.code, code, JSON.stringify(body));
  assert.equal(typeof env.error.message, "string");
  assert.ok(env.error.message.length > 0);
}

function messageOf(body: unknown): string {
  return (body as Envelope).error.message;
}

function retryAfter(headers: Headers): number {
  const value = headers.get("retry-after");
  assert.match(value ?? "", /^[0-9]+$/, "Retry-After is whole seconds");
  return Number(value);
}

describe("requests per minute per API key", () => {
  test("5 per minute: headers count down, the 6th is 429 rate_limited with Retry-After and RateLimit-*", async () => {
    const call = await newKey();
    for (let i = 0; i < 5; i++) {
      const res = await call("GET", "/v1/agents/sandboxes");
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("ratelimit-limit"), "5");
      assert.equal(res.headers.get("ratelimit-remaining"), String(4 - i));
      const reset = Number(res.headers.get("ratelimit-reset"));
      assert.ok(reset >= 1 && reset <= 60, `RateLimit-Reset ${reset}`);
    }
    const before = await metric('agentbox_rate_limited_total{reason="requests_per_minute"}');
    const res = await call("POST", "/v1/agents/sandboxes", {});
    assert.equal(res.status, 429);
    assertEnvelope(res.body, "rate_limited");
    const wait = retryAfter(res.headers);
    assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    assert.equal(res.headers.get("ratelimit-limit"), "5");
    assert.equal(res.headers.get("ratelimit-remaining"), "0");
    assert.equal(res.headers.get("ratelimit-reset"), String(wait));
    assert.ok(res.headers.get("x-request-id"));
    assert.equal(await metric('agentbox_rate_limited_total{reason="requests_per_minute"}'), before + 1);
  });

  test("the limit is per key; a key's own limit overrides the default; public routes and bad keys are not counted", async () => {
    const limited = await newKey({ rateLimitPerMinute: 2 });
    const other = await newKey();
    assert.equal((await limited("GET", "/v1/agents/sandboxes")).status, 200);
    assert.equal((await limited("GET", "/v1/agents/templates")).status, 200);
    const third = await limited("GET", "/v1/agents/sandboxes");
    assert.equal(third.status, 429);
    assert.equal(third.headers.get("ratelimit-limit"), "2");
    const fresh = await other("GET", "/v1/agents/sandboxes");
    assert.equal(fresh.status, 200, "another key has its own budget");
    assert.equal(fresh.headers.get("ratelimit-remaining"), "4");
    for (let i = 0; i < 10; i++) {
      for (const path of ["/health", "/metrics", "/openapi.json"]) {
        const res = await fetch(`${server.url}${path}`);
        await res.arrayBuffer();
        assert.equal(res.status, 200, path);
        assert.equal(res.headers.get("ratelimit-limit"), null, `${path} is not limited`);
      }
    }
    const anonymous = await client({ url: server.url, key: "not-a-key" })("GET", "/v1/agents/sandboxes");
    assert.equal(anonymous.status, 401);
    assertEnvelope(anonymous.body, "unauthorized");
    const unlimited = await newKey({ rateLimitPerMinute: 0 });
    for (let i = 0; i < 8; i++) assert.equal((await unlimited("GET", "/v1/agents/sandboxes")).status, 200, "a limit of 0 is no limit");
  });
});

describe("executions at once per API key", () => {
  test("a second run or command while one runs is 429 rate_limited with Retry-After; free again once it ends", async () => {
    const call = await roomy();
    const id = await createSandbox(call);
    const slow = call("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "python",
      code: "import time; time.sleep(1.5); print('slow')",
    });
    await new Promise((r) => setTimeout(r, 300));
    const before = await metric('agentbox_rate_limited_total{reason="concurrent_runs"}');
    for (const [route, body] of [
      ["code/run", { language: "bash", code: "echo hi" }],
      ["commands/run", { command: "echo hi" }],
    ] as const) {
      const res = await call("POST", `/v1/agents/sandboxes/${id}/${route}`, body);
      assert.equal(res.status, 429, route);
      assertEnvelope(res.body, "rate_limited");
      assert.match(messageOf(res.body), /executions running/);
      assert.equal(retryAfter(res.headers), 1);
      assert.ok(res.headers.get("ratelimit-limit"), "the per-minute headers are there too");
    }
    assert.equal(await metric('agentbox_rate_limited_total{reason="concurrent_runs"}'), before + 2);
    // Other calls are not executions: not limited by it.
    assert.equal((await call("GET", `/v1/agents/sandboxes/${id}`)).status, 200);
    const done = await slow;
    assert.equal(done.status, 200);
    assert.equal((done.body as { logs: { stdout: string } }).logs.stdout, "slow\n");
    const next = await call<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "bash",
      code: "echo again",
    });
    assert.equal(next.status, 200);
    assert.equal(next.body.logs.stdout, "again\n");
    // A run that fails validation or errors does not keep its slot.
    assert.equal((await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "cobol", code: "x" })).status, 400);
    assert.equal((await call("POST", `/v1/agents/sandboxes/nope/code/run`, { language: "bash", code: "x" })).status, 404);
    assert.equal((await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "echo ok" })).status, 200);
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });

  test("a key's own concurrency limit overrides the default", async () => {
    const call = await roomy(2);
    const id = await createSandbox(call);
    const runs = await Promise.all([
      call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "sleep 0.5; echo a" }),
      call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "sleep 0.5; echo b" }),
    ]);
    assert.deepEqual(
      runs.map((r) => r.status),
      [200, 200],
    );
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });
});

describe("capacity", () => {
  test("past the global cap on executions: 503 at_capacity with Retry-After (a tenant over its fair share: 429)", async () => {
    // A lone tenant gets at most half of the 3 slots' share (2, the floor); a second tenant the rest.
    const a = await roomy(10);
    const b = await roomy(10);
    const idA = await createSandbox(a);
    const idB = await createSandbox(b);
    const before = await metric("agentbox_at_capacity_total");
    const shareBefore = await metric('agentbox_rate_limited_total{reason="fair_share"}');
    const slowA = [1, 2].map(() => a("POST", `/v1/agents/sandboxes/${idA}/commands/run`, { command: "sleep 1.5" }));
    await new Promise((r) => setTimeout(r, 300));
    const overShare = await a("POST", `/v1/agents/sandboxes/${idA}/code/run`, { language: "python", code: "print(1)" });
    assert.equal(overShare.status, 429);
    assertEnvelope(overShare.body, "rate_limited");
    assert.match(messageOf(overShare.body), /fair share/);
    assert.equal(retryAfter(overShare.headers), 1);
    const slowB = b("POST", `/v1/agents/sandboxes/${idB}/commands/run`, { command: "sleep 1.5" });
    await new Promise((r) => setTimeout(r, 300));
    const res = await b("POST", `/v1/agents/sandboxes/${idB}/code/run`, { language: "python", code: "print(1)" });
    assert.equal(res.status, 503);
    assertEnvelope(res.body, "at_capacity");
    assert.equal(retryAfter(res.headers), 1);
    assert.deepEqual(
      (await Promise.all([...slowA, slowB])).map((r) => r.status),
      [200, 200, 200],
    );
    assert.equal(await metric("agentbox_at_capacity_total"), before + 1);
    assert.equal(await metric('agentbox_rate_limited_total{reason="fair_share"}'), shareBefore + 1);
    assert.equal((await b("POST", `/v1/agents/sandboxes/${idB}/code/run`, { language: "python", code: "print(1)" })).status, 200);
    assert.equal((await a("DELETE", `/v1/agents/sandboxes/${idA}`)).status, 200);
    assert.equal((await b("DELETE", `/v1/agents/sandboxes/${idB}`)).status, 200);
  });

  test("per-tenant quota: 429 quota_exceeded with Retry-After, also for creates racing each other", async () => {
    const call = await roomy();
    const before = await metric('agentbox_rate_limited_total{reason="tenant_quota"}');
    const results = await Promise.all([1, 2, 3, 4].map(() => call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {})));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [201, 201, 429, 429], "exactly the quota of 2 is created");
    for (const r of results.filter((r) => r.status === 429)) {
      assertEnvelope(r.body, "quota_exceeded");
      assert.ok(retryAfter(r.headers) >= 1);
    }
    assert.equal(await metric('agentbox_rate_limited_total{reason="tenant_quota"}'), before + 2);
    const ids = results.filter((r) => r.status === 201).map((r) => r.body.sandbox_id);
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${ids[0]}`)).status, 200);
    const again = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(again.status, 201, "a killed sandbox frees its place in the quota");
    for (const id of [ids[1], again.body.sandbox_id]) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });

  test("past the global cap on live sandboxes: 503 at_capacity with Retry-After; a kill makes room", async () => {
    const a = await roomy();
    const b = await roomy();
    const c = await roomy();
    const ids = [await createSandbox(a), await createSandbox(a), await createSandbox(b), await createSandbox(b)];
    const health = (await (await fetch(`${server.url}/health`)).json()) as { live_sandboxes: number };
    assert.equal(health.live_sandboxes, 4);
    const res = await c("POST", "/v1/agents/sandboxes", {});
    assert.equal(res.status, 503);
    assertEnvelope(res.body, "at_capacity");
    assert.equal(retryAfter(res.headers), 5);
    assert.equal((await b("DELETE", `/v1/agents/sandboxes/${ids[3]}`)).status, 200);
    const made = await c<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(made.status, 201);
    for (const [call, id] of [
      [a, ids[0]],
      [a, ids[1]],
      [b, ids[2]],
      [c, made.body.sandbox_id],
    ] as const) {
      assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    }
  });
});

describe("bounds on requests", () => {
  let call: Call;
  let id: string;

  before(async () => {
    call = await roomy();
    id = await createSandbox(call);
  });

  after(async () => {
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("body larger than the body limit: 413 payload_too_large", async () => {
    const res = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "python", code: "#".repeat(25_000) });
    assert.equal(res.status, 413);
    assertEnvelope(res.body, "payload_too_large");
  });

  test("code larger than the code limit: 413 payload_too_large; a command line too", async () => {
    const res = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "python", code: `#${"x".repeat(2000)}` });
    assert.equal(res.status, 413);
    assertEnvelope(res.body, "payload_too_large");
    assert.match(messageOf(res.body), /2000 bytes/);
    const cmd = await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: `echo ${"x".repeat(2000)}` });
    assert.equal(cmd.status, 413);
    assertEnvelope(cmd.body, "payload_too_large");
    const ok = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "python",
      code: `#${"x".repeat(1900)}\nprint('fits')`,
    });
    assert.equal(ok.status, 200);
  });

  test("JSON nested deeper than the limit: 400 invalid_request; at the limit it is accepted", async () => {
    const nest = (levels: number) => {
      let v: Record<string, unknown> = {};
      for (let i = 1; i < levels; i++) v = { a: v };
      return v;
    };
    // Body object (1) + metadata (2) + 6 more levels = 8, the limit.
    const atLimit = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { metadata: nest(7) });
    assert.equal(atLimit.status, 201, JSON.stringify(atLimit.body));
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${atLimit.body.sandbox_id}`)).status, 200);
    const tooDeep = await call("POST", "/v1/agents/sandboxes", { metadata: nest(8) });
    assert.equal(tooDeep.status, 400);
    assertEnvelope(tooDeep.body, "invalid_request");
    assert.match(messageOf(tooDeep.body), /nested deeper than 8/);
    // Brackets inside strings are text, not nesting.
    const inString = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "python",
      code: `print(len("${"[".repeat(50)}"))`,
    });
    assert.equal(inString.status, 200);
    assert.equal((inString.body as { logs: { stdout: string } }).logs.stdout, "50\n");
    const huge = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, "[".repeat(10_000) + "]".repeat(10_000));
    assert.equal(huge.status, 400);
    assertEnvelope(huge.body, "invalid_request");
  });

  test("headers larger than the header limit: 431 headers_too_large in the envelope", async () => {
    const res = await fetch(`${server.url}/v1/agents/sandboxes`, {
      headers: { authorization: "Bearer x", "x-padding": "p".repeat(10_000) },
    });
    assert.equal(res.status, 431);
    assertEnvelope(await res.json(), "headers_too_large");
    assert.equal((await fetch(`${server.url}/health`)).status, 200, "the service is fine afterwards");
  });

  test("contexts per sandbox beyond the limit: 400 invalid_state", async () => {
    const made: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await call<{ context_id: string }>("POST", `/v1/agents/sandboxes/${id}/code/contexts`, { language: "python" });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      made.push(res.body.context_id);
    }
    const res = await call("POST", `/v1/agents/sandboxes/${id}/code/contexts`, { language: "python" });
    assert.equal(res.status, 400);
    assertEnvelope(res.body, "invalid_state");
    assert.match(messageOf(res.body), /at most 2/);
    for (const ctx of made) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${ctx}`)).status, 200);
  });

  test("output past the per-run cap is cut with a marker and reported in `error` (a 200)", async () => {
    const res = await call<{ logs: { stdout: string }; error: string | null }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "python",
      code: "print('y' * 100000)",
    });
    assert.equal(res.status, 200);
    assert.match(res.body.error ?? "", /Output exceeded the limit of 4096 bytes/);
    assert.ok(res.body.logs.stdout.length < 4096 + 200, `stdout is ${res.body.logs.stdout.length} chars`);
    assert.match(res.body.logs.stdout, /output truncated/);
  });

  test("x-request-id: a sane one is echoed, anything else replaced by a fresh id", async () => {
    const sane = await call("GET", `/v1/agents/sandboxes/${id}`, undefined, { "x-request-id": "trace-42.a:b_c" });
    assert.equal(sane.headers.get("x-request-id"), "trace-42.a:b_c");
    for (const bad of ["has space", "x".repeat(200), "<script>", "a\tb"]) {
      const res = await call("GET", `/v1/agents/sandboxes/${id}`, undefined, { "x-request-id": bad });
      const got = res.headers.get("x-request-id") ?? "";
      assert.notEqual(got, bad);
      assert.match(got, /^[0-9a-f-]{36}$/);
    }
    const none = await call("GET", `/v1/agents/sandboxes/${id}`);
    assert.match(none.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  });
});

describe("observability", () => {
  test("every log line of a request carries its id, the one in the x-request-id header", async () => {
    const call = await roomy();
    const res = await call("GET", "/v1/agents/sandboxes/unknown-sandbox", undefined, { "x-request-id": "obs-trace-7" });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get("x-request-id"), "obs-trace-7");
    await new Promise((r) => setTimeout(r, 100));
    const lines = server
      .logs()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { reqId?: string; msg?: string; req?: unknown; res?: unknown; level: number });
    const mine = lines.filter((l) => l.reqId === "obs-trace-7").map((l) => l.msg);
    assert.deepEqual(mine, ["incoming request", "request completed"]);
    for (const l of lines)
      if (l.req !== undefined || l.res !== undefined) assert.ok(l.reqId, `a request line without reqId: ${JSON.stringify(l)}`);
  });

  test("metrics: requests by route and status, latency, executions by language and outcome, live sandboxes, kernel restarts", async () => {
    const call = await roomy();
    const id = await createSandbox(call);
    const restartsBefore = await metric('agentbox_kernel_restarts_total{language="bash"}');
    const exit = await call<{ error: string }>("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "bash", code: "exit 3" });
    assert.equal(exit.status, 200);
    assert.match(exit.body.error, /exit status 3/);
    assert.equal(await metric('agentbox_kernel_restarts_total{language="bash"}'), restartsBefore + 1);
    assert.equal((await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "python", code: "print(1)" })).status, 200);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(
      text,
      /^agentbox_http_requests_total\{method="POST",route="\/v1\/agents\/sandboxes\/:sandbox_id\/code\/run",status="200"\} \d+$/m,
    );
    assert.match(
      text,
      /^agentbox_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/v1\/agents\/sandboxes",status="200"\} \d+$/m,
    );
    assert.match(text, /^agentbox_executions_total\{language="python",outcome="ok"\} \d+$/m);
    assert.match(text, /^agentbox_executions_total\{language="bash",outcome="(kernel_lost|error)"\} \d+$/m);
    assert.match(text, /^agentbox_live_sandboxes [1-9]\d*$/m);
    // Which node answered the scrape (a lone service: both roles).
    assert.match(text, /^agentbox_node_info\{node_id="[^"]+",roles="both"\} 1$/m);
    assert.match(text, /^agentbox_rate_limited_total\{reason="requests_per_minute"\} \d+$/m);
    assert.match(text, /^agentbox_at_capacity_total\{route="[^"]+"\} \d+$/m);
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  });
});
