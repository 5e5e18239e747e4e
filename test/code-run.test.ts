// End to end: POST /v1/agents/sandboxes/{id}/code/run against the real service, in every language:
// the seed's exact response shape, stateful kernels, errors of user code, timeouts, and every way a
// request can be rejected.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { effectiveTimeout } from "../src/sandbox/routes/code.js";
import { loadConfig } from "../src/config.js";
import { sandboxSettings } from "../src/sandbox/settings.js";
import { ApiError } from "../src/errors.js";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { assertError, createSandbox } from "./helpers/api.js";

interface RunResult {
  logs: { stdout: string; stderr: string };
  error: string | null;
  execution_time_ms: number;
}

const BODY_LIMIT = 64 * 1024;
const CODE_LIMIT = 16 * 1024;

let server: TestServer;
let call: ReturnType<typeof client>;

before(async () => {
  server = await startServer({
    env: { AGENTBOX_BODY_LIMIT_BYTES: String(BODY_LIMIT), AGENTBOX_MAX_CODE_BYTES: String(CODE_LIMIT) },
  });
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

const newSandbox = () => createSandbox(call);

/** Runs code and checks the contract: 200 and exactly the seed's {logs: {stdout, stderr}, error, execution_time_ms} plus results. */
async function run(id: string, language: string, code: string, extra: Record<string, unknown> = {}): Promise<RunResult> {
  const res = await call<RunResult>("POST", `/v1/agents/sandboxes/${id}/code/run`, { code, language, ...extra });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  const body = res.body;
  assert.deepEqual(Object.keys(body).sort(), ["error", "execution_time_ms", "logs", "results"]);
  assert.deepEqual(Object.keys(body.logs).sort(), ["stderr", "stdout"]);
  assert.equal(typeof body.logs.stdout, "string");
  assert.equal(typeof body.logs.stderr, "string");
  assert.ok(body.error === null || typeof body.error === "string");
  if (typeof body.error === "string") assert.ok(!body.error.includes("\n"), `error is one line: ${JSON.stringify(body.error)}`);
  assert.ok(Number.isInteger(body.execution_time_ms) && body.execution_time_ms >= 0, String(body.execution_time_ms));
  return body;
}

describe("every language runs and its output is captured", () => {
  let id: string;
  before(async () => {
    id = await newSandbox();
  });

  test("python: stdout and stderr, error null", async () => {
    const r = await run(id, "python", "import sys\nprint('out', 1 + 1)\nprint('err', file=sys.stderr)");
    assert.deepEqual(r.logs, { stdout: "out 2\n", stderr: "err\n" });
    assert.equal(r.error, null);
  });

  test("javascript: console.log and console.error", async () => {
    const r = await run(id, "javascript", "console.log('out', [1, 2].map((x) => x * 2).join(','))\nconsole.error('err')");
    assert.deepEqual(r.logs, { stdout: "out 2,4\n", stderr: "err\n" });
    assert.equal(r.error, null);
  });

  test("typescript: types are stripped, not checked", async () => {
    const r = await run(id, "typescript", "const n: number = 21\nconst s: string = 'ts'\nconsole.log(s, n * 2)\nconsole.error('warn')");
    assert.deepEqual(r.logs, { stdout: "ts 42\n", stderr: "warn\n" });
    assert.equal(r.error, null);
  });

  test("bash: stdout, stderr, and every kernel starts in /home/user", async () => {
    const r = await run(id, "bash", "echo out; echo err >&2; pwd");
    assert.deepEqual(r.logs, { stdout: "out\n/home/user\n", stderr: "err\n" });
    assert.equal(r.error, null);
    for (const [language, code] of [
      ["python", "import os; print(os.getcwd())"],
      ["javascript", "console.log(process.cwd())"],
    ] as const) {
      assert.equal((await run(id, language, code)).logs.stdout, "/home/user\n");
    }
  });

  test("a run that prints nothing has empty strings, not missing keys", async () => {
    const r = await run(id, "python", "x_unused = 1");
    assert.deepEqual(r.logs, { stdout: "", stderr: "" });
    assert.equal(r.error, null);
  });

  test("unicode in code and output survives in every language", async () => {
    const text = "héllo 日本語 ✓ 🎉";
    assert.equal((await run(id, "python", `print(${JSON.stringify(text)})`)).logs.stdout, `${text}\n`);
    assert.equal((await run(id, "javascript", `console.log(${JSON.stringify(text)})`)).logs.stdout, `${text}\n`);
    assert.equal((await run(id, "typescript", `const t: string = ${JSON.stringify(text)}; console.log(t)`)).logs.stdout, `${text}\n`);
    assert.equal((await run(id, "bash", `echo '${text}'`)).logs.stdout, `${text}\n`);
    // A multi-byte character written in two halves is still one character.
    const split = await run(
      id,
      "python",
      "import sys\nb = '🎉'.encode()\nsys.stdout.buffer.write(b[:2]); sys.stdout.flush()\nsys.stdout.buffer.write(b[2:])",
    );
    assert.equal(split.logs.stdout, "🎉");
  });

  test("files written by one language are read by another", async () => {
    await run(id, "python", "open('shared.txt', 'w').write('from python')");
    assert.equal((await run(id, "bash", "cat /home/user/shared.txt")).logs.stdout, "from python");
    assert.equal(
      (await run(id, "javascript", "console.log(require('fs').readFileSync('shared.txt', 'utf8'))")).logs.stdout,
      "from python\n",
    );
  });
});

describe("state persists between runs", () => {
  let id: string;
  before(async () => {
    id = await newSandbox();
  });

  test("python: variables, imports, functions", async () => {
    await run(id, "python", "import math\nimport json as j\nx = 41\ndef double(v):\n    return v * 2");
    const r = await run(id, "python", "print(x + 1, math.floor(math.pi), j.dumps([double(x)]))");
    assert.equal(r.logs.stdout, "42 3 [82]\n");
    assert.equal(r.error, null);
  });

  test("javascript: var, top-level let/const, functions and globalThis", async () => {
    await run(
      id,
      "javascript",
      "var v = 1\nlet l = 2\nconst c = 3\nfunction f() { return v + l + c }\nglobalThis.g = 4\nclass K { k() { return 5 } }",
    );
    const r = await run(id, "javascript", "console.log(v, l, c, f(), g, new K().k())");
    assert.equal(r.logs.stdout, "1 2 3 6 4 5\n");
    assert.equal(r.error, null);
  });

  test("javascript: a cell with let/const can be run again (notebook style)", async () => {
    for (const n of [1, 2]) {
      const r = await run(id, "javascript", `let again = ${n}\nconst twice = again * 2\nconsole.log(twice)`);
      assert.equal(r.error, null, r.logs.stderr);
      assert.equal(r.logs.stdout, `${n * 2}\n`);
    }
  });

  test("typescript: interfaces, type aliases, generics, enums, typed functions", async () => {
    await run(
      id,
      "typescript",
      [
        "interface Point { x: number; y: number }",
        "type Label = string",
        "function first<T>(items: T[]): T | undefined { return items[0] }",
        "const p: Point = { x: 3, y: 4 }",
        "let label: Label = 'dist'",
        "enum Color { Red, Green }",
        "function dist(a: Point): number { return Math.hypot(a.x, a.y) }",
      ].join("\n"),
    );
    const r = await run(id, "typescript", "const pts: Point[] = [p]\nconsole.log(label, dist(first<Point>(pts) as Point), Color.Green)");
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stdout, "dist 5 1\n");
  });

  test("javascript and typescript are separate kernels", async () => {
    await run(id, "javascript", "var onlyInJs = 'js'");
    const r = await run(id, "typescript", "console.log(typeof onlyInJs)");
    assert.equal(r.logs.stdout, "undefined\n");
  });

  test("bash: working directory and exported variables", async () => {
    await run(id, "bash", "mkdir -p work/sub && cd work/sub && export GREETING=hello && PLAIN=kept");
    const r = await run(id, "bash", 'pwd; echo "$GREETING $PLAIN"; bash -c \'echo "child sees $GREETING"\'');
    assert.equal(r.logs.stdout, "/home/user/work/sub\nhello kept\nchild sees hello\n");
    assert.equal(r.error, null);
  });
});

describe("top-level await", () => {
  let id: string;
  before(async () => {
    id = await newSandbox();
  });

  test("javascript: await at top level, and a declaration made with await persists", async () => {
    const r = await run(id, "javascript", "const v = await new Promise((r) => setTimeout(() => r(42), 20))\nconsole.log('got', v)");
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stdout, "got 42\n");
    const next = await run(id, "javascript", "console.log(v + 1)");
    assert.equal(next.logs.stdout, "43\n");
  });

  test("javascript: a rejected top-level await is the run's error", async () => {
    const r = await run(id, "javascript", "await Promise.reject(new Error('nope'))");
    assert.equal(r.error, "Error: nope");
    assert.match(r.logs.stderr, /Error: nope/);
  });

  test("typescript: await with types, and the declaration persists", async () => {
    const r = await run(
      id,
      "typescript",
      "async function load(): Promise<number[]> { return [1, 2, 3] }\nconst items: number[] = await load()\nconsole.log(items.length)",
    );
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stdout, "3\n");
    assert.equal((await run(id, "typescript", "console.log(items.reduce((a: number, b: number) => a + b, 0))")).logs.stdout, "6\n");
  });
});

