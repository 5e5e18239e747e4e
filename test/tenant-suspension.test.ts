// Suspending a tenant (the operator's admin API) works at once: every key of the tenant is refused
// (403 tenant_suspended, on the API and on the E2B-compatible API), an event stream one of its keys
// holds open ends with that error, its running sandbox is paused, and its share links stop working;
// another tenant is untouched. Resuming lets the keys back in, and the tenant resumes its sandbox
// with its processes as they were.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertError, type Call, createSandbox, pythonStdout } from "./helpers/api.js";
import { client, startServer, type TestServer, withServiceLog } from "./helpers/server.js";
import { type SseAnswer, sse } from "./helpers/sse.js";

let server: TestServer;
let admin: Call;

/** Generous: the suspension takes well under a second; this only bounds a test that would otherwise hang. */
const BOUND_MS = 15_000;

before(async () => {
  server = await startServer();
  admin = client({ url: server.url, key: server.adminKey });
});

after(async () => {
  await server?.dispose();
});

const newKey = async (name: string, tenant: string) => {
  const res = await admin<{ key: string; id: string }>("POST", "/v1/admin/keys", { name, tenant_id: tenant });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.key;
};

function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} was still open ${BOUND_MS / 1000} s after the suspension`)), BOUND_MS);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

test("a suspended tenant's keys are refused, its streams end, its sandbox pauses; another tenant goes on; resume lets it back", () =>
  withServiceLog(server, suspendAndResume));

async function suspendAndResume(): Promise<void> {
  const key = await newKey("suspended", "tenant-suspended");
  const otherKey = await newKey("other", "tenant-other");
  const call = client({ url: server.url, key });
  const other = client({ url: server.url, key: otherKey });
  const id = await createSandbox(call);
  const otherId = await createSandbox(other);
  const base = `/v1/agents/sandboxes/${id}`;
  assert.equal(await pythonStdout(call, id, "counter = 41\nprint(counter)"), "41\n");
  const ticking = await call<{ pid: number }>("POST", `${base}/commands/run`, {
    command: "while true; do echo tick; sleep 0.2; done",
    background: true,
  });
  assert.ok(ticking.status < 300, JSON.stringify(ticking.body));
  const share = await call<{ url: string }>("POST", `${base}/ports/8000/share`, { expires_in: 3600 });
  assert.equal(share.status, 200, JSON.stringify(share.body));

  let started!: () => void;
  const streaming = new Promise<void>((r) => {
    started = r;
  });
  const stream: Promise<SseAnswer> = sse({ url: server.url, key }, "GET", `${base}/commands/${ticking.body.pid}/stream`, undefined, {
    stopWhen: (e) => {
      if (e.event === "stdout") started();
      return false;
    },
  });
  await within(Promise.race([streaming, stream]), "the stream's first tick");

  const suspended = await admin<{ tenant_id: string; suspended_at: string | null }>("POST", "/v1/admin/tenants/tenant-suspended/suspend");
  assert.equal(suspended.status, 200, JSON.stringify(suspended.body));
  assert.equal(suspended.body.tenant_id, "tenant-suspended");
  assert.ok(suspended.body.suspended_at !== null && !Number.isNaN(Date.parse(suspended.body.suspended_at)));

  // The open stream ends now, its last event an `end` saying why.
  const answer = await within(stream, "the background process's stream");
  const last = answer.events.at(-1);
  assert.equal(last?.event, "end");
  assert.equal((last?.data as { error?: { code: string } } | undefined)?.error?.code, "tenant_suspended");

  // Every door refuses the tenant: the API, the E2B-compatible API, and its share link.
  assertError(await call("GET", base), 403, "tenant_suspended");
  assertError(await call("POST", "/v1/agents/sandboxes", {}), 403, "tenant_suspended");
  const e2b = await fetch(`${server.url}/e2b/v2/sandboxes`, { headers: { "x-api-key": key } });
  assert.equal(e2b.status, 403);
  assert.equal((await fetch(share.body.url)).status, 401);

  // The operator sees which tenant is suspended.
  const tenant = await admin<{ suspended_at: string | null }>("GET", "/v1/admin/tenants/tenant-suspended");
  assert.notEqual(tenant.body.suspended_at, null);
  const listed = await admin<{ tenants: { tenant_id: string; suspended_at: string | null }[] }>("GET", "/v1/admin/tenants");
  assert.notEqual(listed.body.tenants.find((t) => t.tenant_id === "tenant-suspended")?.suspended_at ?? null, null);
  assert.equal(listed.body.tenants.find((t) => t.tenant_id === "tenant-other")?.suspended_at, null);

  // The other tenant is untouched.
  assert.equal(await pythonStdout(other, otherId, "print('still here')"), "still here\n");

  // Resumed: the keys work again; the sandbox was paused and resumes where it stopped.
  const resumed = await admin<{ suspended_at: string | null }>("POST", "/v1/admin/tenants/tenant-suspended/resume");
  assert.equal(resumed.status, 200);
  assert.equal(resumed.body.suspended_at, null);
  const state = await call<{ status: string }>("GET", base);
  assert.equal(state.status, 200);
  assert.equal(state.body.status, "paused");
  assert.equal((await call("POST", `${base}/resume`)).status, 200);
  assert.equal(await pythonStdout(call, id, "print(counter + 1)"), "42\n");
  assert.equal((await call("DELETE", base)).status, 200);
  assert.equal((await other("DELETE", `/v1/agents/sandboxes/${otherId}`)).status, 200);
}

test("suspending needs the admin key; a tenant key is refused", async () => {
  const key = await newKey("plain", "tenant-plain");
  const res = await client({ url: server.url, key })("POST", "/v1/admin/tenants/tenant-plain/suspend");
  assertError(res, 401, "unauthorized");
});
