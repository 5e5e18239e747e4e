// End to end: the sandbox lifecycle API (PRODUCT.md section 2) against the real service: create with
// defaults and options, list/get/kill/extend, expiry by the reaper, templates, health and the
// OpenAPI document; and that a killed or expired sandbox leaves no mount, cgroup or process behind.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { cgroupsOf, createKey, eventually, mountsUnder, processesInCgroups } from "./helpers/leftovers.js";
import { client, startServer, type TestServer, testCluster } from "./helpers/server.js";
import { assertError, SANDBOX_KEYS } from "./helpers/api.js";

interface SandboxBody {
  sandbox_id: string;
  status: string;
  template: string;
  template_id: string;
  started_at: string;
  timeout_at: string;
  cpu_count: number;
  memory_mb: number;
  metadata: Record<string, unknown>;
  ended_at: string | null;
}

interface RunResult {
  logs: { stdout: string; stderr: string };
  error: string | null;
  execution_time_ms: number;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

let server: TestServer;
let call: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ env: { AGENTBOX_REAPER_INTERVAL_MS: "100" } });
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

function assertSandbox(body: unknown): SandboxBody {
  const s = body as SandboxBody;
  assert.deepEqual(Object.keys(s).sort(), SANDBOX_KEYS, JSON.stringify(body));
  assert.equal(typeof s.sandbox_id, "string");
  assert.ok(["running", "terminated", "timed_out"].includes(s.status), s.status);
  assert.match(s.started_at, ISO);
  assert.match(s.timeout_at, ISO);
  assert.ok(s.ended_at === null || ISO.test(s.ended_at), String(s.ended_at));
  assert.equal(s.template_id, s.template);
  assert.equal(typeof s.cpu_count, "number");
  assert.ok(Number.isInteger(s.memory_mb) && s.memory_mb > 0);
  assert.equal(typeof s.metadata, "object");
  return s;
}

