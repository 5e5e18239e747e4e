// End to end: E2B's official JavaScript SDKs (`e2b`, `@e2b/code-interpreter`), unchanged, against
// the real service with only E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY set: the control API,
// the code interpreter, files and commands, and the SDKs' own error types.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { Sandbox as CodeSandbox } from "@e2b/code-interpreter";
import {
  AuthenticationError,
  CommandExitError,
  FilesystemEventType,
  NotFoundError,
  RateLimitError,
  Sandbox,
  type SandboxOpts,
  Template,
  TimeoutError,
} from "e2b";
import { createKey } from "./helpers/leftovers.js";
import { e2bService, seenEvent } from "./helpers/e2b.js";
import { client } from "./helpers/server.js";

const e2b = e2bService();
const sandboxes = e2b.sandboxes;

async function codeSandbox(opts?: SandboxOpts): Promise<CodeSandbox> {
  const sbx = await CodeSandbox.create(opts);
  sandboxes.push(sbx.sandboxId);
  return sbx;
}

describe("control API", () => {
  test("create, getInfo with metadata, list by metadata, setTimeout, connect, kill", async () => {
    const tag = `t${Date.now()}`;
    const sbx = await Sandbox.create({ metadata: { tag, owner: "e2b-test" }, timeoutMs: 120_000 });
    sandboxes.push(sbx.sandboxId);
    const info = await sbx.getInfo();
    assert.equal(info.sandboxId, sbx.sandboxId);
    assert.deepEqual(info.metadata, { tag, owner: "e2b-test" });
    assert.equal(info.state, "running");
    assert.ok(info.endAt.getTime() > info.startedAt.getTime());

    const other = await Sandbox.create({ metadata: { tag: `${tag}-other` } });
    sandboxes.push(other.sandboxId);
    const found = await Sandbox.list({ query: { metadata: { tag } } }).nextItems();
    assert.deepEqual(
      found.map((s) => s.sandboxId),
      [sbx.sandboxId],
    );

    const [metrics] = await sbx.getMetrics();
    assert.ok(metrics && metrics.memTotal > 0 && metrics.memUsed >= 0 && metrics.cpuCount > 0, JSON.stringify(metrics));

    await sbx.setTimeout(600_000);
    const extended = await sbx.getInfo();
    assert.ok(extended.endAt.getTime() - Date.now() > 500_000, "the new timeout is in force");

    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal(again.sandboxId, sbx.sandboxId);
    assert.equal(await again.isRunning(), true);

    assert.equal(await Sandbox.kill(other.sandboxId), true);
    await sbx.kill();
    assert.equal(await sbx.isRunning(), false);
    assert.equal(await Sandbox.kill(sbx.sandboxId), false, "a killed sandbox is gone");
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId), NotFoundError);
    await assert.rejects(Sandbox.connect("nosuchsandbox"), NotFoundError);
  });

  test("the key in E2B's own format (e2b_ + hex of the key, as E2B's Python SDK requires) works too", async () => {
    const apiKey = `e2b_${Buffer.from(e2b.server.key).toString("hex")}`;
    const sbx = await CodeSandbox.create({ apiKey });
    sandboxes.push(sbx.sandboxId);
    assert.equal((await sbx.runCode("1 + 1")).text, "2");
    assert.equal(await sbx.files.exists("/home/user"), true);
    await sbx.kill();
    await assert.rejects(Sandbox.create({ apiKey: "e2b_0123456789abcdef" }), AuthenticationError);
  });

  test("what is not mapped says so (not a missing sandbox)", async () => {
    const sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
    await assert.rejects(sbx.updateNetwork({ allowOut: ["1.1.1.1"] }), (err: unknown) => {
      assert.ok(!(err instanceof NotFoundError), String(err));
      assert.match(String(err), /501.*not supported/);
      return true;
    });
    await sbx.kill();
  });

  test("a wrong API key is the SDK's AuthenticationError", async () => {
    await assert.rejects(Sandbox.create({ apiKey: "wrong_key_123" }), AuthenticationError);
    await assert.rejects(Sandbox.list({ apiKey: "wrong_key_123" }).nextItems(), AuthenticationError);
  });
});

