// End to end: webhooks. A receiver on loopback (allowed here with AGENTBOX_WEBHOOK_ALLOW_PRIVATE=1)
// gets each subscribed lifecycle event as a JSON POST whose X-AgentBox-Signature verifies; a
// receiver that fails is retried until it answers; one that never answers holds up no API call;
// pending deliveries survive a restart of the service. Without the setting, private destinations
// are refused; bad input and another tenant's webhook are clear 4xx.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { assertError, createSandbox } from "./helpers/api.js";
import { createKey, eventually } from "./helpers/leftovers.js";
import { client, startServer, type TestServer } from "./helpers/server.js";

interface Received {
  path: string;
  raw: string;
  headers: http.IncomingHttpHeaders;
}

interface Delivery {
  id: string;
  event: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  attempt_log: { at: string; status_code: number | null; error: string | null; duration_ms: number }[];
}

/**
 * A webhook receiver on 127.0.0.1: `answer(path, n)` picks the status of the n-th request to a path,
 * or null: never answer (odd n) or stall after the headers (even n).
 */
async function receiver(answer: (path: string, n: number) => number | null = () => 200) {
  const received: Received[] = [];
  const counts = new Map<string, number>();
  const hung: http.ServerResponse[] = [];
  const srv = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => {
      raw += c;
    });
    req.on("end", () => {
      const path = req.url ?? "/";
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      received.push({ path, raw, headers: req.headers });
      const status = answer(path, n);
      if (status === null) {
        // Every other one sends its headers and part of a body, then stalls.
        if (n % 2 === 0) res.writeHead(200, { "content-length": "100" }).write("partial");
        hung.push(res);
      } else res.writeHead(status).end("ok");
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return {
    url: (path: string) => `http://127.0.0.1:${(srv.address() as AddressInfo).port}${path}`,
    received,
    on: (path: string) => received.filter((r) => r.path === path),
    close: () =>
      new Promise<void>((r) => {
        for (const res of hung) res.destroy();
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
}

const SECRET = "s3cret-for-the-webhook-tests";
/**
 * The receiver's check as docs/api.md gives it: HMAC over "<delivery id>.<timestamp>.<body>", and
 * the timestamp no older than five minutes. `change` alters what arrived, as a replay or tampering would.
 */
const verify = (r: Received, change: { raw?: string; timestamp?: string } = {}) => {
  const raw = change.raw ?? r.raw;
  const timestamp = change.timestamp ?? String(r.headers["x-agentbox-timestamp"]);
  const signed = `${r.headers["x-agentbox-delivery"]}.${timestamp}.${raw}`;
  const fresh = Math.abs(Date.now() / 1000 - Number(timestamp)) <= 300;
  return fresh && r.headers["x-agentbox-signature"] === `v1=${crypto.createHmac("sha256", SECRET).update(signed).digest("hex")}`;
};

describe("webhooks (private destinations allowed)", () => {
  let server: TestServer;
  let call: ReturnType<typeof client>;
  let rx: Awaited<ReturnType<typeof receiver>>;
  let laterUp = false;
  const env = { AGENTBOX_WEBHOOK_ALLOW_PRIVATE: "1", AGENTBOX_WEBHOOK_RETRY_BASE_MS: "200", AGENTBOX_WEBHOOK_TIMEOUT_MS: "1500" };

  before(async () => {
    // Fails the first two deliveries to /flaky, never answers /hang, answers /later with 503 until
    // `laterUp`, and 200 otherwise.
    rx = await receiver((path, n) => {
      if (path === "/flaky") return n <= 2 ? 500 : 200;
      if (path === "/hang") return null;
      if (path === "/later") return laterUp ? 200 : 503;
      return 200;
    });
    server = await startServer({ env });
    call = client(server);
  });

  after(async () => {
    await server?.dispose();
    await rx?.close();
  });

  const deliveries = async (id: string) =>
    (await call<{ deliveries: Delivery[] }>("GET", `/v1/agents/webhooks/${id}/deliveries`)).body.deliveries;

  test("subscribed events arrive signed; deliveries are listed with their attempts", async () => {
    const created = await call<{ id: string; url: string; events: string[]; secret?: string }>("POST", "/v1/agents/webhooks", {
      url: rx.url("/ok"),
      events: ["created", "ended"],
      secret: SECRET,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.events, ["created", "ended"]);
    assert.equal(created.body.secret, undefined, "a secret the caller chose is not echoed");
    const list = await call<{ webhooks: { id: string }[] }>("GET", "/v1/agents/webhooks");
    assert.ok(list.body.webhooks.some((w) => w.id === created.body.id));

    const id = await createSandbox(call);
    await call("POST", `/v1/agents/sandboxes/${id}/timeout`, { timeout: 900 }); // not subscribed
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
    assert.ok(await eventually(() => rx.on("/ok").length >= 2, 10_000), "both events delivered");
    const got = rx.on("/ok").map((r) => ({ r, body: JSON.parse(r.raw) as Record<string, unknown> }));
    assert.deepEqual(
      got.map((g) => g.body.type),
      ["created", "ended"],
    );
    for (const { r, body } of got) {
      assert.ok(verify(r), "signature verifies");
      assert.equal(r.headers["content-type"], "application/json");
      assert.equal(r.headers["x-agentbox-delivery"], body.id);
      assert.equal(r.headers["x-agentbox-event"], body.type);
      assert.match(String(r.headers["x-agentbox-timestamp"]), /^\d{10}$/);
      assert.equal(body.sandbox_id, id);
      assert.equal(body.webhook_id, created.body.id);
    }
    const ended = got[1]?.body as { reason: string; detail: { by: string } };
    assert.equal(ended.reason, "killed");
    assert.equal(ended.detail.by, "api");
    // A tampered body does not verify, nor does the same request with a newer timestamp (a replay
    // made to look fresh): the signature covers the timestamp.
    const first = got[0]?.r as Received;
    assert.ok(!verify(first, { raw: `${first.raw} ` }));
    assert.ok(!verify(first, { timestamp: String(Number(first.headers["x-agentbox-timestamp"]) + 60) }));

    const ds = await deliveries(created.body.id);
    assert.equal(ds.length, 2);
    for (const d of ds) {
      assert.equal(d.status, "delivered");
      assert.equal(d.attempts, 1);
      assert.equal(d.attempt_log[0]?.status_code, 200);
      assert.equal(d.next_attempt_at, null);
    }
    assert.equal((await call("DELETE", `/v1/agents/webhooks/${created.body.id}`)).status, 200);
    assertError(await call("GET", `/v1/agents/webhooks/${created.body.id}/deliveries`), 404, "not_found");
  });

  test("a receiver that fails is retried with backoff until it answers", async () => {
    // By name: each attempt looks it up, checks it, and connects to the address it checked.
    const url = rx.url("/flaky").replace("127.0.0.1", "localhost");
    const hook = await call<{ id: string }>("POST", "/v1/agents/webhooks", { url, events: ["created"], secret: SECRET });
    assert.equal(hook.status, 201);
    const id = await createSandbox(call);
    assert.ok(await eventually(async () => (await deliveries(hook.body.id))[0]?.status === "delivered", 15_000), "delivered in the end");
    const [d] = await deliveries(hook.body.id);
    assert.equal(d?.attempts, 3);
    assert.deepEqual(
      d?.attempt_log.map((a) => a.status_code),
      [500, 500, 200],
    );
    const at = d?.attempt_log.map((a) => Date.parse(a.at)) ?? [];
    // Never sooner than the backoff allows (base 200 ms, doubling, -20% jitter at most).
    assert.ok((at[1] ?? 0) - (at[0] ?? 0) >= 160 && (at[2] ?? 0) - (at[1] ?? 0) >= 320, JSON.stringify(at));
    // The same delivery each time: same id, same signed body.
    const sent = rx.on("/flaky");
    assert.equal(new Set(sent.map((r) => r.headers["x-agentbox-delivery"])).size, 1);
    assert.ok(sent.every((r) => r.raw === sent[0]?.raw && verify(r)));
    await call("DELETE", `/v1/agents/webhooks/${hook.body.id}`);
    await call("DELETE", `/v1/agents/sandboxes/${id}`);
  });

  test("a URL that never answers holds up no API call; its attempts time out and are retried", async () => {
    const hook = await call<{ id: string }>("POST", "/v1/agents/webhooks", {
      url: rx.url("/hang"),
      events: ["created", "timeout_extended", "ended"],
      secret: SECRET,
    });
    assert.equal(hook.status, 201);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const id = await createSandbox(call);
      for (let j = 0; j < 5; j++) await call("POST", `/v1/agents/sandboxes/${id}/timeout`, { timeout: 300 + j });
      const res = await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "echo", args: ["hi"] });
      assert.equal(res.status, 200);
      // Generous: the point is that no call waits for the receiver's 1.5 s timeouts.
      assert.ok(performance.now() - t0 < 5000, `create + 5 extends + a command took ${performance.now() - t0} ms`);
      ids.push(id);
    }
    assert.ok(
      await eventually(
        async () => (await deliveries(hook.body.id)).some((d) => d.attempt_log.some((a) => /no answer/.test(a.error ?? ""))),
        10_000,
      ),
      "attempts time out",
    );
    const ds = await deliveries(hook.body.id);
    assert.equal(ds.length, 18);
    assert.ok(ds.every((d) => d.status === "pending"));
    // At most the per-webhook share is in flight at once: the receiver never held more than that.
    assert.ok(rx.on("/hang").length <= 4 * 3, `${rx.on("/hang").length} requests`);
    // Another webhook is not held up by that backlog.
    const other = await call<{ id: string }>("POST", "/v1/agents/webhooks", { url: rx.url("/ok-too"), events: ["ended"], secret: SECRET });
    for (const id of ids) assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    assert.ok(await eventually(() => rx.on("/ok-too").length === 3, 5000), "the other webhook got its events");
    assert.equal((await call("DELETE", `/v1/agents/webhooks/${hook.body.id}`)).status, 200);
    assert.equal((await call("DELETE", `/v1/agents/webhooks/${other.body.id}`)).status, 200);
  });

  test("bad input: malformed URLs, unknown event names, bad secrets, another tenant's webhook", async () => {
    const post = (body: unknown) => call("POST", "/v1/agents/webhooks", body);
    assertError(await post({ url: "not a url", events: ["ended"] }), 400, "invalid_request");
    assertError(await post({ url: "ftp://example.com/x", events: ["ended"] }), 400, "invalid_request");
    assertError(await post({ url: "http://user:pw@127.0.0.1/x", events: ["ended"] }), 400, "invalid_request");
    assertError(await post({ url: `http://127.0.0.1/${"a".repeat(2100)}`, events: ["ended"] }), 400, "invalid_request");
    const unknown = assertError(await post({ url: rx.url("/ok"), events: ["ended", "exploded"] }), 400, "invalid_request");
    assert.match(unknown.error.message, /exploded/);
    assertError(await post({ url: rx.url("/ok"), events: [] }), 400, "invalid_request");
    assertError(await post({ url: rx.url("/ok") }), 400, "invalid_request");
    assertError(await post({ url: rx.url("/ok"), events: ["ended"], secret: "short" }), 400, "invalid_request");
    assertError(await post({ url: "http://no-such-host.invalid/x", events: ["ended"] }), 400, "invalid_request");

    const mine = await post({ url: rx.url("/ok"), events: ["ended"] });
    assert.equal(mine.status, 201);
    const { id, secret } = mine.body as { id: string; secret: string };
    assert.match(secret, /^whsec_/, "a generated secret is returned once");
    const other = client({ url: server.url, key: createKey(server.dataDir, "webhooks-other").key });
    assertError(await other("DELETE", `/v1/agents/webhooks/${id}`), 404, "not_found");
    assertError(await other("GET", `/v1/agents/webhooks/${id}/deliveries`), 404, "not_found");
    assert.deepEqual((await other<{ webhooks: unknown[] }>("GET", "/v1/agents/webhooks")).body.webhooks, []);
    assertError(await call("DELETE", "/v1/agents/webhooks/wh_nope"), 404, "not_found");
    assert.equal((await call("DELETE", `/v1/agents/webhooks/${id}`)).status, 200);
  });
  test("a pending delivery is kept in the database and delivered after the service restarts", async () => {
    const hook = await call<{ id: string }>("POST", "/v1/agents/webhooks", { url: rx.url("/later"), events: ["created"], secret: SECRET });
    const id = await createSandbox(call);
    assert.ok(await eventually(() => rx.on("/later").length >= 1, 10_000), "first attempt made");
    await server.stop();
    laterUp = true;
    const before = rx.on("/later").length;
    server = await startServer({ env, dataDir: server.dataDir, key: server.key, workspaceDir: server.workspaceDir });
    call = client(server);
    assert.ok(await eventually(() => rx.on("/later").length > before, 15_000), "retried after the restart");
    assert.ok(
      await eventually(async () => {
        const ds = await deliveries(hook.body.id);
        return ds.length === 1 && ds[0]?.status === "delivered";
      }, 10_000),
    );
    const last = rx.on("/later").at(-1) as Received;
    assert.equal((JSON.parse(last.raw) as { sandbox_id: string }).sandbox_id, id);
    assert.ok(verify(last));
  });
});

describe("webhooks (defaults)", () => {
  let server: TestServer;
  let call: ReturnType<typeof client>;

  before(async () => {
    server = await startServer({
      env: { AGENTBOX_WARM_POOL: "1", AGENTBOX_WEBHOOKS_PER_TENANT: "2", AGENTBOX_WEBHOOK_RETRY_BASE_MS: "200" },
    });
    call = client(server);
  });

  after(async () => {
    await server?.dispose();
  });

  test("loopback, private, link-local and names resolving to them are refused (400)", async () => {
    for (const url of [
      "http://127.0.0.1:9/x",
      "http://localhost:9/x",
      "http://10.1.2.3/x",
      "http://192.168.0.10/x",
      "http://172.16.5.4/x",
      "http://169.254.169.254/latest/meta-data",
      "http://[::1]:9/x",
      "http://[::ffff:127.0.0.1]/x",
      "http://[fe80::1]/x",
      "http://0.0.0.0/x",
    ]) {
      const res = assertError(await call("POST", "/v1/agents/webhooks", { url, events: ["ended"] }), 400, "invalid_request");
      assert.match(res.error.message, /private|resolve/, url);
    }
  });

  test("the per-tenant limit is a clear 429", async () => {
    // Public addresses (TEST-NET, never contacted: no event is subscribed that happens here).
    for (let i = 0; i < 2; i++) {
      const res = await call("POST", "/v1/agents/webhooks", { url: `http://203.0.113.${i + 1}/hook`, events: ["paused"] });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    assertError(await call("POST", "/v1/agents/webhooks", { url: "http://203.0.113.9/hook", events: ["paused"] }), 429, "quota_exceeded");
  });
});
