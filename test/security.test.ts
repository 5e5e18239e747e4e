// Hostile code against the real service: every attack runs as real code in a real sandbox through
// POST /v1/agents/sandboxes/{id}/code/run, and each test checks that it was contained (limits hit
// inside the sandbox, nothing of the host visible or reachable) and that the sandbox, or a fresh
// one, still works afterwards. At the end: the service is healthy, and no process, mount or cgroup
// of any sandbox this file created is left on the host.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { client, startServer, type TestServer } from "./helpers/server.js";
import { createSandbox } from "./helpers/api.js";
import { entryArgs } from "./helpers/entry.js";

interface RunResult {
  logs: { stdout: string; stderr: string };
  error: string | null;
  execution_time_ms: number;
  /** Wall time of the HTTP request, measured here. */
  ms: number;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MEMORY_MB = 256;
const PIDS = 64;
const DISK_MB = 64;
const TMP_MB = 32;
const OUTPUT_CAP = 1024 * 1024;
const TRUNCATED = `[output truncated at ${OUTPUT_CAP} bytes]`;
/** Set in the service's environment only; no sandbox may ever see it. Sent to sandboxes in two halves. */
const CANARY_HEAD = "canary_";
const CANARY_TAIL = crypto.randomBytes(10).toString("hex");
const CANARY = CANARY_HEAD + CANARY_TAIL;

let server: TestServer;
let call: ReturnType<typeof client>;
/** Every sandbox this file created, with its host uid, for the final leftover check. */
const created = new Map<string, number>();

before(async () => {
  server = await startServer({
    env: {
      AGENTBOX_SANDBOX_MEMORY_MB: String(MEMORY_MB),
      AGENTBOX_SANDBOX_PIDS: String(PIDS),
      AGENTBOX_SANDBOX_DISK_MB: String(DISK_MB),
      AGENTBOX_SANDBOX_TMP_MB: String(TMP_MB),
      AGENTBOX_OUTPUT_LIMIT_BYTES: String(OUTPUT_CAP),
      AGENTBOX_TEST_CANARY: CANARY,
    },
  });
  call = client(server);
});

after(async () => {
  await server?.dispose();
});

async function newSandbox(): Promise<string> {
  const id = await createSandbox(call);
  created.set(id, fs.statSync(path.join(server.workspaceDir, id)).uid);
  return id;
}

async function run(id: string, language: string, code: string, timeout?: number): Promise<RunResult> {
  const started = Date.now();
  const res = await call<Omit<RunResult, "ms">>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
    code,
    language,
    ...(timeout === undefined ? {} : { timeout }),
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const r = { ...res.body, ms: Date.now() - started };
  if (r.error !== null) assert.ok(!r.error.includes("\n"), `error is one line: ${r.error}`);
  return r;
}

/** Runs code that must succeed; returns its stdout. */
async function ok(id: string, language: string, code: string, timeout?: number): Promise<string> {
  const r = await run(id, language, code, timeout);
  assert.equal(r.error, null, `${language} run failed: ${r.error}\n${r.logs.stderr}`);
  return r.logs.stdout;
}

function show(r: RunResult): string {
  return JSON.stringify({ error: r.error, ms: r.ms, stdout: r.logs.stdout.slice(-500), stderr: r.logs.stderr.slice(-500) });
}

// ---- what the host can see of a sandbox (read-only looks at /proc, /sys/fs/cgroup and the mount table) ----

/** The sandbox's cgroup directories: `.../agentbox/.../<id>` under any controller's hierarchy. */
function cgroupDirs(id: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const full = path.join(dir, e.name);
      if (e.name === id && full.includes("/agentbox/")) found.push(full);
      else if (depth < 8) walk(full, depth + 1);
    }
  };
  walk("/sys/fs/cgroup", 0);
  return found;
}

function pidsFile(id: string, file: "pids.current" | "pids.events"): string {
  const dir = cgroupDirs(id).find((d) => fs.existsSync(path.join(d, file)));
  assert.ok(dir, `no ${file} for ${id}`);
  return fs.readFileSync(path.join(dir, file), "utf8");
}

function pidsCurrent(id: string): number {
  return Number(pidsFile(id, "pids.current"));
}

/** How many times a fork in the sandbox failed because its group was at pids.max. */
function pidsMaxHits(id: string): number {
  return Number(/^max (\d+)/m.exec(pidsFile(id, "pids.events"))?.[1] ?? Number.NaN);
}

