// End to end: authentication and tenant isolation. Every API call needs `Authorization: Bearer <key>`
// (401 with the error envelope otherwise); keys come from the operator CLI and can be revoked; a
// tenant never sees another tenant's sandbox (404, never 403). The admin API's own key is in admin.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { cli, createKey } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.dispose();
});

/** Requests with exactly the given headers (no key unless they carry one). */
const raw = (method: string, route: string, headers: Record<string, string>, body?: unknown) =>
  client({ url: server.url, key: "" })(method, route, body, headers);

function assertUnauthorized(res: { status: number; body: unknown }, what: string): void {
  assert.equal(res.status, 401, `${what}: ${JSON.stringify(res.body)}`);
  const body = res.body as { error: { code: string; message: string } };
  assert.deepEqual(Object.keys(body), ["error"], what);
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message"], what);
  assert.equal(body.error.code, "unauthorized", what);
  assert.ok(body.error.message.length > 0, what);
}

const ROUTES: [string, string, unknown?][] = [
  ["GET", "/v1/agents/sandboxes"],
  ["POST", "/v1/agents/sandboxes", {}],
  ["GET", "/v1/agents/sandboxes/some-id"],
  ["DELETE", "/v1/agents/sandboxes/some-id"],
  ["POST", "/v1/agents/sandboxes/some-id/timeout", { timeout: 10 }],
  ["POST", "/v1/agents/sandboxes/some-id/code/run", { language: "python", code: "print(1)" }],
  ["GET", "/v1/agents/templates"],
];

describe("requests without a valid key are 401 with the error envelope", () => {
  test("no Authorization header, on every route", async () => {
    for (const [method, route, body] of ROUTES) assertUnauthorized(await raw(method, route, {}, body), `${method} ${route}`);
  });

  test("malformed Authorization headers", async () => {
    const headers = [
      "Bearer",
      "Bearer ",
      "Basic x",
      `Basic ${Buffer.from(`user:${server.key}`).toString("base64")}`,
      "Bearer a b",
      server.key,
      `Token ${server.key}`,
      `Bearer ${server.key} extra`,
    ];
    for (const value of headers) {
      assertUnauthorized(await raw("GET", "/v1/agents/sandboxes", { authorization: value }), JSON.stringify(value));
      assertUnauthorized(
        await raw("POST", "/v1/agents/sandboxes/x/code/run", { authorization: value }, { language: "python", code: "1" }),
        JSON.stringify(value),
      );
    }
  });

  test("a wrong key, and one that differs from the real key by one character", async () => {
    assertUnauthorized(await raw("GET", "/v1/agents/sandboxes", { authorization: "Bearer abx_not-a-real-key" }), "wrong key");
    const last = server.key.at(-1) === "a" ? "b" : "a";
    assertUnauthorized(
      await raw("GET", "/v1/agents/sandboxes", { authorization: `Bearer ${server.key.slice(0, -1)}${last}` }),
      "near miss",
    );
    assertUnauthorized(await raw("GET", "/v1/agents/sandboxes", { authorization: `Bearer ${server.key}x` }), "longer");
  });

  test("a 401 does not reveal whether a sandbox exists", async () => {
    const created = await client(server)<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(created.status, 201);
    const existing = await raw("GET", `/v1/agents/sandboxes/${created.body.sandbox_id}`, { authorization: "Bearer wrong" });
    const missing = await raw("GET", "/v1/agents/sandboxes/missing", { authorization: "Bearer wrong" });
    assertUnauthorized(existing, "existing");
    assertUnauthorized(missing, "missing");
    assert.deepEqual(existing.body, missing.body);
  });

  test("health and the API document need no key", async () => {
    assert.equal((await raw("GET", "/health", {})).status, 200);
    assert.equal((await raw("GET", "/openapi.json", {})).status, 200);
  });

  test("the bootstrap key and a CLI-made key both work", async () => {
    assert.equal((await raw("GET", "/v1/agents/sandboxes", { authorization: `Bearer ${server.key}` })).status, 200);
    const made = createKey(server.dataDir, "works");
    assert.match(made.key, /^abx_/);
    assert.equal((await raw("GET", "/v1/agents/sandboxes", { authorization: `Bearer ${made.key}` })).status, 200);
  });

  test("a revoked key is refused at once, by id or by prefix", async () => {
    const byId = createKey(server.dataDir, "revoke-by-id");
    const call = client({ url: server.url, key: byId.key });
    const sandbox = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(sandbox.status, 201);
    const admin = { AGENTBOX_URL: server.url, AGENTBOX_ADMIN_KEY: server.adminKey };
    const revoked = cli(server.dataDir, ["keys", "revoke", byId.id], admin);
    assert.equal(revoked.status, 0, revoked.stderr);
    for (const [method, route, body] of [
      ["GET", "/v1/agents/sandboxes"],
      ["GET", `/v1/agents/sandboxes/${sandbox.body.sandbox_id}`],
      ["POST", `/v1/agents/sandboxes/${sandbox.body.sandbox_id}/code/run`, { language: "python", code: "print(1)" }],
      ["POST", "/v1/agents/sandboxes", {}],
    ] as [string, string, unknown?][]) {
      assertUnauthorized(await call(method, route, body), `revoked: ${method} ${route}`);
    }

    const byPrefix = createKey(server.dataDir, "revoke-by-prefix");
    assert.equal((await raw("GET", "/v1/agents/sandboxes", { authorization: `Bearer ${byPrefix.key}` })).status, 200);
    assert.equal(cli(server.dataDir, ["keys", "revoke", byPrefix.key.slice(0, 10)], admin).status, 0);
    assertUnauthorized(await raw("GET", "/v1/agents/sandboxes", { authorization: `Bearer ${byPrefix.key}` }), "revoked by prefix");
  });
});