describe("code interpreter", () => {
  let sbx: CodeSandbox;
  before(async () => {
    sbx = await codeSandbox();
  });

  test("runCode keeps state across runs and answers the last expression as text", async () => {
    await sbx.runCode("x = 40");
    const exec = await sbx.runCode("x + 2");
    assert.equal(exec.text, "42");
    assert.equal(exec.error, undefined);
    assert.ok(typeof exec.executionCount === "number" && exec.executionCount >= 2);
  });

  test("an exception is the execution's error: name, value, traceback", async () => {
    const exec = await sbx.runCode("print('before')\nraise ValueError('bad value')");
    assert.equal(exec.logs.stdout.join(""), "before\n");
    assert.equal(exec.error?.name, "ValueError");
    assert.equal(exec.error?.value, "bad value");
    assert.match(exec.error?.traceback ?? "", /ValueError/);
  });

  test("streaming callbacks see stdout, stderr and results as they come", async () => {
    const seen: string[] = [];
    const exec = await sbx.runCode("import sys\nprint('out')\nprint('err', file=sys.stderr)\n7 * 6", {
      onStdout: (m) => {
        seen.push(`stdout:${m.line}`);
      },
      onStderr: (m) => {
        seen.push(`stderr:${m.line}`);
      },
      onResult: (r) => {
        seen.push(`result:${r.text}`);
      },
    });
    // Output may come in more than one chunk; the result comes last.
    assert.equal(
      seen
        .filter((e) => e.startsWith("stdout:"))
        .map((e) => e.slice(7))
        .join(""),
      "out\n",
    );
    assert.equal(
      seen
        .filter((e) => e.startsWith("stderr:"))
        .map((e) => e.slice(7))
        .join(""),
      "err\n",
    );
    assert.equal(seen.at(-1), "result:42");
    assert.equal(exec.text, "42");
  });

  test("a matplotlib chart is a PNG result, a DataFrame an HTML one", async () => {
    const chart = await sbx.runCode("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()");
    const png = chart.results.find((r) => r.png);
    assert.ok(png?.png, `a PNG result (got ${JSON.stringify(chart.results.map((r) => r.formats()))}, error ${chart.error?.value})`);
    assert.equal(Buffer.from(png.png, "base64").subarray(1, 4).toString(), "PNG");

    const frame = await sbx.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})");
    assert.match(frame.results[0]?.html ?? "", /<table/);
    assert.equal(frame.results[0]?.isMainResult, true);
  });

  test("JavaScript runs, with its own state", async () => {
    await sbx.runCode("const greeting = 'hi'", { language: "js" });
    const exec = await sbx.runCode("greeting + ' there'", { language: "javascript" });
    assert.equal(exec.text, "'hi there'");
    const failed = await sbx.runCode("notDefined + 1", { language: "js" });
    assert.equal(failed.error?.name, "ReferenceError");
  });

  test("contexts: create, run in, list, restart, remove", async () => {
    const ctx = await sbx.createCodeContext({ cwd: "/tmp" });
    assert.equal(ctx.language, "python");
    assert.equal(ctx.cwd, "/tmp");
    const cwd = await sbx.runCode("import os\nos.getcwd()", { context: ctx });
    assert.equal(cwd.text, "'/tmp'");
    await sbx.runCode("y = 1", { context: ctx });
    const outside = await sbx.runCode("y");
    assert.equal(outside.error?.name, "NameError", "a context's globals are its own");
    assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
    await sbx.restartCodeContext(ctx);
    const after = await sbx.runCode("y", { context: ctx });
    assert.equal(after.error?.name, "NameError", "a restarted context starts afresh");
    await sbx.removeCodeContext(ctx);
    assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
    await assert.rejects(sbx.runCode("1", { context: ctx }), NotFoundError);
  });
});