describe("errors of user code are 200 with `error` set", () => {
  let id: string;
  before(async () => {
    id = await newSandbox();
  });

  test("python NameError: one-line error, traceback in stderr", async () => {
    const r = await run(id, "python", "print('before')\nprint(x)");
    assert.equal(r.error, "NameError: name 'x' is not defined");
    assert.equal(r.logs.stdout, "before\n");
    assert.match(r.logs.stderr, /^Traceback \(most recent call last\):/);
    assert.match(r.logs.stderr, /line 2/);
    assert.match(r.logs.stderr, /NameError: name 'x' is not defined\n$/);
  });

  test("python SyntaxError", async () => {
    const r = await run(id, "python", "def f(:\n    pass");
    assert.match(r.error ?? "", /^SyntaxError: /);
    assert.match(r.logs.stderr, /SyntaxError/);
    // The kernel is fine afterwards.
    assert.equal((await run(id, "python", "print('ok')")).error, null);
  });

  test("python: a raised custom exception", async () => {
    const r = await run(id, "python", "class MyError(Exception):\n    pass\nraise MyError('custom failure')");
    assert.equal(r.error, "MyError: custom failure");
  });

  test("javascript TypeError: one-line error, stack in stderr", async () => {
    const r = await run(id, "javascript", "console.log('before')\nnull.x");
    assert.equal(r.error, "TypeError: Cannot read properties of null (reading 'x')");
    assert.equal(r.logs.stdout, "before\n");
    assert.match(r.logs.stderr, /TypeError: Cannot read properties of null/);
    assert.match(r.logs.stderr, /\n\s+at /);
  });

  test("javascript SyntaxError", async () => {
    const r = await run(id, "javascript", "let = = 1");
    assert.match(r.error ?? "", /^SyntaxError: /);
  });

  test("typescript: a thrown error", async () => {
    const r = await run(id, "typescript", 'function check(n: number): void { if (n > 1) throw new RangeError("too big: " + n) }\ncheck(5)');
    assert.equal(r.error, "RangeError: too big: 5");
    assert.match(r.logs.stderr, /RangeError: too big: 5/);
  });

  test("typescript: a syntax error is the run's error, not an HTTP error", async () => {
    const r = await run(id, "typescript", "const ok: number = 1\nconst broken: = 5");
    assert.match(r.error ?? "", /^SyntaxError: .*\(2:\d+\)/);
    assert.match(r.logs.stderr, /SyntaxError/);
    assert.equal((await run(id, "typescript", "console.log('still fine')")).logs.stdout, "still fine\n");
  });

  test("bash: a non-zero exit status", async () => {
    const r = await run(id, "bash", "echo before; ls /nonexistent-dir");
    assert.equal(r.error, "exit status 2");
    assert.equal(r.logs.stdout, "before\n");
    assert.match(r.logs.stderr, /No such file or directory/);
    assert.equal((await run(id, "bash", "false")).error, "exit status 1");
  });

  test("bash: `exit 3` reports exit status 3 and lost state; the next bash run works", async () => {
    await run(id, "bash", "cd /tmp && export LOST=yes");
    const r = await run(id, "bash", "echo bye; exit 3");
    assert.equal(r.logs.stdout, "bye\n");
    assert.match(r.error ?? "", /^exit status 3\b/);
    assert.match(r.error ?? "", /state was lost/);
    const next = await run(id, "bash", 'pwd; echo "[$LOST]"');
    assert.equal(next.error, null);
    assert.equal(next.logs.stdout, "/home/user\n[]\n");
  });
});