async function create(body?: unknown): Promise<SandboxBody> {
  const res = await call("POST", "/v1/agents/sandboxes", body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return assertSandbox(res.body);
}

async function run(id: string, language: string, code: string): Promise<RunResult> {
  const res = await call<RunResult>("POST", `/v1/agents/sandboxes/${id}/code/run`, { language, code });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/**
 * Asserts that the ended sandbox left nothing on the host: no mount, no workspace, no cgroup (a
 * group can only be removed once no process is left in it).
 */
async function assertNothingLeft(id: string): Promise<void> {
  const workspace = path.join(server.workspaceDir, id);
  const clean = await eventually(
    () => mountsUnder(workspace).length === 0 && !fs.existsSync(workspace) && cgroupsOf(id).length === 0,
    5000,
  );
  assert.ok(
    clean,
    `left behind: mounts=${mountsUnder(workspace)} workspace=${fs.existsSync(workspace)} cgroups=${cgroupsOf(id)} pids=${processesInCgroups(id)}`,
  );
}

describe("create", () => {
  test("defaults: python-base-v1, running, 300 s of life, no end yet", async () => {
    const before = Date.now();
    const s = await create({});
    assert.equal(s.status, "running");
    assert.equal(s.template, "python-base-v1");
    assert.equal(s.template_id, "python-base-v1");
    assert.equal(s.ended_at, null);
    assert.deepEqual(s.metadata, {});
    const started = Date.parse(s.started_at);
    assert.ok(started >= before - 1000 && started <= Date.now() + 1000);
    assert.equal(Date.parse(s.timeout_at) - started, 300_000);
    // The sandbox is usable at once and its workspace is a mount of its own.
    assert.equal((await run(s.sandbox_id, "python", "print('ready')")).logs.stdout, "ready\n");
    // In a cluster the workspace is on the executor that owns it, under that node's own workspace dir.
    if (!testCluster)
      assert.deepEqual(mountsUnder(path.join(server.workspaceDir, s.sandbox_id)), [path.join(server.workspaceDir, s.sandbox_id)]);
    assert.ok(cgroupsOf(s.sandbox_id).length > 0);
  });

  test("a POST with no body at all creates a default sandbox", async () => {
    const s = await create(undefined);
    assert.equal(s.template, "python-base-v1");
  });

  test("timeout, metadata, env_vars; provider, region and unknown fields are accepted and ignored", async () => {
    const metadata = { owner: "agent-7", nested: { tags: ["a", "b"], n: 1.5, ok: true, none: null } };
    const s = await create({
      timeout: 120,
      metadata,
      env_vars: { MY_VAR: "hello world", UNICODE_VAR: "ünï ✓" },
      provider: "gravix",
      region: "eu-west-1",
      something_new: 1,
    });
    assert.equal(Date.parse(s.timeout_at) - Date.parse(s.started_at), 120_000);
    assert.deepEqual(s.metadata, metadata);
    const fetched = await call("GET", `/v1/agents/sandboxes/${s.sandbox_id}`);
    assert.deepEqual(assertSandbox(fetched.body).metadata, metadata);

    const expected = "hello world|ünï ✓\n";
    const id = s.sandbox_id;
    assert.equal(
      (await run(id, "python", "import os\nprint(os.environ['MY_VAR'] + '|' + os.environ['UNICODE_VAR'])")).logs.stdout,
      expected,
    );
    assert.equal((await run(id, "javascript", "console.log(process.env.MY_VAR + '|' + process.env.UNICODE_VAR)")).logs.stdout, expected);
    assert.equal(
      (await run(id, "typescript", "const v: string = [process.env.MY_VAR, process.env.UNICODE_VAR].join('|')\nconsole.log(v)")).logs
        .stdout,
      expected,
    );
    assert.equal((await run(id, "bash", 'echo "$MY_VAR|$UNICODE_VAR"')).logs.stdout, expected);
    // Env vars survive a restart of a kernel (bash `exit` restarts it).
    await run(id, "bash", "exit 1");
    assert.equal((await run(id, "bash", 'echo "$MY_VAR"')).logs.stdout, "hello world\n");
    // And they are the sandbox's own: another sandbox does not see them.
    const other = await create({});
    assert.equal((await run(other.sandbox_id, "bash", 'echo "[$MY_VAR]"')).logs.stdout, "[]\n");
  });

  test("javascript-base-v1 runs every language", async () => {
    const s = await create({ template: "javascript-base-v1" });
    assert.equal(s.template, "javascript-base-v1");
    assert.equal(s.template_id, "javascript-base-v1");
    for (const [language, code] of [
      ["javascript", "console.log('js')"],
      ["typescript", "const t: string = 'ts'; console.log(t)"],
      ["python", "print('py')"],
      ["bash", "echo sh"],
    ] as const) {
      const r = await run(s.sandbox_id, language, code);
      assert.equal(r.error, null, r.logs.stderr);
    }
  });

  test("unknown template → 404 template_not_found", async () => {
    assertError(await call("POST", "/v1/agents/sandboxes", { template: "ruby-base-v1" }), 404, "template_not_found");
  });

  test("bad create bodies → 400 invalid_request", async () => {
    for (const body of [
      { timeout: 0 },
      { timeout: -5 },
      { timeout: 1.5 },
      { timeout: "60" },
      { timeout: 10 ** 9 },
      { env_vars: { A: 1 } },
      { env_vars: "A=1" },
      { metadata: [1, 2] },
      { template: 5 },
      [{ template: "python-base-v1" }],
    ]) {
      assertError(await call("POST", "/v1/agents/sandboxes", body), 400, "invalid_request");
    }
    assertError(await call("POST", "/v1/agents/sandboxes", "{not json"), 400, "invalid_request");
  });
});

describe("list and get", () => {
  test("list pages with limit/offset, newest first, with the total; only the caller's own", async () => {
    const other = createKey(server.dataDir, "other-tenant");
    const callOther = client({ url: server.url, key: other.key });
    const otherRes = await callOther("POST", "/v1/agents/sandboxes", {});
    assert.equal(otherRes.status, 201);
    const otherId = (otherRes.body as unknown as SandboxBody).sandbox_id;

    const mine = [await create({}), await create({}), await create({})];
    const all = await call<{ sandboxes: unknown[]; total: number }>("GET", "/v1/agents/sandboxes?limit=1000");
    assert.equal(all.status, 200);
    assert.deepEqual(Object.keys(all.body).sort(), ["sandboxes", "total"]);
    const ids = all.body.sandboxes.map((s) => assertSandbox(s).sandbox_id);
    assert.equal(all.body.total, ids.length);
    for (const s of mine) assert.ok(ids.includes(s.sandbox_id));
    assert.ok(!ids.includes(otherId), "another tenant's sandbox is not listed");

    const page = await call<{ sandboxes: SandboxBody[]; total: number }>("GET", "/v1/agents/sandboxes?limit=2&offset=1");
    assert.equal(page.status, 200);
    assert.equal(page.body.total, all.body.total);
    assert.deepEqual(
      page.body.sandboxes.map((s) => s.sandbox_id),
      ids.slice(1, 3),
    );
    const newest = await call<{ sandboxes: SandboxBody[]; total: number }>("GET", "/v1/agents/sandboxes?limit=1");
    assert.equal(newest.body.sandboxes[0]?.sandbox_id, mine[2]?.sandbox_id);
    const beyond = await call<{ sandboxes: SandboxBody[]; total: number }>("GET", `/v1/agents/sandboxes?offset=${all.body.total}`);
    assert.deepEqual(beyond.body, { sandboxes: [], total: all.body.total });

    const theirs = await callOther<{ sandboxes: SandboxBody[]; total: number }>("GET", "/v1/agents/sandboxes");
    assert.deepEqual(
      theirs.body.sandboxes.map((s) => s.sandbox_id),
      [otherId],
    );
    assert.equal(theirs.body.total, 1);
  });

  test("bad paging parameters → 400", async () => {
    for (const q of ["limit=abc", "limit=-1", "offset=x", "limit=1.5"]) {
      assertError(await call("GET", `/v1/agents/sandboxes?${q}`), 400, "invalid_request");
    }
  });

  test("get returns the sandbox object; unknown id → 404 sandbox_not_found", async () => {
    const s = await create({ metadata: { k: "v" } });
    const got = await call("GET", `/v1/agents/sandboxes/${s.sandbox_id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(assertSandbox(got.body), s);
    assertError(await call("GET", "/v1/agents/sandboxes/no-such-sandbox"), 404, "sandbox_not_found");
  });
});

describe("kill", () => {
  test("DELETE → {message, sandbox_id}; then terminated with ended_at, runs refused, nothing left", async () => {
    const s = await create({});
    const id = s.sandbox_id;
    await run(id, "python", "open('f.txt', 'w').write('x')");
    await run(id, "bash", "sleep 300 > /dev/null 2>&1 &\nnohup sleep 300 > /dev/null 2>&1 &");
    assert.ok(processesInCgroups(id).length >= 3, "the sandbox has processes while it runs");

    const res = await call<{ message: string; sandbox_id: string }>("DELETE", `/v1/agents/sandboxes/${id}`);
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ["message", "sandbox_id"]);
    assert.equal(res.body.sandbox_id, id);
    assert.equal(typeof res.body.message, "string");

    const after = assertSandbox((await call("GET", `/v1/agents/sandboxes/${id}`)).body);
    assert.equal(after.status, "terminated");
    assert.match(after.ended_at ?? "", ISO);
    assert.ok(Date.parse(after.ended_at ?? "") >= Date.parse(after.started_at));
    const refused = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "python", code: "1" });
    assertError(refused, 400, "invalid_state");
    assertError(await call("POST", `/v1/agents/sandboxes/${id}/timeout`, { timeout: 60 }), 400, "invalid_state");
    await assertNothingLeft(id);

    // A second kill is harmless and changes nothing.
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
    assert.equal(assertSandbox((await call("GET", `/v1/agents/sandboxes/${id}`)).body).ended_at, after.ended_at);
  });

  test("DELETE of an unknown sandbox → 404", async () => {
    assertError(await call("DELETE", "/v1/agents/sandboxes/no-such-sandbox"), 404, "sandbox_not_found");
  });
});

describe("timeout and expiry", () => {
  test("POST /timeout → {message, timeout, timeout_at}, and the sandbox object follows", async () => {
    const s = await create({});
    const before = Date.now();
    const res = await call<{ message: string; timeout: number; timeout_at: string }>(
      "POST",
      `/v1/agents/sandboxes/${s.sandbox_id}/timeout`,
      {
        timeout: 600,
      },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), ["message", "timeout", "timeout_at"]);
    assert.equal(res.body.timeout, 600);
    assert.match(res.body.timeout_at, ISO);
    const at = Date.parse(res.body.timeout_at);
    assert.ok(at >= before + 600_000 - 1000 && at <= Date.now() + 600_000 + 1000);
    const got = assertSandbox((await call("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body);
    assert.equal(got.timeout_at, res.body.timeout_at);
    assert.equal(got.status, "running");
  });

  test("bad /timeout bodies → 400; unknown sandbox → 404", async () => {
    const s = await create({});
    for (const body of [{}, { timeout: 0 }, { timeout: -1 }, { timeout: 2.5 }, { timeout: "30" }, { timeout: 10 ** 9 }]) {
      assertError(await call("POST", `/v1/agents/sandboxes/${s.sandbox_id}/timeout`, body), 400, "invalid_request");
    }
    assertError(await call("POST", "/v1/agents/sandboxes/no-such-sandbox/timeout", { timeout: 5 }), 404, "sandbox_not_found");
  });

  test("the reaper ends a sandbox when its life runs out: timed_out, runs refused, nothing left", async () => {
    const s = await create({ timeout: 2 });
    const id = s.sandbox_id;
    await run(id, "bash", "sleep 300 > /dev/null 2>&1 &");
    const expired = await eventually(
      async () => assertSandbox((await call("GET", `/v1/agents/sandboxes/${id}`)).body).status === "timed_out",
      6000,
      100,
    );
    assert.ok(expired, "the sandbox expired");
    const got = assertSandbox((await call("GET", `/v1/agents/sandboxes/${id}`)).body);
    assert.match(got.ended_at ?? "", ISO);
    assert.ok(Date.parse(got.ended_at ?? "") >= Date.parse(got.timeout_at));
    const refused = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "python", code: "print(1)" });
    assertError(refused, 400, "invalid_state");
    await assertNothingLeft(id);
  });

  test("shortening the timeout makes the reaper end the sandbox sooner", async () => {
    const s = await create({});
    assert.equal((await call("POST", `/v1/agents/sandboxes/${s.sandbox_id}/timeout`, { timeout: 1 })).status, 200);
    const expired = await eventually(
      async () => assertSandbox((await call("GET", `/v1/agents/sandboxes/${s.sandbox_id}`)).body).status === "timed_out",
      5000,
      100,
    );
    assert.ok(expired);
  });
});

describe("templates, health, OpenAPI", () => {
  test("GET /templates lists the built-in templates with their exact keys", async () => {
    const res = await call<{ templates: Record<string, unknown>[]; limit: number; offset: number }>("GET", "/v1/agents/templates");
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ["limit", "offset", "templates"]);
    assert.equal(res.body.offset, 0);
    const ids = res.body.templates.map((t) => t.id);
    assert.ok(ids.includes("python-base-v1") && ids.includes("javascript-base-v1"), String(ids));
    for (const t of res.body.templates) {
      assert.deepEqual(Object.keys(t).sort(), [
        "created_at",
        "description",
        "disk_size_mb",
        "id",
        "memory_mb",
        "name",
        "updated_at",
        "vcpu_count",
        "visibility",
      ]);
      assert.match(String(t.created_at), ISO);
      assert.match(String(t.updated_at), ISO);
      assert.equal(typeof t.vcpu_count, "number");
      assert.ok(Number.isInteger(t.memory_mb) && Number.isInteger(t.disk_size_mb));
    }
    const second = await call<{ templates: { id: string }[]; limit: number; offset: number }>(
      "GET",
      "/v1/agents/templates?limit=1&offset=1",
    );
    assert.deepEqual(
      second.body.templates.map((t) => t.id),
      [ids[1]],
    );
    assert.equal(second.body.limit, 1);
    assert.equal(second.body.offset, 1);
  });

  test("GET /health answers without a key", async () => {
    const res = await fetch(`${server.url}/health`);
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { status: string }).status, "ok");
  });

  test("/openapi.json is a valid OpenAPI 3 document with the code/run contract and the error envelope", async () => {
    const res = await fetch(`${server.url}/openapi.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as Record<string, unknown>;
    const validator = new Validator();
    const result = await validator.validate(doc as Parameters<Validator["validate"]>[0]);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    assert.match(String(doc.openapi), /^3\./);

    const paths = doc.paths as Record<string, Record<string, Record<string, unknown>>>;
    for (const p of [
      "/v1/agents/sandboxes",
      "/v1/agents/sandboxes/{sandbox_id}",
      "/v1/agents/sandboxes/{sandbox_id}/timeout",
      "/v1/agents/templates",
    ]) {
      assert.ok(paths[p], `${p} is documented`);
    }
    const op = paths["/v1/agents/sandboxes/{sandbox_id}/code/run"]?.post;
    assert.ok(op, "code/run is documented");
    const body = (op.requestBody as { content: Record<string, { schema: Record<string, unknown> }> }).content["application/json"]?.schema;
    assert.ok(body);
    assert.deepEqual([...(body.required as string[])].sort(), ["code", "language"]);
    const props = body.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(props.language?.enum, ["python", "javascript", "typescript", "bash"]);
    assert.equal(props.code?.type, "string");
    assert.equal(props.timeout?.type, "integer");
    const responses = op.responses as Record<string, { content: Record<string, { schema: { $ref: string } }> }>;
    assert.equal(responses["200"]?.content["application/json"]?.schema.$ref, "#/components/schemas/CodeRunResult");
    for (const status of ["400", "401", "404", "413"]) {
      assert.equal(responses[status]?.content["application/json"]?.schema.$ref, "#/components/schemas/ErrorEnvelope", status);
    }
    const schemas = (doc.components as { schemas: Record<string, Record<string, unknown>> }).schemas;
    const envelope = schemas.ErrorEnvelope as { required: string[]; properties: { error: { required: string[] } } };
    assert.deepEqual(envelope.required, ["error"]);
    assert.deepEqual([...envelope.properties.error.required].sort(), ["code", "message"]);
    const result200 = schemas.CodeRunResult as { required: string[]; properties: Record<string, Record<string, unknown>> };
    assert.deepEqual([...result200.required].sort(), ["error", "execution_time_ms", "logs", "results"]);
    assert.equal(result200.properties.execution_time_ms?.type, "integer");
    assert.ok(schemas.Sandbox, "the sandbox object is documented");
  });
});