describe("snapshots, forks and templates", () => {
  test("createSnapshot, listSnapshots, Sandbox.create from the snapshot, deleteSnapshot", async () => {
    const sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
    await sbx.files.write("app/state.json", '{"step": 1}');
    const snapshot = await sbx.createSnapshot({ name: "my-snapshot" });
    assert.equal(typeof snapshot.snapshotId, "string");
    assert.deepEqual(snapshot.names, [], "snapshots here are named by their id only");

    const mine = await sbx.listSnapshots().nextItems();
    assert.deepEqual(
      mine.map((s) => s.snapshotId),
      [snapshot.snapshotId],
    );
    const all = await Sandbox.listSnapshots().nextItems();
    assert.ok(all.some((s) => s.snapshotId === snapshot.snapshotId));
    // Natively it is the same snapshot.
    const native = await client({ url: e2b.server.url, key: e2b.server.key })<{ sandbox_id: string }>(
      "GET",
      `/v1/agents/snapshots/${snapshot.snapshotId}`,
    );
    assert.equal(native.body.sandbox_id, sbx.sandboxId);

    const copy = await Sandbox.create(snapshot.snapshotId);
    sandboxes.push(copy.sandboxId);
    assert.notEqual(copy.sandboxId, sbx.sandboxId);
    assert.equal(await copy.files.read("app/state.json"), '{"step": 1}');
    assert.equal((await copy.commands.run("cat app/state.json")).stdout, '{"step": 1}');

    assert.equal(await Sandbox.deleteSnapshot(snapshot.snapshotId), true);
    assert.equal(await Sandbox.deleteSnapshot(snapshot.snapshotId), false, "a deleted snapshot is gone");
    assert.deepEqual(await sbx.listSnapshots().nextItems(), []);
    await assert.rejects(Sandbox.createSnapshot("nosuchsandbox"), NotFoundError);
  });

  test("Sandbox.fork: copies with the sandbox's files, each a sandbox of its own", async () => {
    const sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
    await sbx.files.write("forked.txt", "from the parent");
    const forks = await Sandbox.fork(sbx.sandboxId, { count: 2, timeoutMs: 600_000 });
    assert.equal(forks.length, 2);
    for (const f of forks) {
      assert.ok(f instanceof Sandbox, String(f));
      sandboxes.push(f.sandboxId);
      assert.equal(await f.files.read("forked.txt"), "from the parent");
      assert.ok((await f.getInfo()).endAt.getTime() - Date.now() > 500_000, "the fork's timeout is the one asked for");
    }
    const [first] = forks;
    assert.ok(first instanceof Sandbox);
    await first.files.write("forked.txt", "changed in a fork");
    assert.equal(await sbx.files.read("forked.txt"), "from the parent", "a fork is a copy");
    await assert.rejects(Sandbox.fork("nosuchsandbox"), NotFoundError);
  });

  test("Template.exists: E2B's default names and this service's templates", async () => {
    assert.equal(await Template.exists("code-interpreter-v1"), true);
    assert.equal(await Template.exists("base"), true);
    assert.equal(await Template.exists("python-base-v1"), true);
    assert.equal(await Template.exists("no-such-template"), false);
  });
});

