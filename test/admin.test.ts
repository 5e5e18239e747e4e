// End to end: the admin API (/v1/admin). Only the admin key opens it (a tenant key is 401 there, and
// the admin key is no tenant key); keys are created (shown once), listed without secrets, revoked
// at once; tenant quotas are read and set (null back to the default), and a set quota is enforced.
// A service started without AGENTBOX_ADMIN_KEY makes one, prints it once and keeps only its hash.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { KeyJson, TenantJson } from "../src/cli/admin-client.js";
import { assertError } from "./helpers/api.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

let server: TestServer;
let admin: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ env: { AGENTBOX_MAX_SANDBOXES_PER_TENANT: "7" } });
  admin = client({ url: server.url, key: server.adminKey });
});

after(async () => {
  await server?.dispose();
});

const newKey = async (body: Record<string, unknown>) => {
  const res = await admin<KeyJson & { key: string }>("POST", "/v1/admin/keys", body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
};

describe("who may call the admin API", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", "/v1/admin/keys"],
    ["POST", "/v1/admin/keys", { name: "x" }],
    ["DELETE", "/v1/admin/keys/some-id"],
    ["GET", "/v1/admin/tenants"],
    ["GET", "/v1/admin/tenants/default"],
    ["PUT", "/v1/admin/tenants/default", { max_sandboxes: 1 }],
    ["GET", "/v1/admin/nodes"],
    ["POST", "/v1/admin/nodes/x/drain"],
  ];

  test("no key, a wrong key, the bootstrap tenant key and a created tenant key are all 401", async () => {
    const tenant = await newKey({ name: "tenant-not-admin" });
    for (const key of ["", "abxadm_wrong", server.key, tenant.key, `${server.adminKey}x`]) {
      for (const [method, route, body] of routes) {
        assertError(await client({ url: server.url, key })(method, route, body), 401, "unauthorized");
      }
    }
    // Percent-escapes in the path reach the same routes: still the admin key only.
    assertError(await client({ url: server.url, key: server.key })("GET", "/v1/%61dmin/keys"), 401, "unauthorized");
    // Nothing was changed by those attempts.
    const t = await admin<TenantJson>("GET", "/v1/admin/tenants/default");
    assert.equal(t.body.quotas.max_sandboxes, null);
  });

  test("the admin key is not a tenant key", async () => {
    const asAdmin = client({ url: server.url, key: server.adminKey });
    assertError(await asAdmin("GET", "/v1/agents/sandboxes"), 401, "unauthorized");
    assertError(await asAdmin("POST", "/v1/agents/sandboxes", {}), 401, "unauthorized");
  });
});

