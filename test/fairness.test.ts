// Execution slots are shared fairly between tenants, end to end with the service's default
// settings: one tenant that starts as many long commands as it can is refused (429, its fair
// share) before the machine is full, and another tenant's runs and commands still succeed at once.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { loadConfig } from "../src/config.js";
import { sandboxSettings } from "../src/sandbox/settings.js";
import { assertError, createSandbox } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

/**
 * The load of the red-team report: 64 `sleep 30` with a 600 s timeout, in one sandbox; more on a
 * machine whose default execution cap is larger (the test runs on the service's machine).
 */
const ATTEMPTS = Math.max(64, sandboxSettings(loadConfig().dataDir).maxConcurrentRuns);

let server: TestServer;

before(async () => {
  // Defaults only: the fair share must hold without any tuning.
  server = await startServer();
});

after(async () => {
  await server?.dispose();
});

/** A key of a tenant of its own, made over the admin API. */
async function newTenantKey(name: string): Promise<string> {
  const admin = client({ url: server.url, key: server.adminKey });
  const res = await admin<{ key: string; tenant_id: string }>("POST", "/v1/admin/keys", { name, rate_limit_per_minute: 1_000_000 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.key;
}

test("one tenant holding every slot it can get leaves another tenant's runs and commands working", async () => {
  const a = client({ url: server.url, key: await newTenantKey("greedy") });
  const b = client({ url: server.url, key: await newTenantKey("neighbour") });
  const sandboxA = await createSandbox(a);
  const sandboxB = await createSandbox(b);

  // Tenant A starts long commands until it is refused: refusals come back at once, accepted ones hang.
  const started = Array.from({ length: ATTEMPTS }, () =>
    a("POST", `/v1/agents/sandboxes/${sandboxA}/commands/run`, { command: "sleep 30", timeout: 600_000 }),
  );
  const settled: (Awaited<(typeof started)[number]> | undefined)[] = started.map(() => undefined);
  for (const [i, p] of started.entries()) {
    void p.then((r) => {
      settled[i] = r;
    });
  }
  // Wait until no more answers arrive: the refused requests have all been answered by then.
  let answered = -1;
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 200));
    const now = settled.filter((r) => r !== undefined).length;
    if (now === answered && now > 0) break;
    answered = now;
  }

  // Tenant B, meanwhile: code runs and commands succeed, promptly (no queueing behind A).
  for (const [route, body] of [
    ["code/run", { language: "python", code: "print(6 * 7)" }],
    ["commands/run", { command: "echo ok" }],
    ["code/run", { language: "bash", code: "echo still" }],
  ] as const) {
    const t0 = performance.now();
    const res = await b<{ error: string | null }>("POST", `/v1/agents/sandboxes/${sandboxB}/${route}`, body);
    const ms = performance.now() - t0;
    assert.equal(res.status, 200, `${route}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error, null);
    assert.ok(ms < 5000, `${route} took ${Math.round(ms)} ms`);
  }

  const refused = settled.filter((r) => r !== undefined);
  const held = ATTEMPTS - refused.length;
  assert.ok(refused.length > 0, `tenant A was never refused: it holds all ${ATTEMPTS} slots`);
  for (const r of refused) {
    // Refused for its own share (429 with Retry-After), never because the machine is full.
    assertError(r as { status: number; body: unknown }, 429, "rate_limited");
    assert.match((r as { headers: Headers }).headers.get("retry-after") ?? "", /^[1-9][0-9]*$/);
  }
  assert.ok(held >= 8, `tenant A still gets its share: it holds ${held}`);

  // Several of B's runs at once fit too.
  const parallel = await Promise.all(
    [1, 2, 3, 4].map((n) => b("POST", `/v1/agents/sandboxes/${sandboxB}/commands/run`, { command: `sleep 0.3; echo ${n}` })),
  );
  assert.deepEqual(
    parallel.map((r) => r.status),
    [200, 200, 200, 200],
  );
  // A new tenant can still start a sandbox and run in it.
  const c = client({ url: server.url, key: await newTenantKey("newcomer") });
  const sandboxC = await createSandbox(c);
  assert.equal((await c("POST", `/v1/agents/sandboxes/${sandboxC}/code/run`, { language: "python", code: "print(1)" })).status, 200);

  // Killing A's sandbox ends its commands and frees its slots.
  assert.equal((await a("DELETE", `/v1/agents/sandboxes/${sandboxA}`)).status, 200);
  await Promise.all(started);
  const fresh = await createSandbox(a);
  assert.equal((await a("POST", `/v1/agents/sandboxes/${fresh}/commands/run`, { command: "echo back" })).status, 200);
  for (const [call, id] of [
    [a, fresh],
    [b, sandboxB],
    [c, sandboxC],
  ] as const)
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
});