describe("files", () => {
  let sbx: Sandbox;
  before(async () => {
    sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
  });

  test("write, read, list, exists, getInfo", async () => {
    const info = await sbx.files.write("notes/hello.txt", "hello, e2b");
    assert.equal(info.path, "/home/user/notes/hello.txt");
    assert.equal(await sbx.files.read("/home/user/notes/hello.txt"), "hello, e2b");
    const bytes = await sbx.files.read("notes/hello.txt", { format: "bytes" });
    assert.equal(Buffer.from(bytes).toString(), "hello, e2b");
    const listed = await sbx.files.list("notes");
    assert.deepEqual(
      listed.map((e) => [e.name, e.type, e.size]),
      [["hello.txt", "file", 10]],
    );
    assert.equal(await sbx.files.exists("notes/hello.txt"), true);
    assert.equal(await sbx.files.exists("notes/nope.txt"), false);
    const stat = await sbx.files.getInfo("notes");
    assert.equal(stat.type, "dir");
    await assert.rejects(sbx.files.read("notes/nope.txt"), NotFoundError);
  });

  test("write several files at once, binary content intact", async () => {
    const data = new Uint8Array([0, 1, 2, 250, 255]);
    await sbx.files.write([
      { path: "multi/a.bin", data: data.buffer },
      { path: "multi/b.txt", data: "bee" },
    ]);
    assert.deepEqual([...(await sbx.files.read("multi/a.bin", { format: "bytes" }))], [...data]);
    assert.equal(await sbx.files.read("multi/b.txt"), "bee");
  });

  test("makeDir, rename, remove", async () => {
    assert.equal(await sbx.files.makeDir("work/deep"), true);
    assert.equal(await sbx.files.makeDir("work/deep"), false, "an existing directory is not made again");
    await sbx.files.write("work/deep/f.txt", "x");
    const moved = await sbx.files.rename("work/deep/f.txt", "work/g.txt");
    assert.equal(moved.path, "/home/user/work/g.txt");
    assert.equal(await sbx.files.exists("work/deep/f.txt"), false);
    assert.equal(await sbx.files.read("work/g.txt"), "x");
    await sbx.files.remove("work");
    assert.equal(await sbx.files.exists("work"), false);
    await assert.rejects(sbx.files.rename("work/none", "work/other"), NotFoundError);
  });

  test("watchDir: a file written, rewritten and removed after the watch starts is create, write, remove", async () => {
    await sbx.files.makeDir("watched");
    await sbx.files.write("watched/before.txt", "already here");
    const events: { name: string; type: string }[] = [];
    const seen = (name: string, type: string) => seenEvent(events, name, type);
    const handle = await sbx.files.watchDir("watched", (e) => {
      events.push({ name: e.name, type: e.type });
    });
    try {
      await sbx.files.write("watched/new.txt", "one");
      await seen("new.txt", FilesystemEventType.CREATE);
      await sbx.files.write("watched/new.txt", "one and two");
      await seen("new.txt", FilesystemEventType.WRITE);
      await sbx.files.remove("watched/new.txt");
      await seen("new.txt", FilesystemEventType.REMOVE);
      assert.ok(!events.some((e) => e.name === "before.txt"), "what was there before the watch is no event");
    } finally {
      await handle.stop();
    }
    await assert.rejects(
      sbx.files.watchDir("watched/missing", () => {}),
      NotFoundError,
    );
  });

  test("watchDir recursive: changes in subdirectories, named by their path under the watched one", async () => {
    await sbx.files.makeDir("tree/a/b");
    await sbx.files.write("tree/a/old.txt", "before the watch");
    const events: { name: string; type: string }[] = [];
    const seen = (name: string, type: string) => seenEvent(events, name, type);
    const handle = await sbx.files.watchDir(
      "tree",
      (e) => {
        events.push({ name: e.name, type: e.type });
      },
      { recursive: true },
    );
    try {
      await sbx.files.write("tree/a/b/deep.txt", "one");
      await seen("a/b/deep.txt", FilesystemEventType.CREATE);
      await sbx.files.write("tree/a/b/deep.txt", "one and two");
      await seen("a/b/deep.txt", FilesystemEventType.WRITE);
      await sbx.files.makeDir("tree/a/c");
      await seen("a/c", FilesystemEventType.CREATE);
      await sbx.files.write("tree/a/c/in-new-dir.txt", "x");
      await seen("a/c/in-new-dir.txt", FilesystemEventType.CREATE);
      await sbx.files.remove("tree/a/b");
      await seen("a/b/deep.txt", FilesystemEventType.REMOVE);
      await seen("a/b", FilesystemEventType.REMOVE);
      assert.ok(!events.some((e) => e.name.endsWith("old.txt")), "what was there before the watch is no event");
      assert.ok(
        !events.some((e) => e.name === "a" && e.type === FilesystemEventType.WRITE),
        "a directory's new entries are their own events",
      );
    } finally {
      await handle.stop();
    }
  });

  test("watchDir: at most AGENTBOX_E2B_MAX_WATCHERS (8) watches per sandbox; a stopped one frees its place", async () => {
    const handles = [];
    for (let i = 0; i < 8; i++) handles.push(await sbx.files.watchDir("/home/user", () => {}));
    try {
      await assert.rejects(
        sbx.files.watchDir("/home/user", () => {}),
        RateLimitError,
      );
      await handles.pop()?.stop();
      let again: Awaited<ReturnType<typeof sbx.files.watchDir>> | undefined;
      for (let i = 0; i < 50 && !again; i++) {
        again = await sbx.files.watchDir("/home/user", () => {}).catch(() => undefined);
        if (!again) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(again, "a place is free again once a watch stops");
      handles.push(again);
    } finally {
      for (const h of handles) await h.stop();
    }
  });
});

describe("commands", () => {
  let sbx: Sandbox;
  before(async () => {
    sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
  });

  test("run: output, exit code, environment, working directory", async () => {
    const r = await sbx.commands.run("echo $GREETING from $(pwd)", { envs: { GREETING: "hi" }, cwd: "/tmp" });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "hi from /tmp\n");
    assert.equal(r.stderr, "");
  });

  test("a non-zero exit is CommandExitError with the exit code and output", async () => {
    await assert.rejects(sbx.commands.run("echo oops >&2; exit 3"), (err: unknown) => {
      assert.ok(err instanceof CommandExitError);
      assert.equal(err.exitCode, 3);
      assert.equal(err.stderr, "oops\n");
      return true;
    });
  });

  test("streaming callbacks see each line as it comes", async () => {
    const lines: string[] = [];
    await sbx.commands.run("for i in 1 2 3; do echo line$i; sleep 0.1; done; echo done >&2", {
      onStdout: (d) => {
        lines.push(`out:${d}`);
      },
      onStderr: (d) => {
        lines.push(`err:${d}`);
      },
    });
    const of = (prefix: string) =>
      lines
        .filter((l) => l.startsWith(prefix))
        .map((l) => l.slice(prefix.length))
        .join("");
    assert.equal(of("out:"), "line1\nline2\nline3\n");
    assert.equal(of("err:"), "done\n");
    assert.ok(lines.filter((l) => l.startsWith("out:")).length >= 3, "each line came as it was printed");
  });

  test("background: runs on, listed, takes stdin, is killed", async () => {
    const handle = await sbx.commands.run("read line; echo got $line; sleep 600", { background: true, stdin: true });
    assert.ok(handle.pid > 0);
    const listed = await sbx.commands.list();
    assert.ok(listed.some((p) => p.pid === handle.pid));
    await sbx.commands.sendStdin(handle.pid, "hello\n");
    for (let i = 0; i < 100 && !handle.stdout.includes("got hello"); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(handle.stdout, "got hello\n");
    assert.equal(await handle.kill(), true);
    await assert.rejects(handle.wait(), CommandExitError);
    assert.ok(!(await sbx.commands.list()).some((p) => p.pid === handle.pid));
    assert.equal(await sbx.commands.kill(999_999), false, "an unknown pid is not killed");
  });

  test("a command past its timeout is the SDK's TimeoutError", async () => {
    await assert.rejects(sbx.commands.run("sleep 30", { timeoutMs: 1000 }), TimeoutError);
  });

  test("a sandbox that is gone is NotFoundError for commands", async () => {
    const gone = await Sandbox.create();
    await gone.kill();
    await assert.rejects(gone.commands.run("true"), (err: unknown) => err instanceof NotFoundError || err instanceof TimeoutError);
  });
});

describe("pty", () => {
  let sbx: Sandbox;
  before(async () => {
    sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
  });

  /** A terminal whose output collects in `screen()`; `until` waits for the output to match. */
  async function terminal(size: { rows: number; cols: number }) {
    let text = "";
    const decoder = new TextDecoder();
    const handle = await sbx.pty.create({
      ...size,
      timeoutMs: 0,
      onData: (data) => {
        text += decoder.decode(data, { stream: true });
      },
    });
    const type = (keys: string) => sbx.pty.sendInput(handle.pid, new TextEncoder().encode(keys));
    const until = async (re: RegExp) => {
      for (let i = 0; i < 200 && !re.test(text); i++) await new Promise((r) => setTimeout(r, 50));
      assert.match(text, re);
    };
    return { handle, type, until, screen: () => text };
  }

  test("create runs an interactive shell on a terminal of the asked size; input, resize, exit code", async () => {
    const t = await terminal({ rows: 24, cols: 80 });
    assert.ok(t.handle.pid > 0);
    await t.type("tty; stty size; echo TERM=$TERM; [ -t 0 ] && echo stdin-is-a-tty\n");
    await t.until(/^\/dev\/pts\/\d+\r?$/m);
    await t.until(/^24 80\r?$/m);
    await t.until(/^TERM=xterm-256color\r?$/m);
    await t.until(/^stdin-is-a-tty\r?$/m);
    const listed = await sbx.commands.list();
    assert.deepEqual(listed.find((p) => p.pid === t.handle.pid)?.cmd, "/bin/bash", "listed as the shell it runs");

    await sbx.pty.resize(t.handle.pid, { rows: 40, cols: 120 });
    await t.type("stty size\n");
    await t.until(/^40 120\r?$/m);
    // A program on the terminal is told of a resize (SIGWINCH), as under a real terminal.
    await t.type("trap 'echo winched' WINCH\n");
    await t.until(/trap 'echo winched' WINCH/);
    await sbx.pty.resize(t.handle.pid, { rows: 30, cols: 100 });
    await t.type("true\n");
    await t.until(/winched\r\n/);

    // Ctrl-C reaches the foreground program through the terminal, not the shell.
    await t.type("sleep 600\n");
    await new Promise((r) => setTimeout(r, 300));
    await t.type("\x03echo after-interrupt\n");
    await t.until(/^after-interrupt\r?$/m);

    await t.type("exit 7\n");
    await assert.rejects(t.handle.wait(), (err: unknown) => {
      assert.ok(err instanceof CommandExitError, String(err));
      assert.equal(err.exitCode, 7);
      return true;
    });
  });

  test("kill ends a terminal; connect follows one again", async () => {
    const t = await terminal({ rows: 10, cols: 40 });
    await t.type("echo first\n");
    await t.until(/^first\r?$/m);
    await t.handle.disconnect();
    let again = "";
    const followed = await sbx.pty.connect(t.handle.pid, {
      timeoutMs: 0,
      onData: (d) => {
        again += new TextDecoder().decode(d);
      },
    });
    await sbx.pty.sendInput(t.handle.pid, new TextEncoder().encode("echo second\n"));
    for (let i = 0; i < 200 && !/^second\r?$/m.test(again); i++) await new Promise((r) => setTimeout(r, 50));
    assert.match(again, /^second\r?$/m);
    assert.equal(await sbx.pty.kill(t.handle.pid), true);
    await assert.rejects(followed.wait(), (err: unknown) => err instanceof CommandExitError && err.exitCode === 137);
    assert.ok(!(await sbx.commands.list()).some((p) => p.pid === t.handle.pid), "no longer listed");
  });
});

describe("pause and resume", () => {
  test("pause keeps the kernel's state; connect resumes the sandbox", async () => {
    const sbx = await codeSandbox();
    await sbx.runCode("kept = 'still here'");
    assert.equal(await sbx.pause(), true);
    assert.equal((await sbx.getInfo()).state, "paused");
    assert.equal(await sbx.pause(), false, "a paused sandbox is not paused again");
    const listed = await Sandbox.list({ query: { state: ["paused"] } }).nextItems();
    assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId));
    const resumed = await CodeSandbox.connect(sbx.sandboxId);
    assert.equal((await resumed.getInfo()).state, "running");
    assert.equal((await resumed.runCode("kept")).text, "'still here'");
  });
});