describe("keys", () => {
  test("create: the key once, its record, a working key of the given tenant", async () => {
    const made = await newKey({ name: "agent one", tenant_id: "acme", rate_limit_per_minute: 100, max_concurrent_runs: 3 });
    assert.match(made.key, /^abx_[A-Za-z0-9_-]{30,}$/);
    assert.equal(made.tenant_id, "acme");
    assert.equal(made.name, "agent one");
    assert.equal(made.prefix, made.key.slice(0, made.prefix.length));
    assert.equal(made.rate_limit_per_minute, 100);
    assert.equal(made.max_concurrent_runs, 3);
    assert.equal(made.revoked_at, null);
    assert.ok(Date.parse(made.created_at) > Date.now() - 60_000);
    const res = await client({ url: server.url, key: made.key })("GET", "/v1/agents/sandboxes");
    assert.equal(res.status, 200);
    // Rate limit of the key is the one given.
    assert.equal(res.headers.get("ratelimit-limit"), "100");
    // Without a tenant the key has a tenant of its own.
    const [a, b] = [await newKey({ name: "solo-a" }), await newKey({ name: "solo-b" })];
    assert.notEqual(a.tenant_id, b.tenant_id);
    assert.notEqual(a.tenant_id, "acme");
  });

  test("the database keeps the key's hash, never the key", async () => {
    const made = await newKey({ name: "hashed" });
    const bytes = Buffer.concat(
      fs
        .readdirSync(server.dataDir)
        .filter((f) => f.startsWith("agentbox.db"))
        .map((f) => fs.readFileSync(path.join(server.dataDir, f))),
    );
    assert.ok(!bytes.includes(Buffer.from(made.key)));
    assert.ok(bytes.includes(Buffer.from(crypto.createHash("sha256").update(made.key).digest("hex"))));
  });

  test("bad input is a 400 envelope and creates nothing", async () => {
    const count = (await admin<{ keys: KeyJson[] }>("GET", "/v1/admin/keys")).body.keys.length;
    for (const body of [
      {},
      { name: "" },
      { name: "   " },
      { name: "x".repeat(129) },
      { name: 5 },
      { name: "x", tenant_id: "" },
      { name: "x", tenant_id: "a/b" },
      { name: "x", rate_limit_per_minute: 0 },
      { name: "x", rate_limit_per_minute: -1 },
      { name: "x", max_concurrent_runs: 1.5 },
      { name: "x", max_concurrent_runs: "2" },
      { name: "x", unknown_field: 1 },
    ]) {
      assertError(await admin("POST", "/v1/admin/keys", body), 400, "invalid_request");
    }
    assertError(await admin("POST", "/v1/admin/keys", "{not json"), 400, "invalid_request");
    assert.equal((await admin<{ keys: KeyJson[] }>("GET", "/v1/admin/keys")).body.keys.length, count);
  });

  test("list: every key with its fields and last use, no secret; filter by tenant", async () => {
    const made = await newKey({ name: "listed", tenant_id: "list-tenant" });
    await client({ url: server.url, key: made.key })("GET", "/v1/agents/sandboxes");
    const res = await admin<{ keys: KeyJson[] }>("GET", "/v1/admin/keys");
    assert.equal(res.status, 200);
    const row = res.body.keys.find((k) => k.id === made.id);
    assert.ok(row);
    assert.deepEqual(Object.keys(row).sort(), [
      "created_at",
      "id",
      "last_used_at",
      "max_concurrent_runs",
      "name",
      "prefix",
      "rate_limit_per_minute",
      "revoked_at",
      "tenant_id",
    ]);
    assert.equal(row.name, "listed");
    assert.ok(row.last_used_at && Date.parse(row.last_used_at) > Date.now() - 60_000, String(row.last_used_at));
    const text = JSON.stringify(res.body);
    assert.ok(!text.includes(made.key));
    assert.doesNotMatch(text, /abx_[A-Za-z0-9_-]{20,}/);
    assert.doesNotMatch(text, /[0-9a-f]{64}/, "no hash either");
    const only = await admin<{ keys: KeyJson[] }>("GET", "/v1/admin/keys?tenant_id=list-tenant");
    assert.deepEqual(
      only.body.keys.map((k) => k.id),
      [made.id],
    );
  });

  test("revoke: refused from the next request on; a second revoke and an unknown id are 404", async () => {
    const made = await newKey({ name: "to-revoke" });
    const call = client({ url: server.url, key: made.key });
    assert.equal((await call("GET", "/v1/agents/sandboxes")).status, 200);
    const res = await admin<{ message: string; id: string }>("DELETE", `/v1/admin/keys/${made.id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.id, made.id);
    assert.equal(typeof res.body.message, "string");
    assertError(await call("GET", "/v1/agents/sandboxes"), 401, "unauthorized");
    assertError(await admin("DELETE", `/v1/admin/keys/${made.id}`), 404, "not_found");
    assertError(await admin("DELETE", "/v1/admin/keys/no-such-id"), 404, "not_found");
    const listed = (await admin<{ keys: KeyJson[] }>("GET", "/v1/admin/keys")).body.keys.find((k) => k.id === made.id);
    assert.ok(listed?.revoked_at);
  });
});

describe("tenants", () => {
  test("the bootstrap key's tenant is listed, its key counted, although the key is never stored", async () => {
    const list = await admin<{ tenants: TenantJson[] }>("GET", "/v1/admin/tenants");
    const tenant = list.body.tenants.find((t) => t.tenant_id === "default");
    assert.ok(tenant, JSON.stringify(list.body.tenants.map((t) => t.tenant_id)));
    const stored = (await admin<{ keys: KeyJson[] }>("GET", "/v1/admin/keys?tenant_id=default")).body.keys;
    assert.equal(tenant.active_keys, stored.filter((k) => !k.revoked_at).length + 1);
    assert.equal((await admin<TenantJson>("GET", "/v1/admin/tenants/default")).body.active_keys, tenant.active_keys);
  });

  test("a tenant never configured: every quota unset, the defaults in effect", async () => {
    const res = await admin<TenantJson>("GET", "/v1/admin/tenants/never-seen");
    assert.equal(res.status, 200);
    assert.equal(res.body.tenant_id, "never-seen");
    assert.deepEqual(res.body.quotas, {
      max_sandboxes: null,
      max_concurrent_runs: null,
      memory_mb: null,
      max_processes: null,
      storage_mb: null,
      max_vector_indexes: null,
      max_vectors: null,
      vector_storage_mb: null,
    });
    assert.equal(res.body.effective.max_sandboxes, 7, "the configured default");
    for (const v of Object.values(res.body.effective)) assert.ok(Number.isInteger(v) && v > 0);
    assert.equal(res.body.created_at, null);
    assert.equal(res.body.active_keys, 0);
  });

  test("PUT sets the quotas given, keeps the others, null resets one; GET and the list show it", async () => {
    const first = await admin<TenantJson>("PUT", "/v1/admin/tenants/quota-t", { max_sandboxes: 2, memory_mb: 2048 });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.quotas.max_sandboxes, 2);
    assert.equal(first.body.quotas.memory_mb, 2048);
    assert.equal(first.body.quotas.max_processes, null);
    assert.equal(first.body.effective.max_sandboxes, 2);
    assert.equal(first.body.effective.memory_mb, 2048);
    assert.ok(first.body.created_at);
    const second = await admin<TenantJson>("PUT", "/v1/admin/tenants/quota-t", { memory_mb: null, max_processes: 500 });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.equal(second.body.quotas.max_sandboxes, 2, "kept");
    assert.equal(second.body.quotas.memory_mb, null, "reset");
    assert.equal(
      second.body.effective.memory_mb,
      (await admin<TenantJson>("GET", "/v1/admin/tenants/never-seen")).body.effective.memory_mb,
    );
    assert.equal(second.body.quotas.max_processes, 500);
    const got = await admin<TenantJson>("GET", "/v1/admin/tenants/quota-t");
    assert.deepEqual(got.body.quotas, second.body.quotas);
    const list = await admin<{ tenants: TenantJson[] }>("GET", "/v1/admin/tenants");
    assert.deepEqual(list.body.tenants.find((t) => t.tenant_id === "quota-t")?.quotas, second.body.quotas);
    // Tenants known only by their keys are listed too.
    assert.ok(list.body.tenants.some((t) => t.tenant_id === "acme" && t.active_keys >= 1));
  });

  test("bad quotas are a 400 envelope and change nothing", async () => {
    await admin("PUT", "/v1/admin/tenants/bad-q", { max_sandboxes: 3 });
    for (const body of [
      {},
      { max_sandboxes: -1 },
      { max_concurrent_runs: -5 },
      { memory_mb: 1 },
      { max_processes: 0 },
      { storage_mb: 1.5 },
      { max_sandboxes: "3" },
      { max_sandboxes: 2 ** 40 },
      { cpu: 3 },
    ]) {
      assertError(await admin("PUT", "/v1/admin/tenants/bad-q", body), 400, "invalid_request");
    }
    assertError(await admin("PUT", "/v1/admin/tenants/bad%2Fid", { max_sandboxes: 1 }), 400, "invalid_request");
    assert.equal((await admin<TenantJson>("GET", "/v1/admin/tenants/bad-q")).body.quotas.max_sandboxes, 3);
  });

  test("a set sandbox quota is enforced for the tenant's keys at once", async () => {
    const made = await newKey({ name: "capped", tenant_id: "capped-t" });
    const put = await admin<TenantJson>("PUT", "/v1/admin/tenants/capped-t", { max_sandboxes: 1 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const call = client({ url: server.url, key: made.key });
    const one = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(one.status, 201, JSON.stringify(one.body));
    assertError(await call("POST", "/v1/agents/sandboxes", {}), 429, "quota_exceeded");
    assert.equal((await admin("PUT", "/v1/admin/tenants/capped-t", { max_sandboxes: null })).status, 200);
    const two = await call<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(two.status, 201, JSON.stringify(two.body));
    for (const id of [one.body.sandbox_id, two.body.sandbox_id]) await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("the admin routes are in the OpenAPI document under the admin tag", async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    for (const [p, method] of [
      ["/v1/admin/keys", "post"],
      ["/v1/admin/keys", "get"],
      ["/v1/admin/keys/{id}", "delete"],
      ["/v1/admin/tenants", "get"],
      ["/v1/admin/tenants/{id}", "get"],
      ["/v1/admin/tenants/{id}", "put"],
    ] as const) {
      assert.deepEqual(doc.paths[p]?.[method]?.tags, ["admin"], `${method} ${p}`);
    }
  });
});

describe("a generated admin key", () => {
  test("is printed once at first start, stored only as a hash, works, and is not printed again", async () => {
    const first = await startServer({ env: { AGENTBOX_ADMIN_KEY: "" } });
    let key = "";
    try {
      const match = /AGENTBOX ADMIN KEY[^\n]*\n(abxadm_[A-Za-z0-9_-]+)\n/.exec(first.logs());
      assert.ok(match, first.logs());
      key = match[1] as string;
      assert.ok(key.length >= 40);
      assert.equal((await client({ url: first.url, key })("GET", "/v1/admin/keys")).status, 200);
      await first.stop();
      const bytes = Buffer.concat(
        fs
          .readdirSync(first.dataDir)
          .filter((f) => f.startsWith("agentbox.db"))
          .map((f) => fs.readFileSync(path.join(first.dataDir, f))),
      );
      assert.ok(!bytes.includes(Buffer.from(key)));
      assert.ok(bytes.includes(Buffer.from(crypto.createHash("sha256").update(key).digest("hex"))));
      const again = await startServer({
        dataDir: first.dataDir,
        workspaceDir: first.workspaceDir,
        port: first.port,
        env: { AGENTBOX_ADMIN_KEY: "" },
      });
      try {
        assert.doesNotMatch(again.logs(), /abxadm_/, "not printed on the second start");
        assert.equal((await client({ url: again.url, key })("GET", "/v1/admin/keys")).status, 200, "still valid");
      } finally {
        await again.dispose();
      }
    } finally {
      await first.dispose();
    }
  });
});

describe("nodes of a service running alone", () => {
  test("GET /v1/admin/nodes lists this service, up, with its load; a drain is 400 invalid_state", async () => {
    const res = await admin<{ nodes: Record<string, unknown>[] }>("GET", "/v1/admin/nodes");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.nodes.length, 1);
    const node = res.body.nodes[0] as Record<string, unknown>;
    assert.equal(node.roles, "both");
    assert.equal(node.state, "up");
    assert.equal(node.epoch, 0);
    assert.equal(node.url, server.url);
    assert.ok((node.free_memory_mb as number) > 0 && (node.total_memory_mb as number) >= (node.free_memory_mb as number));
    assert.equal(typeof node.cpu_load, "number");
    const drain = await admin("POST", `/v1/admin/nodes/${encodeURIComponent(node.id as string)}/drain`);
    assertError(drain, 400, "invalid_state");
  });
});
