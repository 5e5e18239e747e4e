// Property-based fuzzing of the whole HTTP surface. The routes come from the running service's own
// /openapi.json (so routes added later are fuzzed too), plus the undocumented ones. Requests mix
// schema-shaped bodies with wrong types, junk JSON, malformed JSON, deep nesting and oversize
// bodies, odd content types, bad or missing keys, random and malformed path parameters and query
// strings, unknown methods and paths, and raw malformed HTTP on a socket. Asserted for every one:
// never a 5xx, an answer within a deadline, the error envelope on every 4xx; and afterwards the
// service is healthy, still runs code, and counted no 5xx at all.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import { createKeys } from "../bench/load.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

const NUM_RUNS = Number(process.env.FUZZ_RUNS ?? 800);
const REQUEST_TIMEOUT_MS = 15_000;
const BODY_LIMIT = 65_536;

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  additionalProperties?: boolean | JsonSchema;
};

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: string[];
  body: JsonSchema | undefined;
}

let server: TestServer;
let operations: Operation[];
let schemas: Record<string, JsonSchema>;
const realIds: string[] = [];

before(async () => {
  server = await startServer({
    env: {
      AGENTBOX_RATE_LIMIT_PER_MINUTE: "1000000",
      AGENTBOX_BODY_LIMIT_BYTES: String(BODY_LIMIT),
      AGENTBOX_MAX_SANDBOXES_PER_TENANT: "8",
      AGENTBOX_MAX_SANDBOXES: "100",
      AGENTBOX_WARM_POOL: "2",
    },
  });
  const call = client(server);
  for (let i = 0; i < 3; i++) {
    const res = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(res.status, 201);
    realIds.push(res.body.sandbox_id);
  }
  const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
    paths: Record<
      string,
      Record<string, { parameters?: { in: string; name: string }[]; requestBody?: { content?: Record<string, { schema?: JsonSchema }> } }>
    >;
    components?: { schemas?: Record<string, JsonSchema> };
  };
  schemas = doc.components?.schemas ?? {};
  operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      pathParams: (op.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name),
      queryParams: (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
      body: op.requestBody?.content?.["application/json"]?.schema,
    })),
  );
  for (const path of ["/health", "/metrics", "/openapi.json", "/docs", "/docs/json"]) {
    operations.push({ method: "GET", path, pathParams: [], queryParams: [], body: undefined });
  }
  assert.ok(operations.length >= 20, `only ${operations.length} operations found`);
});

after(async () => {
  await server?.dispose();
});

// ---- generators ----

/** encodeURIComponent that accepts any string (lone surrogates become U+FFFD). */
const enc = (s: string) => encodeURIComponent(s.replace(/[\uD800-\uDFFF]/g, "\uFFFD"));

const junkJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

const nastyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom(
    "",
    " ",
    "/",
    ".",
    "..",
    "../../../../etc/passwd",
    "/home/user",
    "/proc/self/environ",
    "\u0000",
    "a\u0000b",
    "%00",
    "$HOME $(id)",
    "'; DROP TABLE sandboxes; --",
    "\uFFFF\uD800x",
    "x".repeat(5000),
  ),
);

const nastyNumber = fc.oneof(fc.integer({ min: -3, max: 5 }), fc.constantFrom(0, -1, 1.5, 601, 1e6, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308));

