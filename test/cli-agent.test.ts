// The CLI's everyday commands against the real service, as a person types them: sandbox
// create/list/get/extend/kill, run (a file and standard input; the exit status follows the run),
// exec (the command's exit status), cp both ways (bytes identical), shell (state across lines,
// blocks), usage, and usage errors.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { cli } from "./helpers/leftovers.js";
import { startServer, type TestServer } from "./helpers/server.js";

describe("agentbox CLI", () => {
  let server: TestServer;
  let dir: string;
  let run: (args: string[], input?: string | Buffer, env?: Record<string, string>) => ReturnType<typeof cli>;

  before(async () => {
    server = await startServer();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-cli-"));
    run = (args, input, env = {}) => cli(server.dataDir, args, { AGENTBOX_URL: server.url, AGENTBOX_API_KEY: server.key, ...env }, input);
  });

  after(async () => {
    await server?.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("sandbox create, list, get, extend, kill", () => {
    const created = run(["sandbox", "create", "--metadata", "owner=cli-test", "--env", "GREETING=hi", "--json"]);
    assert.equal(created.status, 0, created.stderr);
    const sbx = JSON.parse(created.stdout) as { sandbox_id: string; metadata: Record<string, string>; status: string };
    assert.deepEqual(sbx.metadata, { owner: "cli-test" });
    const list = run(["sandbox", "list"]);
    assert.equal(list.status, 0, list.stderr);
    assert.match(list.stdout, /^SANDBOX\s+STATUS/);
    assert.ok(list.stdout.includes(sbx.sandbox_id));
    const got = JSON.parse(run(["sandbox", "get", sbx.sandbox_id, "--json"]).stdout) as { status: string };
    assert.equal(got.status, "running");
    const env = run(["exec", "--sandbox", sbx.sandbox_id, "--", "sh", "-c", "echo $GREETING"]);
    assert.equal(env.stdout, "hi\n");
    const extended = run(["sandbox", "extend", sbx.sandbox_id, "600", "--json"]);
    assert.equal((JSON.parse(extended.stdout) as { timeout: number }).timeout, 600);
    assert.equal(run(["sandbox", "kill", sbx.sandbox_id]).status, 0);
    assert.notEqual((JSON.parse(run(["sandbox", "get", sbx.sandbox_id, "--json"]).stdout) as { status: string }).status, "running");
  });

  test("run: streams output, and the exit status says whether the code failed", () => {
    const file = path.join(dir, "ok.py");
    fs.writeFileSync(file, "print('from a file')\n6 * 7\n");
    const ok = run(["run", file]);
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(ok.stdout, "from a file\n42\n");
    const failed = run(["run", "-l", "python", "-"], "print('before')\n1/0\n");
    assert.equal(failed.status, 1);
    assert.equal(failed.stdout, "before\n");
    assert.match(failed.stderr, /ZeroDivisionError/);
    const js = run(["run", "-l", "javascript", "-", "--json"], "console.log(1 + 1)");
    assert.equal(js.status, 0, js.stderr);
    assert.equal((JSON.parse(js.stdout.slice(js.stdout.indexOf("{"))) as { logs: { stdout: string } }).logs.stdout, "2\n");
  });

  test("relative paths are the caller's directory under npm run (INIT_CWD), not the package's", () => {
    // The helper runs the CLI in the repository, as `npm run cli` does; npm says where it was typed in INIT_CWD.
    fs.writeFileSync(path.join(dir, "rel.py"), "print('relative ok')\n");
    const ran = run(["run", "rel.py"], undefined, { INIT_CWD: dir });
    assert.equal(ran.status, 0, ran.stderr);
    assert.equal(ran.stdout, "relative ok\n");
    const sbx = JSON.parse(run(["sandbox", "create", "--json"]).stdout) as { sandbox_id: string };
    const down = run(["cp", `${sbx.sandbox_id}:/etc/hostname`, "copied.txt"], undefined, { INIT_CWD: dir });
    assert.equal(down.status, 0, down.stderr);
    assert.ok(fs.existsSync(path.join(dir, "copied.txt")), "the download landed in the caller's directory");
    run(["sandbox", "kill", sbx.sandbox_id]);
  });

  test("--help, -h and help print the usage and exit 0; a command's own -h after -- is its own", () => {
    for (const args of [["--help"], ["-h"], ["help"], ["sandbox", "list", "--help"], ["run", "-h"]]) {
      const r = run(args);
      assert.equal(r.status, 0, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stdout, /^usage:/, args.join(" "));
      assert.match(r.stdout, /agentbox exec/);
    }
    const own = run(["exec", "--", "sh", "-c", 'echo "$1"', "sh", "-h"]);
    assert.equal(own.status, 0, own.stderr);
    assert.equal(own.stdout, "-h\n");
  });

  test("exec: the command's output and exit status", () => {
    const r = run(["exec", "--", "sh", "-c", "echo out; echo err >&2; exit 3"]);
    assert.equal(r.status, 3);
    assert.equal(r.stdout, "out\n");
    assert.equal(r.stderr, "err\n");
  });

  test("cp: a local file into a sandbox and back, byte for byte", () => {
    const sbx = JSON.parse(run(["sandbox", "create", "--json"]).stdout) as { sandbox_id: string };
    const local = path.join(dir, "data.bin");
    const bytes = crypto.randomBytes(3_000_000);
    fs.writeFileSync(local, bytes);
    const up = run(["cp", local, `${sbx.sandbox_id}:/home/user/in/data.bin`]);
    assert.equal(up.status, 0, up.stderr);
    const size = run(["exec", "--sandbox", sbx.sandbox_id, "--", "stat", "-c", "%s", "/home/user/in/data.bin"]);
    assert.equal(size.stdout.trim(), String(bytes.length));
    const back = path.join(dir, "back.bin");
    const down = run(["cp", `${sbx.sandbox_id}:/home/user/in/data.bin`, back]);
    assert.equal(down.status, 0, down.stderr);
    assert.ok(fs.readFileSync(back).equals(bytes));
    const missing = run(["cp", `${sbx.sandbox_id}:/home/user/nope.bin`, path.join(dir, "nope.bin")]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /not found/);
    assert.equal(fs.readdirSync(dir).filter((f) => f.includes(".part-")).length, 0, "a failed download leaves no partial file");
    run(["sandbox", "kill", sbx.sandbox_id]);
  });

  test("shell: lines share one kernel, and a block ends at an empty line", () => {
    const r = run(["shell"], "x = 5\ndef f(y):\n    return y * x\n\nprint(f(3))\nexit\n");
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, "15\n");
  });

  test("usage and bad usage", () => {
    const usage = run(["usage", "--json"]);
    assert.equal(usage.status, 0, usage.stderr);
    assert.equal(typeof (JSON.parse(usage.stdout) as { total_tokens: number }).total_tokens, "number");
    const noKey = cli(server.dataDir, ["sandbox", "list"], { AGENTBOX_URL: server.url });
    assert.equal(noKey.status, 2);
    assert.match(noKey.stderr, /AGENTBOX_API_KEY/);
    const unknown = run(["sandbox", "get", "no-such-sandbox"]);
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /not found/i);
    assert.equal(run(["sandbox", "extend", "x", "soon"]).status, 2);
    assert.equal(run(["cp", "a", "b"]).status, 2);
  });
});