describe("tenant isolation", () => {
  test("another tenant's key reaches none of a sandbox's E2B routes", async () => {
    const sbx = await codeSandbox();
    await sbx.runCode("secret = 'mine'");
    const other = createKey(e2b.server.dataDir, "e2b-other-tenant").key;
    await assert.rejects(Sandbox.connect(sbx.sandboxId, { apiKey: other }), NotFoundError);
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId, { apiKey: other }), NotFoundError);
    assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: other }), false);
    const inSandbox = (path: string, body: string, type = "application/json") =>
      fetch(`${e2b.server.url}/e2b${path}`, {
        method: "POST",
        headers: { "content-type": type, "x-access-token": other, "e2b-sandbox-id": sbx.sandboxId, "e2b-sandbox-port": "49999" },
        body,
      });
    const run = await inSandbox("/execute", JSON.stringify({ code: "print(secret)" }));
    assert.equal(run.status, 404);
    assert.doesNotMatch(await run.text(), /mine/);
    const stat = await inSandbox("/filesystem.Filesystem/Stat", JSON.stringify({ path: "/home/user" }));
    assert.equal(stat.status, 404);
    assert.equal(((await stat.json()) as { code: string }).code, "not_found");
    assert.equal((await sbx.runCode("secret")).text, "'mine'", "the owner's sandbox is untouched");
  });
});

