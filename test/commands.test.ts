// End to end: POST /v1/agents/sandboxes/{id}/commands/run against the real service: the exact
// response keys, argument quoting, exit codes, working directory, environment, timeouts, output
// caps, background processes reachable on the sandbox's loopback, and every rejected request.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { commandLine, shellQuote } from "../src/sandbox/routes/commands.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import type { CommandOutput } from "../src/sandbox/service.js";
import { assertError, createSandbox } from "./helpers/api.js";

/** PRODUCT.md section 2: commands/run answers exactly these keys. */
const COMMAND_KEYS = ["duration_ms", "error", "exit_code", "stderr", "stdout", "success"];
const OUTPUT_LIMIT = 64 * 1024;

let server: TestServer;
let call: ReturnType<typeof client>;
let id: string;

before(async () => {
  server = await startServer({ env: { AGENTBOX_OUTPUT_LIMIT_BYTES: String(OUTPUT_LIMIT), AGENTBOX_MAX_RUN_TIMEOUT_S: "60" } });
  call = client(server);
  id = await newSandbox();
});

after(async () => {
  await server?.dispose();
});

const newSandbox = (body: Record<string, unknown> = {}) => createSandbox(call, body);

/** Runs a command and checks the contract: 200 with exactly the listed keys, each of its type. */
async function cmd(body: Record<string, unknown>, sandbox = id): Promise<CommandOutput> {
  const res = await call<CommandOutput>("POST", `/v1/agents/sandboxes/${sandbox}/commands/run`, body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const r = res.body;
  assert.deepEqual(Object.keys(r).sort(), COMMAND_KEYS);
  assert.equal(typeof r.stdout, "string");
  assert.equal(typeof r.stderr, "string");
  assert.ok(Number.isInteger(r.exit_code));
  assert.ok(Number.isInteger(r.duration_ms) && r.duration_ms >= 0);
  assert.equal(typeof r.success, "boolean");
  assert.ok(r.error === null || typeof r.error === "string");
  assert.equal(r.success, r.exit_code === 0 && r.error === null);
  return r;
}

describe("command lines", () => {
  test("a shell line with && runs in /home/user as the sandbox user", async () => {
    const r = await cmd({ command: "echo hi && pwd && id -u && echo err >&2" });
    assert.deepEqual([r.stdout, r.stderr, r.exit_code, r.error, r.success], ["hi\n/home/user\n1000\n", "err\n", 0, null, true]);
  });

  test("command plus args; args [] and missing args behave the same", async () => {
    await cmd({ command: "touch", args: ["listed.txt"] });
    const r = await cmd({ command: "ls", args: ["-la"] });
    assert.match(r.stdout, /listed\.txt/);
    assert.match(r.stdout, /^total /);
    assert.equal((await cmd({ command: "echo hi", args: [] })).stdout, "hi\n");
    assert.equal((await cmd({ command: "echo hi" })).stdout, "hi\n");
    assert.equal((await cmd({ command: "echo hi", args: null, working_dir: null, environment: null, timeout: null })).stdout, "hi\n");
  });

  test("each arg is one word: spaces, quotes, $ and empty strings are not interpreted", async () => {
    const r = await cmd({ command: "printf '[%s]\\n'", args: ["a b", "it's", "$HOME", "", "*", "x;y", "`id`"] });
    assert.equal(r.stdout, "[a b]\n[it's]\n[$HOME]\n[]\n[*]\n[x;y]\n[`id`]\n");
  });

  test("shellQuote leaves safe words alone and single-quotes the rest", () => {
    assert.equal(shellQuote("-la"), "-la");
    assert.equal(shellQuote("a/b.txt"), "a/b.txt");
    assert.equal(shellQuote(""), "''");
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
    assert.equal(commandLine("ls", ["-l", "my file"]), "ls -l 'my file'");
  });

  test("an unknown program is exit code 127, a non-zero exit is still HTTP 200", async () => {
    const missing = await cmd({ command: "no-such-program-xyz" });
    assert.equal(missing.exit_code, 127);
    assert.equal(missing.success, false);
    assert.match(missing.stderr, /not found/);
    const failing = await cmd({ command: "echo partial; exit 3" });
    assert.deepEqual([failing.stdout, failing.exit_code, failing.success, failing.error], ["partial\n", 3, false, "exit status 3"]);
    const missingWithArgs = await cmd({ command: "no-such-program-xyz", args: ["--help"] });
    assert.equal(missingWithArgs.exit_code, 127);
  });

  test("a process killed by a signal reports 128 + the signal", async () => {
    const r = await cmd({ command: "kill -TERM $$" });
    assert.equal(r.exit_code, 143);
    assert.equal(r.success, false);
    assert.match(r.error ?? "", /signal 15/);
  });

  test("every call is a fresh process: shell state does not carry over", async () => {
    await cmd({ command: "export ONLY_HERE=1; cd /tmp" });
    const r = await cmd({ command: 'echo "[$ONLY_HERE]"; pwd' });
    assert.equal(r.stdout, "[]\n/home/user\n");
  });

  test("duration_ms measures the command", async () => {
    const r = await cmd({ command: "sleep 0.3" });
    assert.ok(r.duration_ms >= 250 && r.duration_ms < 5000, String(r.duration_ms));
  });
});

describe("working_dir and environment", () => {
  test("working_dir relative to /home/user or absolute", async () => {
    await cmd({ command: "mkdir -p proj/sub" });
    assert.equal((await cmd({ command: "pwd", working_dir: "proj/sub" })).stdout, "/home/user/proj/sub\n");
    assert.equal((await cmd({ command: "pwd", working_dir: "/tmp" })).stdout, "/tmp\n");
    assert.equal((await cmd({ command: "pwd", working_dir: "/home/user/proj" })).stdout, "/home/user/proj\n");
  });

  test("a working_dir that does not exist (or is a file) is a 400", async () => {
    await cmd({ command: "echo x > plain.txt" });
    for (const working_dir of ["/does/not/exist", "plain.txt"]) {
      const res = await call("POST", `/v1/agents/sandboxes/${id}/commands/run`, { command: "pwd", working_dir });
      assertError(res, 400, "invalid_request");
    }
  });

  test("environment is set for this command only, over the sandbox's env_vars", async () => {
    const sbx = await newSandbox({ env_vars: { FROM_SANDBOX: "s", BOTH: "sandbox" } });
    const r = await cmd({ command: 'echo "$FROM_SANDBOX $BOTH $EXTRA $HOME"', environment: { BOTH: "command", EXTRA: "a b" } }, sbx);
    assert.equal(r.stdout, "s command a b /home/user\n");
    assert.equal((await cmd({ command: 'echo "[$EXTRA]"' }, sbx)).stdout, "[]\n");
    await call("DELETE", `/v1/agents/sandboxes/${sbx}`);
  });

  test("no host environment variable is visible", async () => {
    const r = await cmd({ command: "env | cut -d= -f1 | sort" });
    const names = r.stdout.trim().split("\n");
    for (const leaked of ["AGENTBOX_API_KEY", "AGENTBOX_DATA_DIR", "NODE_OPTIONS", "SSH_AUTH_SOCK"])
      assert.ok(!names.includes(leaked), leaked);
  });
});

describe("timeouts and output limits", () => {
  test("timeout is in milliseconds: the command is killed and the response says so", async () => {
    const started = Date.now();
    const r = await cmd({ command: "echo before; sleep 20; echo after", timeout: 500 });
    assert.ok(Date.now() - started < 5000, "the request returns soon after the timeout");
    assert.equal(r.stdout, "before\n");
    assert.equal(r.exit_code, 137);
    assert.equal(r.success, false);
    assert.match(r.error ?? "", /timed out after 500 ms/);
  });

  test("a timeout kills the command's children too", async () => {
    await cmd({ command: "(sleep 30; touch /home/user/should-not-exist) & sleep 30", timeout: 300 });
    const r = await cmd({ command: "pgrep -c sleep || true" });
    assert.equal(r.stdout.trim(), "0");
  });

  test("output past the cap is truncated with a marker and the command stopped", async () => {
    const r = await cmd({ command: "yes 0123456789" });
    assert.equal(r.success, false);
    assert.match(r.error ?? "", /Output exceeded the limit/);
    assert.ok(r.stdout.length <= OUTPUT_LIMIT + 100, String(r.stdout.length));
    assert.match(r.stdout, /\[output truncated at \d+ bytes\]\n$/);
  });

  test("two commands in one sandbox run side by side", async () => {
    const started = Date.now();
    await Promise.all([cmd({ command: "sleep 0.6" }), cmd({ command: "sleep 0.6" })]);
    assert.ok(Date.now() - started < 1100, `took ${Date.now() - started} ms`);
  });
});

describe("background processes", () => {
  test("a server started with nohup ... & keeps running and is reachable from a later command and from code", async () => {
    const start = await cmd({ command: "nohup python3 -m http.server 8000 &" });
    assert.equal(start.exit_code, 0);
    assert.ok(start.duration_ms < 2000, "the command returns without waiting for the background server");
    await cmd({ command: "echo '<p>served</p>' > page.html" });
    const probe =
      "for i in $(seq 100); do python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(\"http://127.0.0.1:8000/page.html\").read().decode())' 2>/dev/null && exit 0; sleep 0.05; done; exit 1";
    const fetched = await cmd({ command: probe });
    assert.equal(fetched.stdout, "<p>served</p>\n", fetched.stderr);
    const res = await call<{ logs: { stdout: string }; error: string | null }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "python",
      code: "import urllib.request\nprint(urllib.request.urlopen('http://localhost:8000/page.html').status)",
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.error, null);
    assert.equal(res.body.logs.stdout, "200\n");
    // Still there a moment later: nothing reaped it when its shell exited.
    assert.match((await cmd({ command: "pgrep -f http.server" })).stdout, /^\d+\n$/);
  });

  test("files written by commands and by code runs are shared", async () => {
    await cmd({ command: "echo from-command > shared.txt" });
    const res = await call<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "python",
      code: "print(open('shared.txt').read().strip())\nopen('from-code.txt','w').write('from-code')",
    });
    assert.equal(res.body.logs.stdout, "from-command\n");
    assert.equal((await cmd({ command: "cat from-code.txt" })).stdout, "from-code");
  });
});