describe("tenant isolation", () => {
  let a: ReturnType<typeof client>;
  let b: ReturnType<typeof client>;
  let aSandbox: string;

  before(async () => {
    a = client({ url: server.url, key: createKey(server.dataDir, "tenant-a").key });
    b = client({ url: server.url, key: createKey(server.dataDir, "tenant-b").key });
    const res = await a<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", { metadata: { owner: "a" } });
    assert.equal(res.status, 201);
    aSandbox = res.body.sandbox_id;
    const ran = await a("POST", `/v1/agents/sandboxes/${aSandbox}/code/run`, { language: "python", code: "secret = 'a-only'" });
    assert.equal(ran.status, 200);
  });

  function assertNotFound(res: { status: number; body: unknown }, what: string): void {
    assert.equal(res.status, 404, `${what}: ${JSON.stringify(res.body)}`);
    assert.equal((res.body as { error: { code: string } }).error.code, "sandbox_not_found", what);
  }

  test("another tenant gets 404 for the sandbox: get, run, timeout, delete", async () => {
    assertNotFound(await b("GET", `/v1/agents/sandboxes/${aSandbox}`), "get");
    assertNotFound(await b("POST", `/v1/agents/sandboxes/${aSandbox}/code/run`, { language: "python", code: "print(secret)" }), "run");
    assertNotFound(await b("POST", `/v1/agents/sandboxes/${aSandbox}/timeout`, { timeout: 1 }), "timeout");
    assertNotFound(await b("DELETE", `/v1/agents/sandboxes/${aSandbox}`), "delete");
    // The 404 is the same as for a sandbox that does not exist at all.
    const missing = await b("GET", "/v1/agents/sandboxes/does-not-exist");
    assertNotFound(missing, "missing");
  });

  test("the owner's sandbox is untouched by those attempts", async () => {
    const got = await a<{ status: string; timeout_at: string; started_at: string }>("GET", `/v1/agents/sandboxes/${aSandbox}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.status, "running");
    assert.equal(Date.parse(got.body.timeout_at) - Date.parse(got.body.started_at), 300_000, "b's timeout call changed nothing");
    const ran = await a<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${aSandbox}/code/run`, {
      language: "python",
      code: "print(secret)",
    });
    assert.equal(ran.body.logs.stdout, "a-only\n");
  });

  test("lists show only the caller's own sandboxes", async () => {
    const bRes = await b<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(bRes.status, 201);
    const bList = await b<{ sandboxes: { sandbox_id: string }[]; total: number }>("GET", "/v1/agents/sandboxes");
    assert.deepEqual(
      bList.body.sandboxes.map((s) => s.sandbox_id),
      [bRes.body.sandbox_id],
    );
    assert.equal(bList.body.total, 1);
    const aList = await a<{ sandboxes: { sandbox_id: string }[]; total: number }>("GET", "/v1/agents/sandboxes");
    assert.deepEqual(
      aList.body.sandboxes.map((s) => s.sandbox_id),
      [aSandbox],
    );
    assert.equal(aList.body.total, 1);
    // The bootstrap key is a tenant of its own too.
    const boot = await client(server)<{ sandboxes: { sandbox_id: string }[] }>("GET", "/v1/agents/sandboxes?limit=1000");
    const bootIds = boot.body.sandboxes.map((s) => s.sandbox_id);
    assert.ok(!bootIds.includes(aSandbox) && !bootIds.includes(bRes.body.sandbox_id));
    assertNotFound(await a("GET", `/v1/agents/sandboxes/${bRes.body.sandbox_id}`), "a reads b's");
  });

  test("two keys of one tenant share its sandboxes", async () => {
    const first = createKey(server.dataDir, "team-1", "team-tenant");
    const second = createKey(server.dataDir, "team-2", "team-tenant");
    assert.equal(first.tenantId, "team-tenant");
    const one = client({ url: server.url, key: first.key });
    const two = client({ url: server.url, key: second.key });
    const created = await one<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(created.status, 201);
    assert.equal((await two("GET", `/v1/agents/sandboxes/${created.body.sandbox_id}`)).status, 200);
    assert.equal((await two("DELETE", `/v1/agents/sandboxes/${created.body.sandbox_id}`)).status, 200);
  });
});