describe("kernels that end and per-run extras", () => {
  let id: string;
  before(async () => {
    id = await newSandbox();
  });

  test("python: a kernel killed by os._exit is restarted, the error says state was lost", async () => {
    await run(id, "python", "gone = 1");
    const r = await run(id, "python", "import os\nos._exit(4)");
    assert.match(r.error ?? "", /state was lost/);
    const next = await run(id, "python", "print('back', 'gone' in globals())");
    assert.equal(next.error, null);
    assert.equal(next.logs.stdout, "back False\n");
  });

  test("python: sys.exit is a SystemExit error and keeps the kernel", async () => {
    await run(id, "python", "kept = 2");
    assert.equal((await run(id, "python", "import sys\nsys.exit(3)")).error, "SystemExit: 3");
    assert.equal((await run(id, "python", "print(kept)")).logs.stdout, "2\n");
  });

  test("python: a write to a closed socket raises BrokenPipeError, as in python3, and keeps the kernel", async () => {
    await run(id, "python", "piped = 5");
    const code = [
      "import socket",
      "a, b = socket.socketpair()",
      "b.close()",
      "try:",
      "    a.sendall(b'x' * 100000)",
      "except BrokenPipeError:",
      "    print('broken pipe')",
    ].join("\n");
    const r = await run(id, "python", code);
    assert.equal(r.error, null);
    assert.equal(r.logs.stdout, "broken pipe\n");
    assert.equal((await run(id, "python", "print(piped)")).logs.stdout, "5\n");
  });

  test("javascript: process.exit restarts the kernel; the next run works", async () => {
    const r = await run(id, "javascript", "process.exit(2)");
    assert.match(r.error ?? "", /state was lost/);
    assert.equal((await run(id, "javascript", "console.log('back')")).logs.stdout, "back\n");
  });

  test("stdin is empty: input() fails fast instead of hanging", async () => {
    const r = await run(id, "python", "input()", { timeout: 5 });
    assert.equal(r.error, "EOFError: EOF when reading a line");
    assert.equal((await run(id, "bash", 'read x; echo "[$x]"', { timeout: 5 })).logs.stdout, "[]\n");
  });

  test("`environment` sets variables for that run only", async () => {
    const environment = { RUN_VAR: "per-run" };
    assert.equal((await run(id, "python", "import os\nprint(os.environ.get('RUN_VAR'))", { environment })).logs.stdout, "per-run\n");
    assert.equal((await run(id, "python", "import os\nprint(os.environ.get('RUN_VAR'))")).logs.stdout, "None\n");
    assert.equal((await run(id, "javascript", "console.log(process.env.RUN_VAR)", { environment })).logs.stdout, "per-run\n");
    assert.equal((await run(id, "javascript", "console.log(process.env.RUN_VAR)")).logs.stdout, "undefined\n");
    assert.equal((await run(id, "bash", 'echo "[$RUN_VAR]"', { environment })).logs.stdout, "[per-run]\n");
  });

  test("bash: `environment` does not outlive its run, and a variable it shadowed comes back", async () => {
    await run(id, "bash", 'echo "[$ONE_RUN]"', { environment: { ONE_RUN: "x" } });
    assert.equal((await run(id, "bash", 'echo "[$ONE_RUN]"')).logs.stdout, "[]\n");
    await run(id, "bash", "export KEPT=before");
    const during = await run(id, "bash", 'echo "[$KEPT]"; false', { environment: { KEPT: "during" } });
    assert.equal(during.logs.stdout, "[during]\n");
    assert.equal(during.error, "exit status 1");
    assert.equal((await run(id, "bash", 'echo "[$KEPT]"; env | grep -c ^KEPT=')).logs.stdout, "[before]\n1\n");
  });
});