/** Values shaped by a JSON schema, each part replaced by junk now and then. */
function fromSchema(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return junkJson;
  if (schema.$ref) return fromSchema(schemas[schema.$ref.replace(/^#\/components\/schemas\//, "")], depth + 1);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => fromSchema(s, depth + 1)));
  let shaped: fc.Arbitrary<unknown>;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (schema.enum) shaped = fc.constantFrom(...schema.enum);
  else if (type === "string") shaped = nastyString;
  else if (type === "integer" || type === "number") shaped = nastyNumber;
  else if (type === "boolean") shaped = fc.boolean();
  else if (type === "array") shaped = fc.array(fromSchema(schema.items, depth + 1), { maxLength: 4 });
  else if (type === "object" || schema.properties) {
    const props = schema.properties ?? {};
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [name, sub] of Object.entries(props)) {
      // Keep runs short: a fuzzed run or command must not be able to ask for minutes.
      model[name] = name === "timeout" ? fc.oneof(fc.integer({ min: 1, max: 3 }), nastyNumber, junkJson) : fromSchema(sub, depth + 1);
    }
    const requiredKeys = (schema.required ?? []).filter((k) => k in model);
    shaped = fc
      .tuple(fc.record(model, { requiredKeys }), fc.dictionary(fc.string({ maxLength: 10 }), junkJson, { maxKeys: 3 }))
      .map(([known, extra]) => ({ ...extra, ...known }));
  } else shaped = junkJson;
  return fc.oneof({ weight: 5, arbitrary: shaped }, { weight: 1, arbitrary: junkJson });
}

const malformedBody = fc.oneof(
  fc.constantFrom(
    "{",
    "}",
    "[",
    '{"a":',
    '{"code": "x", "language": }',
    "nul",
    "tru",
    "'single'",
    "{'a':1}",
    "\u0000",
    "1e999",
    '"\\ud800"',
    "{}garbage",
    "",
  ),
  fc.string({ maxLength: 60 }),
  fc.integer({ min: 10, max: 3000 }).map((n) => "[".repeat(n) + "]".repeat(n)),
  fc.integer({ min: 10, max: 200 }).map((n) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`),
  fc.constant("x".repeat(BODY_LIMIT + 10)),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString("latin1")),
);

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant("application/json") },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      undefined,
      "application/json; charset=utf-8",
      "application/json; charset=utf-16",
      "APPLICATION/JSON",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data",
      "multipart/form-data; boundary=xyz",
      "application/octet-stream",
      "a/b/c",
      "",
      ";;;",
    ),
  },
);

function authHeader(key: string): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(`Bearer ${key}`) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constantFrom(
          undefined,
          "",
          "Bearer",
          "Bearer ",
          `bearer ${key}`,
          `Basic ${key}`,
          `Bearer ${key}x`,
          `Bearer  ${key}`,
          `Bearer ${"k".repeat(600)}`,
        ),
        fc.string({ maxLength: 30 }).map((s) => `Bearer ${s.replace(/[^\x20-\x7e]/g, "")}`),
      ),
    },
  );
}

const pathParam = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...["0", "1", "2"]).map((i) => realIds[Number(i)] as string) },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }).map((s) => enc(s)),
      fc.constantFrom("%", "%zz", "%00", "%2e%2e", "..", ".", "%2F", "a%2Fb", "x".repeat(600), "%E0%A4%A", "null", "undefined", "-1"),
    ),
  },
);

const queryString = (params: string[]) =>
  fc.oneof(
    fc.constant(""),
    fc
      .array(
        fc.tuple(
          fc.constantFrom(...params, "x", "limit", "offset", "__proto__", "constructor"),
          fc.oneof(nastyString, nastyNumber.map(String)),
        ),
        {
          maxLength: 4,
        },
      )
      .map((pairs) => `?${pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join("&")}`),
    fc.constantFrom(
      "?",
      "?&&",
      "?=",
      "?%",
      "?%zz=1",
      "?limit=%E0%A4%A",
      "?limit=1&limit=2",
      "?a[b]=1",
      "?path",
      "?path=",
      `?path=${"%2F".repeat(300)}`,
    ),
  );

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

function requestFor(key: string): fc.Arbitrary<FuzzRequest> {
  return fc.constantFrom(...operations).chain((op) =>
    fc
      .record({
        method: fc.oneof(
          { weight: 9, arbitrary: fc.constant(op.method) },
          { weight: 1, arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD") },
        ),
        params: fc.array(pathParam, { minLength: op.pathParams.length, maxLength: op.pathParams.length }),
        query: queryString(op.queryParams),
        // The admin routes take the admin key: fuzz them with it, not only with a refused tenant key.
        auth: authHeader(op.path.startsWith("/v1/admin") ? server.adminKey : key),
        contentType,
        requestId: fc.option(
          fc.oneof(
            fc.string({ maxLength: 20 }).map((s) => s.replace(/[^\x20-\x7e]/g, "")),
            fc.constant("x".repeat(300)),
          ),
          { nil: undefined },
        ),
        body: fc.oneof(
          { weight: 6, arbitrary: fromSchema(op.body).map((v) => JSON.stringify(v) as string | undefined) },
          { weight: 3, arbitrary: malformedBody.map((v) => v as string | undefined) },
          { weight: 1, arbitrary: fc.constant(undefined) },
        ),
      })
      .map((r) => {
        let path = op.path;
        op.pathParams.forEach((name, i) => {
          path = path.replace(`{${name}}`, r.params[i] as string);
        });
        const headers: Record<string, string> = {};
        if (r.auth !== undefined) headers.authorization = r.auth;
        if (r.contentType !== undefined && r.body !== undefined) headers["content-type"] = r.contentType;
        if (r.requestId !== undefined) headers["x-request-id"] = r.requestId;
        const hasBody = r.body !== undefined && r.method !== "GET" && r.method !== "HEAD";
        return { method: r.method, url: `${path}${r.query}`, headers, body: hasBody ? r.body : undefined };
      }),
  );
}

const randomRequest: fc.Arbitrary<FuzzRequest> = fc
  .record({
    method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"),
    path: fc.oneof(
      fc.webPath(),
      fc.string({ maxLength: 60 }).map((s) => `/${enc(s)}`),
      fc.constantFrom(
        "/v1",
        "/v1/",
        "/v1/agents",
        "/v1/agents/",
        "//v1//agents//sandboxes",
        "/v1/agents/sandboxes/",
        "/v1/agents/sandboxes/%",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/docs/../openapi.json",
        "/v1/inference/chat/completions",
        "/v1/agents/sandboxes/x/code/run/extra",
        "/health?x=%",
      ),
    ),
    body: fc.option(
      fc.oneof(
        malformedBody,
        junkJson.map((v) => JSON.stringify(v)),
      ),
      { nil: undefined },
    ),
  })
  .map((r) => ({
    method: r.method,
    url: r.path.startsWith("/") ? r.path : `/${r.path}`,
    headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
    body: r.method === "GET" || r.method === "HEAD" ? undefined : r.body,
  }));

// ---- the checks ----

const seen = new Map<number, number>();

async function send(req: FuzzRequest): Promise<void> {
  let res: Response;
  try {
    res = await fetch(`${server.url}${req.url}`, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const e = err as Error;
    // Requests fetch itself refuses to send (e.g. a malformed URL) test nothing of ours.
    if (e.name === "TypeError" && !/fetch failed/.test(e.message)) return;
    throw new Error(`${req.method} ${req.url} got no answer: ${e.name} ${e.message} ${String((e as { cause?: unknown }).cause ?? "")}`);
  }
  const text = await res.text();
  seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
  const where = `${req.method} ${req.url.slice(0, 200)} (${req.headers["content-type"]}) body ${JSON.stringify(req.body?.slice(0, 200))} → ${res.status} ${text.slice(0, 300)}`;
  assert.ok(res.status < 500, `5xx: ${where}`);
  assert.ok(res.headers.get("x-request-id"), `no x-request-id: ${where}`);
  if (res.status >= 400 && req.method !== "HEAD") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      assert.fail(`4xx without a JSON body: ${where}`);
    }
    const env = parsed as { error?: { code?: unknown; message?: unknown } };
    assert.deepEqual(Object.keys(env), ["error"], `not the envelope: ${where}`);
    assert.equal(typeof env.error?.code, "string", where);
    assert.match(String(env.error?.code), /^[a-z_]+$/, where);
    assert.equal(typeof env.error?.message, "string", where);
  }
}

/** Writes raw bytes on a socket and returns the status of the answer (0 if the connection just closed). */
function raw(bytes: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, "127.0.0.1");
    let data = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to ${JSON.stringify(bytes.slice(0, 200))}`));
    }, 5000);
    socket.on("data", (d) => {
      data += d.toString("latin1");
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(data);
      resolve({ status: m ? Number(m[1]) : 0, text: data });
    });
    socket.write(bytes, "latin1");
    // Half-close: a complete request gets its answer, then the server ends the connection.
    socket.end();
  });
}