/** Host pids of processes owned by `uid` (any of real, effective, saved, fs uid); zombies only if asked. */
function processesOfUid(uid: number, zombies = true): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let status: string;
    try {
      status = fs.readFileSync(`/proc/${name}/status`, "utf8");
    } catch {
      continue;
    }
    const uids = /^Uid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/).map(Number) ?? [];
    if (uids.includes(uid) && (zombies || !/^State:\s+Z/m.test(status))) pids.push(Number(name));
  }
  return pids;
}

function cgroupOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cgroup`, "utf8");
  } catch {
    return "";
  }
}

/**
 * Everything of the sandbox still on the host. Sandbox uids are per service, so on a shared machine
 * another service's sandbox may hold the same uid: a process counts when it has the uid and either
 * sits in this sandbox's cgroup or is one of the pids the sandbox had. The sandbox's pid 1 is
 * reparented to the host's init when the sandbox is killed and stays a zombie until init reaps it
 * (up to ~2 s on some machines): `zombies: false` tolerates that, the final check does not.
 */
function leftovers(id: string, uid: number, pidsBefore: number[] = [], zombies = true): string[] {
  const out: string[] = [];
  for (const pid of processesOfUid(uid, zombies)) {
    if (cgroupOf(pid).includes(id) || pidsBefore.includes(pid)) out.push(`process ${pid} (uid ${uid})`);
  }
  for (const line of fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    if (line.includes(id)) out.push(`mount: ${line}`);
  }
  for (const dir of cgroupDirs(id)) out.push(`cgroup ${dir}`);
  if (fs.existsSync(path.join(server.workspaceDir, id))) out.push(`workspace dir ${path.join(server.workspaceDir, id)}`);
  return out;
}

/** The host pids of the sandbox's processes now (from its cgroup). */
function sandboxPids(id: string): number[] {
  const pids = new Set<number>();
  for (const dir of cgroupDirs(id)) {
    let procs = "";
    try {
      procs = fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8");
    } catch {
      // the group the sandbox started in, removed as it moved into its tenant's group
    }
    for (const line of procs.split("\n")) if (line) pids.add(Number(line));
  }
  return [...pids];
}

async function waitForNoLeftovers(id: string, uid: number, pidsBefore: number[] = [], zombies = true): Promise<void> {
  let left: string[] = [];
  for (let i = 0; i < 60; i++) {
    left = leftovers(id, uid, pidsBefore, zombies);
    if (left.length === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(left, [], `left behind by sandbox ${id}`);
}

async function kill(id: string): Promise<void> {
  const uid = created.get(id) as number;
  const pidsBefore = sandboxPids(id);
  const res = await call("DELETE", `/v1/agents/sandboxes/${id}`);
  assert.ok(res.status === 200 || res.status === 204, `DELETE ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  await waitForNoLeftovers(id, uid, pidsBefore, false);
  finalPids.set(id, pidsBefore);
}

/** Pids each killed sandbox had, for the final check (which also waits for their zombies). */
const finalPids = new Map<string, number[]>();

const countProcs = "import os\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]))";