describe("ES modules in javascript", () => {
  let id: string;
  before(async () => {
    id = await newSandbox();
  });

  test('import fs from "node:fs" works', async () => {
    const r = await run(
      id,
      "javascript",
      'import fs from "node:fs"\nfs.writeFileSync("esm.txt", "esm ok")\nconsole.log(fs.readFileSync("esm.txt", "utf8"))',
    );
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stdout, "esm ok\n");
  });

  test("named and namespace imports, and the import persists", async () => {
    const r = await run(
      id,
      "javascript",
      'import { join } from "node:path"\nimport * as os from "node:os"\nconsole.log(join("a", "b"), typeof os.cpus)',
    );
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stdout, "a/b function\n");
    assert.equal((await run(id, "javascript", 'console.log(join("c", "d"))')).logs.stdout, "c/d\n");
  });

  test("typescript imports with types", async () => {
    const r = await run(id, "typescript", 'import { basename } from "node:path"\nconst b: string = basename("/x/y.txt")\nconsole.log(b)');
    assert.equal(r.error, null, r.logs.stderr);
    assert.equal(r.logs.stdout, "y.txt\n");
  });
});

describe("timeouts", () => {
  test("the default timeout is 30 seconds and a larger one above the maximum is refused", () => {
    const config = sandboxSettings(loadConfig().dataDir);
    assert.equal(config.defaultRunTimeoutS, 30);
    assert.equal(effectiveTimeout(undefined, config), 30);
    assert.equal(effectiveTimeout(5, config), 5);
    assert.equal(effectiveTimeout(config.maxRunTimeoutS, config), config.maxRunTimeoutS);
    assert.throws(
      () => effectiveTimeout(config.maxRunTimeoutS + 1, config),
      (err: unknown) => err instanceof ApiError && err.status === 400 && err.code === "invalid_request",
    );
  });

  test("python: timeout 1 interrupts a sleep; state is kept and the next run works", async () => {
    const id = await newSandbox();
    await run(id, "python", "kept = 'still here'");
    const started = Date.now();
    const r = await run(id, "python", "import time\nprint('started', flush=True)\ntime.sleep(10)\nprint('never')", { timeout: 1 });
    const elapsed = Date.now() - started;
    assert.match(r.error ?? "", /^Execution timed out after 1 second\b/);
    assert.equal(r.logs.stdout, "started\n");
    assert.ok(elapsed < 5000, `the request took ${elapsed} ms`);
    assert.ok(r.execution_time_ms >= 900 && r.execution_time_ms < 5000, String(r.execution_time_ms));
    const next = await run(id, "python", "print(kept)");
    assert.equal(next.error, null);
    assert.equal(next.logs.stdout, "still here\n");
  });

  test("javascript: a busy loop is stopped; the next run works", async () => {
    const id = await newSandbox();
    const r = await run(id, "javascript", "while (true) {}", { timeout: 1 });
    assert.match(r.error ?? "", /^Execution timed out after 1 second\b/);
    const next = await run(id, "javascript", "console.log('alive')");
    assert.equal(next.error, null);
    assert.equal(next.logs.stdout, "alive\n");
  });

  test("bash: a long sleep is stopped; the next run works", async () => {
    const id = await newSandbox();
    const r = await run(id, "bash", "sleep 30", { timeout: 1 });
    assert.match(r.error ?? "", /^Execution timed out after 1 second\b/);
    const next = await run(id, "bash", "echo alive");
    assert.equal(next.error, null);
    assert.equal(next.logs.stdout, "alive\n");
  });

  test("without a timeout a 2 second run completes (the default applies, not something shorter)", async () => {
    const id = await newSandbox();
    const r = await run(id, "python", "import time\ntime.sleep(2)\nprint('done')");
    assert.equal(r.error, null);
    assert.equal(r.logs.stdout, "done\n");
    assert.ok(r.execution_time_ms >= 1900, String(r.execution_time_ms));
  });

  test("the maximum timeout is accepted", async () => {
    const id = await newSandbox();
    const r = await run(id, "python", "print('max')", { timeout: sandboxSettings(loadConfig().dataDir).maxRunTimeoutS });
    assert.equal(r.logs.stdout, "max\n");
  });

  test("execution_time_ms is an integer close to the code's own run time", async () => {
    const id = await newSandbox();
    const r = await run(id, "python", "import time\ntime.sleep(0.3)");
    assert.ok(Number.isInteger(r.execution_time_ms));
    assert.ok(r.execution_time_ms >= 290 && r.execution_time_ms < 1500, String(r.execution_time_ms));
    const quick = await run(id, "bash", "true");
    assert.ok(quick.execution_time_ms < 250, String(quick.execution_time_ms));
  });
});

