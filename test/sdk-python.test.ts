// The Python SDK (standard library only) against the real service, with Debian's python3: its own
// end-to-end tests (sdk/python/tests), then the README's agent loop against a scripted model.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { startServer, type TestServer } from "./helpers/server.js";
import { startUpstream, type Upstream } from "./helpers/upstream.js";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const SDK = path.join(ROOT, "sdk/python");

describe("Python SDK", () => {
  let server: TestServer;
  let upstream: Upstream;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    upstream = await startUpstream();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-sdk-py-"));
    const providers = path.join(dir, "providers.json");
    fs.writeFileSync(
      providers,
      JSON.stringify({ providers: [{ name: "scripted", type: "openai", base_url: upstream.baseUrl, models: ["scripted"], retries: 0 }] }),
    );
    server = await startServer({ env: { AGENTBOX_PROVIDERS_FILE: providers } });
    // Only what the SDK reads: the host's own variables stay out of the child.
    env = {
      PATH: "/usr/bin:/bin",
      PYTHONPATH: SDK,
      PYTHONDONTWRITEBYTECODE: "1",
      AGENTBOX_URL: server.url,
      AGENTBOX_API_KEY: server.key,
      AGENTBOX_ADMIN_KEY: server.adminKey,
    };
  });

  after(async () => {
    await server?.dispose();
    await upstream?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("the SDK's end-to-end tests pass against the service", async () => {
    const { stderr } = await promisify(execFile)("/usr/bin/python3", ["-m", "unittest", "discover", "-s", path.join(SDK, "tests"), "-v"], {
      cwd: SDK,
      env,
    }).catch((err: { stderr?: string; stdout?: string }) => {
      assert.fail(`python SDK tests failed:\n${err.stderr ?? ""}${err.stdout ?? ""}`);
    });
    assert.match(stderr, /Ran \d+ tests/);
    assert.match(stderr, /\nOK\s*$/);
  });

  test("the README's agent loop runs: the model's code runs in a sandbox and its output goes back", async () => {
    const readme = fs.readFileSync(path.join(SDK, "README.md"), "utf8");
    const block = /<!-- agent-loop -->\n```python\n([\s\S]*?)\n```\n/.exec(readme)?.[1];
    assert.ok(block, "the README has the agent loop");
    upstream.script([
      { content: "Let me count.\n```python\nimport sympy\nprint(len(list(sympy.primerange(10000))))\n```" },
      { content: "There are 1229 primes below 10,000." },
    ]);
    const before = upstream.requests.length;
    const { stdout } = await promisify(execFile)("/usr/bin/python3", ["-c", block], { cwd: dir, env: { ...env, MODEL: "scripted" } });
    assert.equal(stdout.trim(), "There are 1229 primes below 10,000.");
    const second = upstream.requests[before + 1]?.body.messages.at(-1) as { content: string };
    assert.match(second.content, /stdout:\n1229\n/, "the sandbox's output went back to the model");
  });
});