describe("rejected requests", () => {
  const route = () => `/v1/agents/sandboxes/${id}/commands/run`;

  test("body validation: 400 with the error envelope", async () => {
    for (const body of [
      {},
      { command: "" },
      { command: 42 },
      { command: "ls", args: "-la" },
      { command: "ls", args: [1] },
      { command: "ls", timeout: 0 },
      { command: "ls", timeout: 1.5 },
      { command: "ls", timeout: "1000" },
      { command: "ls", timeout: 60_001 },
      { command: "ls", environment: { "BAD-NAME": "x" } },
      { command: "ls", environment: { OK: 1 } },
      { command: "ls", working_dir: 7 },
      { command: "echo \u0000" },
    ]) {
      assertError(await call("POST", route(), body), 400, "invalid_request");
    }
    assertError(await call("POST", route(), "{not json"), 400, "invalid_request");
  });

  test("no key is 401; an unknown sandbox is 404; a killed sandbox is 400", async () => {
    const res = await fetch(`${server.url}${route()}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ command: "ls" }),
    });
    assert.equal(res.status, 401);
    assertError(await call("POST", "/v1/agents/sandboxes/no-such-sandbox/commands/run", { command: "ls" }), 404, "sandbox_not_found");
    const gone = await newSandbox();
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${gone}`)).status, 200);
    assertError(await call("POST", `/v1/agents/sandboxes/${gone}/commands/run`, { command: "ls" }), 400, "invalid_state");
  });
});