const rawRequest = fc.oneof(
  fc.constantFrom(
    "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "GET /\u0000 HTTP/1.1\r\nHost: x\r\n\r\n",
    "FOO /health HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET /health HTTP/9.9\r\nHost: x\r\n\r\n",
    "GET /health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
    "GET /health HTTP/1.1\r\nHost: x\r\nBad\u0001Header: y\r\n\r\n",
    "POST /v1/agents/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    "POST /v1/agents/sandboxes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n",
    `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(40_000)}\r\n\r\n`,
    `GET /${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    "GET /health HTTP/1.0\r\n\r\n",
    "\r\n\r\n",
  ),
  fc.string({ minLength: 1, maxLength: 80 }).map((s) => `${s.replace(/[\r\n]/g, "")}\r\n\r\n`),
  fc.uint8Array({ minLength: 1, maxLength: 80 }).map(
    (b) =>
      `${Buffer.from(b)
        .toString("latin1")
        .replace(/[\r\n]/g, "")}\r\n\r\n`,
  ),
);

describe("fuzzing every route", () => {
  test(`documented routes with schema-shaped, junk and malformed input (${NUM_RUNS} requests)`, { timeout: 120_000 }, async () => {
    await fc.assert(fc.asyncProperty(requestFor(server.key), send), { numRuns: NUM_RUNS, endOnFailure: true, includeErrorInReport: true });
    assert.ok((seen.get(200) ?? 0) + (seen.get(201) ?? 0) > 0, `some requests got through: ${JSON.stringify([...seen])}`);
    assert.ok((seen.get(400) ?? 0) > 0 && (seen.get(401) ?? 0) > 0 && (seen.get(404) ?? 0) > 0, JSON.stringify([...seen]));
  });

  test(`random paths and methods (${Math.ceil(NUM_RUNS / 2)} requests)`, { timeout: 60_000 }, async () => {
    await fc.assert(fc.asyncProperty(randomRequest, send), {
      numRuns: Math.ceil(NUM_RUNS / 2),
      endOnFailure: true,
      includeErrorInReport: true,
    });
  });

  test("malformed HTTP on a raw socket: a 4xx envelope, never a 5xx or silence", { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(rawRequest, async (bytes) => {
        const { status, text } = await raw(bytes);
        const where = `${JSON.stringify(bytes.slice(0, 120))} → ${text.slice(0, 200)}`;
        // Blank lines before a request line are skipped by HTTP parsers: nothing was asked.
        if (bytes.trim() === "") return;
        assert.ok(status > 0, `no HTTP answer: ${where}`);
        assert.ok(status < 500, where);
        if (status >= 400) {
          const body = text.slice(text.indexOf("\r\n\r\n") + 4);
          assert.match(body, /^\{"error":\{"code":"[a-z_]+","message":"[^"]+"\}\}$/, where);
        }
      }),
      { numRuns: Math.ceil(NUM_RUNS / 3), endOnFailure: true, includeErrorInReport: true },
    );
  });

  test("afterwards: healthy, runs code, and no 5xx was ever counted", async () => {
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    // A new tenant: the fuzzer may have used up the first one's quota and killed its sandboxes.
    const [key] = await createKeys(server.dataDir, 1);
    const call = client({ url: server.url, key: key as string });
    const made = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(made.status, 201);
    const res = await call<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${made.body.sandbox_id}/code/run`, {
      language: "python",
      code: "print(6 * 7)",
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.logs.stdout, "42\n");
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const fivexx = metrics.split("\n").filter((l) => l.startsWith("agentbox_http_requests_total") && /status="5\d\d"/.test(l));
    assert.deepEqual(fivexx, []);
    assert.doesNotMatch(server.logs(), /"level":50/, "no error was logged");
  });
});