/** The enveloped JSON messages of a Connect streaming response: [flags, message]. */
function envelopes(buf: Buffer): [number, Record<string, unknown>][] {
  const out: [number, Record<string, unknown>][] = [];
  for (let off = 0; off + 5 <= buf.length; ) {
    const len = buf.readUInt32BE(off + 1);
    out.push([buf.readUInt8(off), JSON.parse(buf.subarray(off + 5, off + 5 + len).toString())]);
    off += 5 + len;
  }
  return out;
}

function envelope(message: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

describe("Connect wire format", () => {
  test("a quiet process stream gets keepalives at the asked interval, then its end", async () => {
    const sbx = await Sandbox.create();
    sandboxes.push(sbx.sandboxId);
    const res = await fetch(`${e2b.server.url}/e2b/process.Process/Start`, {
      method: "POST",
      headers: {
        "content-type": "application/connect+json",
        "connect-protocol-version": "1",
        "keepalive-ping-interval": "1",
        "x-access-token": e2b.server.key,
        "e2b-sandbox-id": sbx.sandboxId,
      },
      body: new Uint8Array(envelope({ process: { cmd: "/bin/bash", args: ["-c", "sleep 2.5; echo hi"] } })),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/connect+json");
    const msgs = envelopes(Buffer.from(await res.arrayBuffer()));
    const kinds = msgs.map(([flags, m]) => (flags === 2 ? "eos" : Object.keys((m.event ?? {}) as object)[0]));
    assert.equal(kinds[0], "start");
    assert.ok(kinds.filter((k) => k === "keepalive").length >= 1, kinds.join(","));
    assert.deepEqual(kinds.slice(-3), ["data", "end", "eos"]);
    const data = msgs.find(([, m]) => (m.event as { data?: unknown })?.data)?.[1].event as { data: { stdout: string } };
    assert.equal(Buffer.from(data.data.stdout, "base64").toString(), "hi\n");
    assert.deepEqual(msgs.at(-1), [2, {}]);
  });
});

describe("key revocation", () => {
  test("revoking the key ends a command stream of the E2B SDK at once", async () => {
    const admin = client({ url: e2b.server.url, key: e2b.server.adminKey });
    const made = await admin<{ key: string; id: string }>("POST", "/v1/admin/keys", { name: "e2b-doomed", tenant_id: "e2b-revoke" });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const sbx = await Sandbox.create({ apiKey: made.body.key });
    sandboxes.push(sbx.sandboxId);
    const handle = await sbx.commands.run("echo started; sleep 600", { background: true, timeoutMs: 0 });
    for (let i = 0; i < 100 && !handle.stdout.includes("started"); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(handle.stdout, "started\n");
    assert.equal((await admin("DELETE", `/v1/admin/keys/${made.body.id}`)).status, 200);
    // Generous: the revocation takes well under a second; the bound only keeps a regression from hanging.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve("still open 15 s after the revocation"), 15_000);
    });
    const ended = handle.wait().then(
      () => "exited",
      () => "ended",
    );
    assert.equal(await Promise.race([ended, late]).finally(() => clearTimeout(timer)), "ended");
    await assert.rejects(sbx.commands.run("true"), AuthenticationError);
  });
});

describe("execution slots", () => {
  test("a command holds a slot while its client follows it: a second one over the key's limit is refused, as natively", async () => {
    const admin = client({ url: e2b.server.url, key: e2b.server.adminKey });
    const made = await admin<{ key: string }>("POST", "/v1/admin/keys", {
      name: "e2b-one-run",
      tenant_id: "e2b-slots",
      max_concurrent_runs: 1,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const apiKey = made.body.key;
    const sbx = await Sandbox.create({ apiKey });
    sandboxes.push(sbx.sandboxId);
    assert.equal((await sbx.commands.run("echo one")).stdout, "one\n", "one at a time is fine");

    let started = false;
    const first = sbx.commands.run("echo started; sleep 600", {
      timeoutMs: 0,
      onStdout: () => {
        started = true;
      },
    });
    const outcome = first.then(
      () => "exited",
      (err: Error) => err.constructor.name,
    );
    for (let i = 0; i < 150 && !started; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(started, "the first command runs");

    await assert.rejects(sbx.commands.run("echo two"), RateLimitError);
    // On the wire: resource_exhausted with the Retry-After of the native 429, before any process starts.
    const res = await fetch(`${e2b.server.url}/e2b/process.Process/Start`, {
      method: "POST",
      headers: { "content-type": "application/connect+json", "x-access-token": apiKey, "e2b-sandbox-id": sbx.sandboxId },
      body: new Uint8Array(envelope({ process: { cmd: "/bin/bash", args: ["-c", "touch /home/user/ran"] } })),
    });
    const msgs = envelopes(Buffer.from(await res.arrayBuffer()));
    assert.equal(msgs.length, 1, JSON.stringify(msgs));
    const [flags, end] = msgs[0] as [number, { error?: { code: string }; metadata?: Record<string, string[]> }];
    assert.equal(flags, 2);
    assert.equal(end.error?.code, "resource_exhausted");
    assert.deepEqual(end.metadata?.["retry-after"], ["1"]);

    const running = await sbx.commands.list();
    assert.equal(running.length, 1, "the refused commands never started");
    assert.equal(await sbx.commands.kill(running[0]?.pid ?? 0), true);
    assert.equal(await outcome, "CommandExitError", "the killed command ends");
    assert.equal((await sbx.commands.run("echo three")).stdout, "three\n", "the slot is given back when the command ends");
    assert.equal(await sbx.files.exists("/home/user/ran"), false);
  });

  test("a command whose client disconnects gives its slot back and runs on, as a native background process", async () => {
    const admin = client({ url: e2b.server.url, key: e2b.server.adminKey });
    const made = await admin<{ key: string }>("POST", "/v1/admin/keys", {
      name: "e2b-one-run-2",
      tenant_id: "e2b-slots",
      max_concurrent_runs: 1,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const sbx = await Sandbox.create({ apiKey: made.body.key });
    sandboxes.push(sbx.sandboxId);
    const handle = await sbx.commands.run("sleep 600", { background: true, timeoutMs: 0 });
    await assert.rejects(sbx.commands.run("true"), RateLimitError, "followed, it holds the key's one slot");
    await handle.disconnect();
    let ran: string | undefined;
    for (let i = 0; i < 50 && ran === undefined; i++) {
      ran = await sbx.commands.run("echo free").then(
        (r) => r.stdout,
        () => undefined,
      );
      if (ran === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(ran, "free\n", "the slot is free once the client stopped following");
    assert.deepEqual(
      (await sbx.commands.list()).map((p) => p.pid),
      [handle.pid],
      "the process runs on",
    );
  });
});
