// End to end: GET /v1/agents/stats shows a tenant its own activity only (sandboxes, runs per
// language, the series), and GET /v1/admin/stats shows the operator the whole service with a row per tenant.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createSandbox } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface Stats {
  live_sandboxes: number;
  series: { runs: number; errors: number; live_sandboxes: number }[];
  runs_by_language: { language: string; runs: number; errors: number }[];
  tenants?: { tenant_id: string; live_sandboxes: number; runs: number; errors: number }[];
}

let server: TestServer;
let mine: ReturnType<typeof client>;
let theirs: ReturnType<typeof client>;
let admin: ReturnType<typeof client>;

before(async () => {
  server = await startServer();
  mine = client(server);
  admin = client({ url: server.url, key: server.adminKey });
  const key = await admin<{ key: string }>("POST", "/v1/admin/keys", { name: "other", tenant_id: "tenant-b" });
  assert.equal(key.status, 201, JSON.stringify(key.body));
  theirs = client({ url: server.url, key: key.body.key });
});

after(async () => {
  await server?.dispose();
});

async function run(call: ReturnType<typeof client>, sandbox: string, language: string, code: string): Promise<void> {
  const res = await call("POST", `/v1/agents/sandboxes/${sandbox}/code/run`, { language, code });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

describe("activity numbers per tenant", () => {
  test("a tenant sees only its own sandboxes and runs; the operator sees all, per tenant", async () => {
    const a = await createSandbox(mine);
    await run(mine, a, "python", "1 + 1");
    await run(mine, a, "python", "undefined_name");
    const b1 = await createSandbox(theirs);
    await createSandbox(theirs);
    for (let i = 0; i < 3; i++) await run(theirs, b1, "bash", "echo hi");

    const own = await mine<Stats>("GET", "/v1/agents/stats");
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal(own.body.live_sandboxes, 1);
    assert.deepEqual(own.body.runs_by_language, [{ language: "python", runs: 2, errors: 1 }]);
    assert.equal(own.body.tenants, undefined, "a tenant is not shown the other tenants");
    for (const p of own.body.series) assert.ok(p.live_sandboxes <= 1 && p.runs <= 2, JSON.stringify(p));

    const other = await theirs<Stats>("GET", "/v1/agents/stats");
    assert.equal(other.body.live_sandboxes, 2);
    assert.deepEqual(other.body.runs_by_language, [{ language: "bash", runs: 3, errors: 0 }]);

    const all = await admin<Stats>("GET", "/v1/admin/stats");
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.equal(all.body.live_sandboxes, 3);
    assert.deepEqual(all.body.runs_by_language, [
      { language: "bash", runs: 3, errors: 0 },
      { language: "python", runs: 2, errors: 1 },
    ]);
    const rows = new Map(all.body.tenants?.map((t) => [t.tenant_id, t]));
    assert.deepEqual(rows.get("tenant-b"), { tenant_id: "tenant-b", live_sandboxes: 2, runs: 3, errors: 0 });
    // /metrics needs no key: the per-tenant counts are not there.
    assert.doesNotMatch(await (await fetch(`${server.url}/metrics`)).text(), /tenant-b/);
    const defaultTenant = [...rows.values()].find((t) => t.tenant_id !== "tenant-b");
    assert.deepEqual(
      { live: defaultTenant?.live_sandboxes, runs: defaultTenant?.runs, errors: defaultTenant?.errors },
      { live: 1, runs: 2, errors: 1 },
    );
  });
});