describe("hostile code is contained", () => {
  test("fork bombs hit the process cap, end with the run's timeout, and the sandbox keeps working", async () => {
    const id = await newSandbox();
    await ok(id, "python", "x = 41");

    // python: fork until EAGAIN, children sleeping; the timeout interrupts the run and its children.
    // (3 s: on a busy host every fork waits for other cgroup migrations, so 60 forks can take a while.)
    const py = await run(
      id,
      "python",
      [
        "import os, time",
        "n = 0",
        "while True:",
        "    try:",
        "        pid = os.fork()",
        "    except OSError as e:",
        "        print(n, 'children, then', e, flush=True)",
        "        break",
        "    if pid == 0:",
        "        time.sleep(60)",
        "        os._exit(0)",
        "    n += 1",
        "while True:",
        "    time.sleep(1)",
      ].join("\n"),
      3,
    );
    assert.match(py.logs.stdout, /children, then \[Errno 11\] Resource temporarily unavailable/, show(py));
    assert.match(py.error ?? "", /^Execution timed out after 3 seconds; the run was interrupted and the kernel's state was kept/, show(py));
    assert.ok(py.ms < 8000, show(py));
    assert.equal(await ok(id, "python", "print(x + 1)"), "42\n", "the python kernel kept its state");
    const afterPy = Number(await ok(id, "python", countProcs));
    assert.ok(afterPy <= 6, `processes left in the sandbox after the python fork loop: ${afterPy}`);

    // bash: the classic bomb, kept in the foreground by a sleep so the run's timeout ends it (and
    // the bash kernel's whole process group with it).
    const bomb = await run(id, "bash", ":(){ :|:& };:; sleep 30", 1);
    assert.match(bomb.logs.stderr, /fork: (retry: )?Resource temporarily unavailable/, show(bomb));
    assert.match(bomb.error ?? "", /^Execution timed out after 1 second; the kernel was restarted/, show(bomb));
    assert.ok(bomb.ms < 8000, show(bomb));
    assert.equal(await ok(id, "bash", "echo alive"), "alive\n");
    assert.equal(await ok(id, "python", "print(x + 1)"), "42\n", "a bash bomb does not cost the python kernel its state");
    assert.ok(pidsCurrent(id) <= 6, `tasks in the sandbox's cgroup after the bash bomb: ${pidsCurrent(id)}`);

    // bash: the bare bomb returns at once and keeps forking in the background; the sandbox notices
    // that it is stuck at its cap, kills the leftovers, and runs code again.
    const hitsBefore = pidsMaxHits(id);
    await run(id, "bash", ":(){ :|:& };:", 2);
    for (let i = 0; i < 60 && pidsMaxHits(id) === hitsBefore; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(pidsMaxHits(id) > hitsBefore, "the bomb's forks fail at pids.max");
    // The python kernel needs no new process to run; it watches the sandbox recover.
    const started = Date.now();
    let procs = Number.POSITIVE_INFINITY;
    let notices = "";
    while (procs > 8 && Date.now() - started < 15_000) {
      const r = await run(id, "python", `${countProcs}\nprint(x + 1)`);
      assert.match(r.logs.stdout, /\n42\n$/, show(r));
      procs = Number(r.logs.stdout.split("\n")[0]);
      notices += r.logs.stderr;
      if (procs > 8) await new Promise((res) => setTimeout(res, 200));
    }
    assert.ok(procs <= 8, `processes 15 s after the bare bomb: ${procs}`);
    const alive = await run(id, "bash", "echo alive; ls /proc | grep -c '^[0-9]'", 20);
    // The notice goes with the first run that starts after the leftovers were killed: when that
    // happened while the last python run above was under way, it is this one.
    notices += alive.logs.stderr;
    assert.match(notices, new RegExp(`^\\[sandbox\\] The sandbox was at its limit of ${PIDS} processes and threads: `, "m"));
    assert.equal(alive.error, null, show(alive));
    assert.match(alive.logs.stdout, /^alive\n\d+\n$/, show(alive));
    assert.ok(pidsCurrent(id) <= 8, `tasks in the sandbox's cgroup after the bare bomb: ${pidsCurrent(id)}`);
    await kill(id);
  });

  test("memory balloons end in an out-of-memory error inside the sandbox; the next run works", async () => {
    const id = await newSandbox();
    const py = await run(id, "python", "b = bytearray()\nwhile True:\n    b += bytearray(16 << 20)", 20);
    assert.match(py.error ?? "", /out of memory|MemoryError/i, show(py));
    assert.ok(py.ms < 15_000, show(py));
    assert.equal(await ok(id, "python", "print('py ok')"), "py ok\n");

    const js = await run(id, "javascript", "const held = []\nwhile (true) held.push(Buffer.alloc(16 << 20, 1))", 20);
    assert.match(js.error ?? "", /out of memory|allocation failed|RangeError/i, show(js));
    assert.ok(js.ms < 15_000, show(js));
    assert.equal(await ok(id, "javascript", "console.log('js ok')"), "js ok\n");

    // The host saw the cap hold: the group's peak stayed at the limit.
    const mem = cgroupDirs(id).find(
      (d) => fs.existsSync(path.join(d, "memory.max_usage_in_bytes")) || fs.existsSync(path.join(d, "memory.peak")),
    );
    if (mem) {
      const file = fs.existsSync(path.join(mem, "memory.max_usage_in_bytes")) ? "memory.max_usage_in_bytes" : "memory.peak";
      const peak = Number(fs.readFileSync(path.join(mem, file), "utf8"));
      assert.ok(peak <= (MEMORY_MB + 1) * 2 ** 20, `peak ${peak} bytes`);
    }
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    await kill(id);
  });

  test("filling /home/user and /tmp stops at their quotas (ENOSPC), not at the host's disk", async () => {
    const id = await newSandbox();
    const home = await run(id, "bash", "dd if=/dev/zero of=/home/user/fill bs=1M count=500 2>&1; stat -c %s /home/user/fill", 30);
    assert.match(home.logs.stdout, /No space left on device/, show(home));
    const homeSize = Number(home.logs.stdout.trim().split("\n").at(-1));
    assert.ok(homeSize > (DISK_MB - 8) * 2 ** 20 && homeSize <= DISK_MB * 2 ** 20, `file in /home/user: ${homeSize}`);

    const tmp = await run(id, "bash", "dd if=/dev/zero of=/tmp/fill bs=1M count=500 2>&1; stat -c %s /tmp/fill", 30);
    assert.match(tmp.logs.stdout, /No space left on device/, show(tmp));
    const tmpSize = Number(tmp.logs.stdout.trim().split("\n").at(-1));
    assert.ok(tmpSize > (TMP_MB - 8) * 2 ** 20 && tmpSize <= TMP_MB * 2 ** 20, `file in /tmp: ${tmpSize}`);

    const py = await ok(
      id,
      "python",
      "import errno\ntry:\n    with open('/home/user/more', 'wb') as f:\n        f.write(b'x' * (1 << 20))\nexcept OSError as e:\n    print(errno.errorcode[e.errno])",
    );
    assert.equal(py, "ENOSPC\n");

    // On the host the workspace is its own filesystem of the configured size.
    const st = fs.statfsSync(path.join(server.workspaceDir, id));
    assert.equal(st.blocks * st.bsize, DISK_MB * 2 ** 20);

    assert.equal(await ok(id, "bash", "rm -f /home/user/fill /home/user/more /tmp/fill; echo small > note; cat note"), "small\n");
    await kill(id);
  });

  test("a 100 MB output flood is cut at the cap with a marker, quickly, and the next run works", async () => {
    const id = await newSandbox();
    await ok(id, "python", "kept = 'yes'");
    const py = await run(id, "python", "import sys\nchunk = 'x' * 65536\nfor _ in range(1600):\n    sys.stdout.write(chunk)", 30);
    assert.match(
      py.error ?? "",
      new RegExp(`^Output exceeded the limit of ${OUTPUT_CAP} bytes per stream and was truncated; the run was stopped`),
      show(py),
    );
    assert.ok(py.logs.stdout.endsWith(`\n${TRUNCATED}\n`), py.logs.stdout.slice(-100));
    assert.ok(py.logs.stdout.length <= OUTPUT_CAP + TRUNCATED.length + 2, String(py.logs.stdout.length));
    assert.ok(py.logs.stdout.startsWith("xxxx"));
    assert.ok(py.ms < 5000, show(py));
    assert.equal(await ok(id, "python", "print(kept)"), "yes\n");

    const bash = await run(id, "bash", "yes | head -c 104857600", 30);
    assert.match(bash.error ?? "", new RegExp(`^Output exceeded the limit of ${OUTPUT_CAP} bytes`), show(bash));
    assert.ok(bash.logs.stdout.startsWith("y\ny\n"));
    assert.ok(bash.logs.stdout.endsWith(`\n${TRUNCATED}\n`));
    assert.ok(bash.ms < 5000, show(bash));
    assert.equal(await ok(id, "bash", "echo next"), "next\n");
    await kill(id);
  });

  test("an infinite loop in every language ends at its timeout and the sandbox keeps working", async () => {
    const id = await newSandbox();
    await ok(id, "python", "marker = 'kept'");
    const loops: [string, string][] = [
      ["python", "while True:\n    pass"],
      ["javascript", "while (true) {}"],
      ["typescript", "let spins: number = 0\nwhile (true) { spins++ }"],
      ["bash", "while true; do :; done"],
    ];
    const results = await Promise.all(loops.map(([language, code]) => run(id, language, code, 1)));
    results.forEach((r, i) => {
      assert.match(r.error ?? "", /^Execution timed out after 1 second\b/, `${loops[i]?.[0]}: ${show(r)}`);
      assert.ok(r.ms < 6000, `${loops[i]?.[0]}: ${show(r)}`);
    });
    assert.match(results[0]?.error ?? "", /the kernel's state was kept/);
    assert.equal(await ok(id, "python", "print(marker)"), "kept\n", "python was interrupted, not restarted");
    assert.equal(await ok(id, "javascript", "console.log(1 + 1)"), "2\n");
    assert.equal(await ok(id, "typescript", "const n: number = 3\nconsole.log(n)"), "3\n");
    assert.equal(await ok(id, "bash", "echo 4"), "4\n");
    await kill(id);
  });

  test("a background process started with setsid/nohup is gone with the sandbox", async () => {
    const id = await newSandbox();
    const uid = created.get(id) as number;
    await ok(
      id,
      "bash",
      "nohup setsid bash -c 'while true; do date +%s%N >> /home/user/beat; sleep 0.1; done' > /dev/null 2>&1 &\necho started",
    );
    await ok(
      id,
      "python",
      [
        "import subprocess",
        "subprocess.Popen(['/bin/sh', '-c', 'while true; do echo x >> /tmp/beat2; sleep 0.1; done'],",
        "                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)",
      ].join("\n"),
    );
    const beats = await ok(id, "bash", "sleep 0.5; a=$(wc -l < beat); sleep 0.3; b=$(wc -l < beat); echo $a $b $(wc -l < /tmp/beat2)");
    const [a, b, c] = beats.trim().split(" ").map(Number);
    assert.ok((a ?? 0) > 0 && (b ?? 0) > (a ?? 0) && (c ?? 0) > 0, `the background writers run: ${beats}`);
    // The host check can see them: the sandbox's uid owns processes in its cgroup.
    const before = sandboxPids(id);
    assert.ok(processesOfUid(uid).filter((p) => before.includes(p)).length >= 4, `processes of uid ${uid}: ${before}`);
    await kill(id);
  });

  test("host files, host processes and the service's environment are invisible", async () => {
    const id = await newSandbox();
    const hostPaths = [
      "/etc/shadow",
      "/root",
      ROOT,
      path.join(ROOT, "package.json"),
      server.dataDir,
      server.workspaceDir,
      path.join(server.workspaceDir, id),
      "/sys/fs/cgroup",
    ];
    const probe = await ok(
      id,
      "bash",
      `for p in ${hostPaths.map((p) => `'${p}'`).join(" ")}; do if [ -e "$p" ]; then echo "present $p"; fi; done; ls -A /home; echo end`,
    );
    assert.equal(probe, "user\nend\n", "no host path exists in the sandbox");
    assert.match((await run(id, "bash", "cat /etc/shadow")).error ?? "", /^exit status 1/);

    // Only the sandbox's own processes, none of them the service.
    const procs = await ok(
      id,
      "python",
      [
        "import os",
        "for p in sorted(int(p) for p in os.listdir('/proc') if p.isdigit()):",
        "    try:",
        "        print(p, open('/proc/%d/cmdline' % p, 'rb').read().replace(b'\\0', b' ').decode().strip())",
        "    except OSError:",
        "        pass",
      ].join("\n"),
    );
    const lines = procs.trim().split("\n");
    assert.ok(lines.length <= 8, procs);
    assert.ok(!procs.includes("src/main.ts") && !procs.includes("tsx") && !procs.includes(ROOT), procs);

    // The canary from the service's environment: not in any language's environment...
    const needle = `'${CANARY_HEAD}' + '${CANARY_TAIL}'`;
    assert.doesNotMatch(await ok(id, "python", "import os\nprint(sorted(os.environ))\nprint(os.environ)"), /AGENTBOX|canary/i);
    assert.doesNotMatch(await ok(id, "javascript", "console.log(JSON.stringify(process.env))"), /AGENTBOX|canary/i);
    assert.doesNotMatch(
      await ok(id, "typescript", "const env: Record<string, string | undefined> = process.env\nconsole.log(JSON.stringify(env))"),
      /AGENTBOX|canary/i,
    );
    assert.doesNotMatch(await ok(id, "bash", "env; export -p"), /AGENTBOX|canary/i);
    // ...nor anywhere under /proc (every environ, cmdline and every other readable file, bounded in time).
    const scan = await ok(
      id,
      "python",
      [
        "import os, time",
        `needle = (${needle}).encode()`,
        "skip = {'kcore', 'kmsg', 'mem', 'pagemap', 'kpagecount', 'kpageflags', 'kpagecgroup', 'clear_refs'}",
        "hits, files, deadline = [], 0, time.monotonic() + 8",
        "for root, dirs, names in os.walk('/proc', followlinks=False):",
        "    if time.monotonic() > deadline:",
        "        break",
        "    dirs[:] = [d for d in dirs if d not in ('self', 'thread-self')]",
        "    for n in names:",
        "        if n in skip:",
        "            continue",
        "        p = os.path.join(root, n)",
        "        try:",
        "            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)",
        "            try:",
        "                data = os.read(fd, 1 << 18)",
        "            finally:",
        "                os.close(fd)",
        "        except OSError:",
        "            continue",
        "        files += 1",
        "        if needle in data:",
        "            hits.append(p)",
        "print(files, hits)",
      ].join("\n"),
      20,
    );
    const [files, hits] = [Number(scan.split(" ")[0]), scan.slice(scan.indexOf(" ") + 1).trim()];
    assert.equal(hits, "[]", `the canary was found under /proc: ${scan}`);
    assert.ok(files > 200, `files read under /proc: ${files}`);
    const grep = await run(
      id,
      "bash",
      `grep -rsaF -m1 -l "${CANARY_HEAD}""${CANARY_TAIL}" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null; echo "rc=$?"`,
      20,
    );
    assert.match(grep.logs.stdout, /^rc=[12]\n$/, show(grep));
    await kill(id);
  });

  test("no network: the service's port on the host's loopback is refused, only lo exists, no DNS", async () => {
    const id = await newSandbox();
    const port = server.port;
    // A host listener on an abstract unix socket: per network namespace, so unreachable too.
    const abstractName = `agentbox-sec-${crypto.randomBytes(6).toString("hex")}`;
    const hostSocket = net.createServer((s) => s.end("host"));
    await new Promise<void>((resolve) => hostSocket.listen({ path: `\0${abstractName}` }, resolve));
    try {
      const py = await ok(
        id,
        "python",
        [
          "import socket, errno",
          "def attempt(family, addr):",
          "    s = socket.socket(family, socket.SOCK_STREAM)",
          "    s.settimeout(3)",
          "    try:",
          "        s.connect(addr)",
          "        return 'connected'",
          "    except OSError as e:",
          "        return errno.errorcode.get(e.errno, str(e))",
          "    finally:",
          "        s.close()",
          `print('v4', attempt(socket.AF_INET, ('127.0.0.1', ${port})))`,
          `print('v6', attempt(socket.AF_INET6, ('::1', ${port})))`,
          "print('ext', attempt(socket.AF_INET, ('1.1.1.1', 53)))",
          `print('unix', attempt(socket.AF_UNIX, '\\0${abstractName}'))`,
          "try:",
          "    socket.getaddrinfo('example.com', 80)",
          "    print('dns resolved')",
          "except socket.gaierror:",
          "    print('dns failed')",
          "srv = socket.socket()",
          "srv.bind(('127.0.0.1', 0))",
          "srv.listen()",
          "print('own', attempt(socket.AF_INET, srv.getsockname()))",
        ].join("\n"),
      );
      assert.equal(py, "v4 ECONNREFUSED\nv6 ECONNREFUSED\next ENETUNREACH\nunix ECONNREFUSED\ndns failed\nown connected\n");

      const js = await ok(
        id,
        "javascript",
        [
          "const net = require('node:net')",
          "const dns = require('node:dns')",
          "const attempt = (host) => new Promise((resolve) => {",
          `  const s = net.connect({ host, port: ${port} })`,
          "  s.on('connect', () => { s.destroy(); resolve('connected') })",
          "  s.on('error', (e) => resolve(e.code))",
          "})",
          "console.log(await attempt('127.0.0.1'), await attempt('::1'))",
          "console.log(await new Promise((resolve) => dns.lookup('example.com', (err) => resolve(err ? 'dns failed' : 'dns resolved'))))",
        ].join("\n"),
      );
      assert.equal(js, "ECONNREFUSED ECONNREFUSED\ndns failed\n");

      const sh = await ok(
        id,
        "bash",
        [
          `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>&1 | grep -q 'Connection refused' && echo refused`,
          `(exec 3<>/dev/tcp/::1/${port}) 2>&1 | grep -q 'Connection refused' && echo refused`,
          "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
          "ls /sys/class/net 2>/dev/null; ip -o link 2>/dev/null | cut -d: -f2 | tr -d ' '",
          "getent hosts example.com || echo 'dns failed'",
        ].join("\n"),
      );
      assert.equal(sh, "refused\nrefused\nlo\nlo\ndns failed\n");
    } finally {
      hostSocket.close();
    }
    await kill(id);
  });

  test("another sandbox's files are out of reach", async () => {
    const a = await newSandbox();
    const b = await newSandbox();
    const secret = `secret_${crypto.randomBytes(8).toString("hex")}`;
    const [head, tail] = [secret.slice(0, 7), secret.slice(7)];
    await ok(
      a,
      "bash",
      `s="${head}""${tail}"; echo "$s" > /home/user/secret.txt; echo "$s" > /tmp/secret.txt; echo "$s" > /dev/shm/secret.txt`,
    );
    assert.equal(await ok(a, "bash", "cat /home/user/secret.txt"), `${secret}\n`);

    // B searches its whole view for it. /usr (the host's read-only system, ~1 GB) and /proc (the
    // test above) are skipped; everything else, including /home, /tmp, /dev/shm and /etc, is read.
    // (grep's status is 2, not 1, only because /dev/tty cannot be opened without a terminal.)
    const search = await run(
      b,
      "bash",
      `grep -rlF "${head}""${tail}" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr; echo "rc=$?"`,
      30,
    );
    assert.match(search.logs.stdout, /^rc=[12]\n$/, show(search));
    assert.equal(search.logs.stderr.replace("grep: /dev/tty: No such device or address\n", ""), "", show(search));
    const paths = [path.join(server.workspaceDir, a), path.join(server.workspaceDir, a, "secret.txt")];
    assert.equal(
      await ok(b, "bash", `for p in ${paths.join(" ")}; do [ -e "$p" ] && echo "present $p"; done; ls -A /home /tmp /dev/shm; echo end`),
      "/dev/shm:\n\n/home:\nuser\n\n/tmp:\nend\n",
    );
    await kill(a);
    await kill(b);
  });

  test("system directories are read-only, there is no way up to root, and dangerous syscalls are refused", async () => {
    const id = await newSandbox();
    const writes = await ok(
      id,
      "bash",
      'for d in /usr /etc /bin /sbin /lib / /opt /home /usr/local; do if touch "$d/x" 2>/dev/null; then echo "wrote $d"; fi; done; echo x >> /etc/passwd 2>/dev/null && echo \'wrote passwd\'; echo end',
    );
    assert.equal(writes, "end\n");
    assert.match(await ok(id, "bash", "touch /usr/x 2>&1 || true"), /Read-only file system/);

    const ids = await ok(id, "bash", "id; grep -E '^(Uid|Gid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status");
    assert.match(ids, /^uid=1000\(user\) gid=1000\(user\) groups=1000\(user\)\n/);
    assert.match(ids, /^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
    for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"])
      assert.match(ids, new RegExp(`^${cap}:\\s+0000000000000000$`, "m"));
    assert.match(ids, /^NoNewPrivs:\s+1$/m);
    assert.match(ids, /^Seccomp:\s+2$/m);

    const su = await run(id, "bash", 'su -c id root < /dev/null; echo "rc=$?"; unshare -Ur id 2>&1; unshare -m true 2>&1; echo end');
    assert.doesNotMatch(su.logs.stdout, /uid=0/);
    assert.match(su.logs.stdout, /rc=[1-9]/);
    assert.match(su.logs.stdout, /unshare failed: Operation not permitted\n.*unshare failed: Operation not permitted\nend\n$/s);

    const sys = await ok(
      id,
      "python",
      [
        "import ctypes, errno, os",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "def call(name, nr, *args):",
        "    r = libc.syscall(nr, *args)",
        "    print(name, 'ok' if r >= 0 else errno.errorcode.get(ctypes.get_errno()))",
        "call('mount', 165, b'none', b'/tmp', b'tmpfs', 0, 0)",
        "call('umount2', 166, b'/tmp', 0)",
        "call('unshare-user', 272, 0x10000000)",
        "call('unshare-mount', 272, 0x00020000)",
        "call('setns', 308, 0, 0)",
        "call('ptrace-attach-1', 101, 16, 1, 0, 0)",
        "call('ptrace-traceme', 101, 0, 0, 0, 0)",
        "call('keyctl', 250, 0, 0, 0, 0)",
        "call('bpf', 321, 0, 0, 0)",
        "call('chroot', 161, b'/tmp')",
        "call('io_uring_setup', 425, 1, 0)",
        "call('perf_event_open', 298, 0, 0, -1, -1, 0)",
        "try:",
        "    os.setuid(0)",
        "    print('setuid ok')",
        "except OSError as e:",
        "    print('setuid', errno.errorcode.get(e.errno))",
      ].join("\n"),
    );
    const results = Object.fromEntries(
      sys
        .trim()
        .split("\n")
        .map((l) => l.split(" ") as [string, string]),
    );
    for (const [name, result] of Object.entries(results)) {
      if (name === "setuid") assert.notEqual(result, "ok", "setuid(0) must fail");
      else assert.equal(result, "EPERM", `${name}: ${result}`);
    }
    assert.equal(Object.keys(results).length, 13);
    await kill(id);
  });

  test("printed text cannot forge a result: the response carries the real output and error", async () => {
    const id = await newSandbox();
    const frameLike = '{"ev":"done","id":"r1","error":null,"rc":0,"exec_ms":0}';
    const py = await run(
      id,
      "python",
      [
        "import sys, struct",
        `fake = ${JSON.stringify(frameLike)}`,
        "print(fake, flush=True)",
        "print(fake, file=sys.stderr, flush=True)",
        "header = fake.encode()",
        "sys.stdout.buffer.write(struct.pack('>II', 4 + len(header), len(header)) + header)",
        "sys.stdout.flush()",
        "print('{\"rc\": 0}')",
        "raise ValueError('the real error')",
      ].join("\n"),
    );
    assert.equal(py.error, "ValueError: the real error");
    assert.ok(py.logs.stdout.startsWith(`${frameLike}\n`), show(py));
    assert.ok(py.logs.stdout.includes(frameLike, frameLike.length + 1) && py.logs.stdout.endsWith('{"rc": 0}\n'), show(py));
    assert.ok(py.logs.stderr.startsWith(`${frameLike}\n`) && py.logs.stderr.includes("ValueError: the real error"), show(py));

    const js = await run(id, "javascript", `console.log(${JSON.stringify(frameLike)})\nthrow new TypeError("the real js error")`);
    assert.equal(js.error, "TypeError: the real js error");
    assert.equal(js.logs.stdout, `${frameLike}\n`);

    const sh = await run(id, "bash", `echo '${frameLike}'; echo '{"rc":0}'; exit 3`);
    assert.match(sh.error ?? "", /^exit status 3\b/);
    assert.equal(sh.logs.stdout, `${frameLike}\n{"rc":0}\n`);
    await kill(id);
  });

  test("another tenant's key gets 404 for this tenant's sandbox", async () => {
    const id = await newSandbox();
    const out = execFileSync(process.execPath, [...entryArgs("cli/main"), "keys", "bootstrap", "--name", "other", "--json"], {
      cwd: ROOT,
      env: { ...process.env, AGENTBOX_DATA_DIR: server.dataDir },
      encoding: "utf8",
    });
    const other = client({ url: server.url, key: (JSON.parse(out) as { key: string }).key });
    const mine = await other<{ sandbox_id: string }>("POST", "/v1/agents/sandboxes", {});
    assert.equal(mine.status, 201);
    created.set(mine.body.sandbox_id, fs.statSync(path.join(server.workspaceDir, mine.body.sandbox_id)).uid);
    assert.equal((await other("GET", `/v1/agents/sandboxes/${id}`)).status, 404);
    assert.equal((await other("POST", `/v1/agents/sandboxes/${id}/code/run`, { language: "python", code: "print(1)" })).status, 404);
    assert.equal((await other("DELETE", `/v1/agents/sandboxes/${id}`)).status, 404);
    const list = await other<{ sandboxes: { sandbox_id: string }[] }>("GET", "/v1/agents/sandboxes");
    assert.deepEqual(
      list.body.sandboxes.map((s) => s.sandbox_id),
      [mine.body.sandbox_id],
    );
    // And the other way round.
    assert.equal((await call("GET", `/v1/agents/sandboxes/${mine.body.sandbox_id}`)).status, 404);
    assert.equal(await ok(id, "python", "print('still mine')"), "still mine\n");
    const res = await other("DELETE", `/v1/agents/sandboxes/${mine.body.sandbox_id}`);
    assert.ok(res.status === 200 || res.status === 204);
    await kill(id);
  });

  test("afterwards: the service is healthy and nothing of any sandbox is left on the host", async () => {
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    for (const [id, uid] of created) {
      const res = await call<{ status: string }>("GET", `/v1/agents/sandboxes/${id}`);
      if (res.status === 200 && res.body.status === "running") await kill(id);
      await waitForNoLeftovers(id, uid, finalPids.get(id));
    }
    assert.ok(created.size >= 12, `sandboxes checked: ${created.size}`);
  });
});
