// End to end: code contexts (POST/GET/DELETE /v1/agents/sandboxes/{id}/code/contexts[/{context_id}])
// against the real service: exact keys, isolation of globals and working directory per context,
// code/run with context_id, deletion ends the kernel process, the sandbox's end drops its contexts,
// and every error path.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { assertError, createSandbox } from "./helpers/api.js";

/** PRODUCT.md section 2 (`{context_id, language, cwd, created_at, ...}`) plus what public clients read. */
const CONTEXT_KEYS = ["context_id", "created_at", "cwd", "expires_at", "language", "status"];
const MAX_CONTEXTS = 3;

interface Context {
  context_id: string;
  language: string;
  cwd: string;
  created_at: string;
  expires_at: string;
  status: string;
}

let server: TestServer;
let call: ReturnType<typeof client>;

before(async () => {
  server = await startServer({ env: { AGENTBOX_MAX_CONTEXTS_PER_SANDBOX: String(MAX_CONTEXTS) } });
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

const newSandbox = () => createSandbox(call);

function assertContext(c: Context): void {
  assert.deepEqual(Object.keys(c).sort(), CONTEXT_KEYS);
  assert.match(c.context_id, /^[0-9a-f-]{36}$/);
  assert.equal(c.status, "active");
  for (const t of [c.created_at, c.expires_at]) assert.ok(!Number.isNaN(Date.parse(t)) && t.endsWith("Z"), t);
}

async function create(sandbox: string, body?: Record<string, unknown>): Promise<Context> {
  const res = await call<Context>("POST", `/v1/agents/sandboxes/${sandbox}/code/contexts`, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assertContext(res.body);
  return res.body;
}

async function run(sandbox: string, language: string, code: string, context_id?: string) {
  const res = await call<{ logs: { stdout: string; stderr: string }; error: string | null }>(
    "POST",
    `/v1/agents/sandboxes/${sandbox}/code/run`,
    { language, code, ...(context_id ? { context_id } : {}) },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

async function sh(sandbox: string, command: string): Promise<string> {
  const res = await call<{ stdout: string }>("POST", `/v1/agents/sandboxes/${sandbox}/commands/run`, { command });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.stdout;
}

describe("code contexts", () => {
  let id: string;
  before(async () => {
    id = await newSandbox();
  });

  test("create with no body: python in /home/user, expiring with the sandbox", async () => {
    const c = await create(id);
    assert.equal(c.language, "python");
    assert.equal(c.cwd, "/home/user");
    const sandbox = await call<{ timeout_at: string }>("GET", `/v1/agents/sandboxes/${id}`);
    assert.equal(c.expires_at, sandbox.body.timeout_at);
    await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`);
  });

  test("each context is its own kernel: own globals, own working directory", async () => {
    await sh(id, "mkdir -p work/a work/b");
    const a = await create(id, { language: "python", cwd: "work/a" });
    const b = await create(id, { language: "python", cwd: "/home/user/work/b" });
    assert.equal(a.cwd, "/home/user/work/a");
    assert.equal(b.cwd, "/home/user/work/b");
    await run(id, "python", "secret = 'default'");
    await run(id, "python", "secret = 'in a'", a.context_id);
    assert.equal((await run(id, "python", "import os; print(secret, os.getcwd())", a.context_id)).logs.stdout, "in a /home/user/work/a\n");
    const inB = await run(id, "python", "import os; print(os.getcwd()); print(secret)", b.context_id);
    assert.equal(inB.logs.stdout, "/home/user/work/b\n");
    assert.equal(inB.error, "NameError: name 'secret' is not defined");
    assert.equal((await run(id, "python", "print(secret)")).logs.stdout, "default\n");
    // Files are shared by every kernel of the sandbox.
    await run(id, "python", "open('from-a.txt', 'w').write('a')", a.context_id);
    assert.equal(await sh(id, "cat work/a/from-a.txt"), "a");
    for (const c of [a, b]) await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`);
  });

  test("javascript, typescript and bash contexts", async () => {
    const js = await create(id, { language: "javascript" });
    const ts = await create(id, { language: "typescript", cwd: "/tmp" });
    const bash = await create(id, { language: "bash", cwd: "work" });
    await run(id, "javascript", "globalThis.n = 41", js.context_id);
    assert.equal((await run(id, "javascript", "console.log(n + 1, process.cwd())", js.context_id)).logs.stdout, "42 /home/user\n");
    assert.equal((await run(id, "typescript", "const c: string = process.cwd(); console.log(c)", ts.context_id)).logs.stdout, "/tmp\n");
    await run(id, "bash", "export IN_CTX=yes; cd a", bash.context_id);
    assert.equal((await run(id, "bash", 'echo "$IN_CTX $(pwd)"', bash.context_id)).logs.stdout, "yes /home/user/work/a\n");
    assert.equal((await run(id, "bash", 'echo "[$IN_CTX] $(pwd)"')).logs.stdout, "[] /home/user\n");
    for (const c of [js, ts, bash]) await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`);
  });

  test("GET one and GET all; DELETE answers {message, context_id} and then the context is 404", async () => {
    const c = await create(id, { language: "python" });
    const got = await call<Context>("GET", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, c);
    const all = await call<{ contexts: Context[] }>("GET", `/v1/agents/sandboxes/${id}/code/contexts`);
    assert.equal(all.status, 200);
    assert.deepEqual(Object.keys(all.body), ["contexts"]);
    assert.deepEqual(all.body.contexts, [c]);
    const del = await call<Record<string, unknown>>("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`);
    assert.equal(del.status, 200);
    assert.deepEqual(Object.keys(del.body).sort(), ["context_id", "message"]);
    assert.equal(del.body.context_id, c.context_id);
    assertError(await call("GET", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`), 404, "context_not_found");
    assertError(await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`), 404, "context_not_found");
    const res = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "python", code: "1", context_id: c.context_id });
    assertError(res, 404, "context_not_found");
    assert.deepEqual((await call<{ contexts: Context[] }>("GET", `/v1/agents/sandboxes/${id}/code/contexts`)).body.contexts, []);
  });

  test("deleting a context ends its kernel process", async () => {
    // Python kernels are forks of the supervisor: same command line. Counted exactly (a looser match
    // would also count the probe's own short-lived processes).
    const probe = `for d in /proc/[0-9]*; do [ "$(tr '\\0' ' ' < $d/cmdline 2>/dev/null)" = "/usr/bin/python3 -I /opt/agentbox/supervisor.py " ] && echo k; done | wc -l`;
    const kernels = async () => Number((await sh(id, probe)).trim());
    await run(id, "python", "1");
    const before = await kernels();
    const c = await create(id, { language: "python" });
    assert.equal(await kernels(), before + 1, "creating the context started its kernel");
    await run(id, "python", "import os; open('/tmp/ctx-pid', 'w').write(str(os.getpid()))", c.context_id);
    const pid = await sh(id, "cat /tmp/ctx-pid");
    await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`);
    for (let i = 0; i < 50 && (await kernels()) !== before; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await kernels(), before);
    assert.equal(await sh(id, `test -e /proc/${pid} && echo alive || echo gone`), "gone\n");
  });

  test("at most the configured number of contexts per sandbox", async () => {
    const made = [];
    for (let i = 0; i < MAX_CONTEXTS; i++) made.push(await create(id, { language: "bash" }));
    assertError(await call("POST", `/v1/agents/sandboxes/${id}/code/contexts`, { language: "bash" }), 400, "invalid_state");
    await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${made[0]?.context_id}`);
    made[0] = await create(id, { language: "bash" });
    for (const c of made) await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`);
  });

  test("bad requests: cwd that is missing or a file, unknown language, wrong language for the context", async () => {
    await sh(id, "echo x > a-file");
    for (const body of [{ cwd: "/no/such/dir" }, { cwd: "a-file" }, { language: "ruby" }, { language: 3 }, { cwd: "" }]) {
      assertError(await call("POST", `/v1/agents/sandboxes/${id}/code/contexts`, body), 400, "invalid_request");
    }
    const c = await create(id, { language: "python" });
    const res = await call("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "bash", code: "echo", context_id: c.context_id });
    assertError(res, 400, "invalid_request");
    await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`);
    assert.deepEqual((await call<{ contexts: Context[] }>("GET", `/v1/agents/sandboxes/${id}/code/contexts`)).body.contexts, []);
  });

  test("unknown sandbox or context: 404", async () => {
    assertError(await call("POST", "/v1/agents/sandboxes/nope/code/contexts", {}), 404, "sandbox_not_found");
    assertError(await call("GET", "/v1/agents/sandboxes/nope/code/contexts"), 404, "sandbox_not_found");
    assertError(await call("GET", `/v1/agents/sandboxes/${id}/code/contexts/nope`), 404, "context_not_found");
    assertError(await call("DELETE", `/v1/agents/sandboxes/${id}/code/contexts/nope`), 404, "context_not_found");
  });
});

test("killing a sandbox drops its contexts", async () => {
  const id = await newSandbox();
  const c = await create(id, { language: "python" });
  assert.equal((await call("DELETE", `/v1/agents/sandboxes/${id}`)).status, 200);
  assertError(await call("GET", `/v1/agents/sandboxes/${id}/code/contexts/${c.context_id}`), 404, "context_not_found");
  assert.deepEqual((await call<{ contexts: Context[] }>("GET", `/v1/agents/sandboxes/${id}/code/contexts`)).body.contexts, []);
  assertError(await call("POST", `/v1/agents/sandboxes/${id}/code/contexts`, {}), 400, "invalid_state");
});