describe("bad requests are 4xx with the error envelope", () => {
  let id: string;
  before(async () => {
    id = await newSandbox();
  });

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    call("POST", `/v1/agents/sandboxes/${id}/code/run`, typeof body === "string" ? body : JSON.stringify(body), headers);

  const cases: [string, unknown][] = [
    ["missing language", { code: "print(1)" }],
    ["unknown language", { code: "print(1)", language: "ruby" }],
    ["language in the wrong case", { code: "print(1)", language: "Python" }],
    ["language not a string", { code: "print(1)", language: 1 }],
    ["missing code", { language: "python" }],
    ["code not a string", { code: 123, language: "python" }],
    ["code null", { code: null, language: "python" }],
    ["fractional timeout", { code: "1", language: "python", timeout: 1.5 }],
    ["timeout as a string", { code: "1", language: "python", timeout: "5" }],
    ["zero timeout", { code: "1", language: "python", timeout: 0 }],
    ["negative timeout", { code: "1", language: "python", timeout: -1 }],
    ["too large timeout", { code: "1", language: "python", timeout: 10 ** 6 }],
    ["a JSON array", [{ code: "1", language: "python" }]],
    ["a JSON string", '"print(1)"'],
    ["JSON null", "null"],
    ["malformed JSON", '{"code": "1", "language": '],
    ["an empty body", ""],
  ];
  for (const [name, body] of cases) {
    test(`${name} → 400 invalid_request`, async () => {
      assertError(await post(body), 400, "invalid_request");
    });
  }

  test("the messages say what is wrong", async () => {
    assert.match(assertError(await post({ code: "1" }), 400, "invalid_request").error.message, /language/);
    const unknown = assertError(await post({ code: "1", language: "ruby" }), 400, "invalid_request");
    assert.match(unknown.error.message, /python, javascript, typescript, bash/);
    assert.match(assertError(await post({ language: "python" }), 400, "invalid_request").error.message, /code/);
    assert.match(assertError(await post({ code: "1", language: "python", timeout: 0 }), 400, "invalid_request").error.message, /timeout/);
    assert.match(assertError(await post('{"code":'), 400, "invalid_request").error.message, /JSON/);
  });

  test("a body over the body limit → 413", async () => {
    assertError(await post({ code: `# ${"x".repeat(BODY_LIMIT)}`, language: "python" }), 413, "payload_too_large");
  });

  test("code over the code limit (body within its limit) → 413", async () => {
    const res = await post({ code: `# ${"x".repeat(CODE_LIMIT)}`, language: "python" });
    assert.match(assertError(res, 413, "payload_too_large").error.message, /code/);
    // Just under the limit runs.
    assert.equal((await run(id, "python", `# ${"x".repeat(CODE_LIMIT - 100)}\nprint('fits')`)).logs.stdout, "fits\n");
  });

  test("unknown sandbox → 404 sandbox_not_found", async () => {
    const res = await call("POST", "/v1/agents/sandboxes/does-not-exist/code/run", { code: "1", language: "python" });
    assertError(res, 404, "sandbox_not_found");
  });

  test("a malformed or overlong sandbox id in the URL → 400 with the envelope", async () => {
    const body = { code: "1", language: "python" };
    assertError(await call("POST", "/v1/agents/sandboxes/%E0%A4%A/code/run", body), 400, "invalid_request");
    assertError(await call("POST", `/v1/agents/sandboxes/${"a".repeat(200)}/code/run`, body), 400, "invalid_request");
    assertError(await call("POST", `/v1/agents/sandboxes/${"a".repeat(5000)}/code/run`, body), 400, "invalid_request");
  });

  test("a killed sandbox → 400 invalid_state", async () => {
    const victim = await newSandbox();
    assert.equal((await call("DELETE", `/v1/agents/sandboxes/${victim}`)).status, 200);
    const res = await call("POST", `/v1/agents/sandboxes/${victim}/code/run`, { code: "1", language: "python" });
    assert.match(assertError(res, 400, "invalid_state").error.message, /terminated/);
  });

  test("after all of that the sandbox and the service still work", async () => {
    assert.equal((await run(id, "python", "print('fine')")).logs.stdout, "fine\n");
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    assert.doesNotMatch(server.logs(), /"level":50/, "no error was logged");
  });
});
