// The bubblewrap plan of a sandbox: what namespaces it gets, what it sees of the host (read-only
// system files, its own workspace), and that nothing of the service's environment reaches it.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, test } from "node:test";
import { HOST_USR, netDirOf, planBwrap, SANDBOX_HOME } from "../../src/sandbox/bwrap.js";

const WORKSPACE = "/run/agentbox-unit/ws-1";
const SECCOMP = Buffer.from([6, 0, 0, 0, 0, 0, 0xff, 0x7f]);
const plan = planBwrap(WORKSPACE, 64, SECCOMP);
const text = plan.args.toString();
/** The options, without the empty string after the final NUL. */
const opts = text.split("\0").slice(0, -1);

/** Index of the option `name` followed by exactly `args` (-1 when absent). */
function find(name: string, ...args: string[]): number {
  for (let i = 0; i < opts.length; i++) {
    if (opts[i] === name && args.every((a, j) => opts[i + 1 + j] === a)) return i;
  }
  return -1;
}

function has(name: string, ...args: string[]): boolean {
  return find(name, ...args) >= 0;
}

/** Every occurrence of an option with `arity` arguments. */
function all(name: string, arity: number): string[][] {
  const out: string[][] = [];
  opts.forEach((o, i) => {
    if (o === name) out.push(opts.slice(i + 1, i + 1 + arity));
  });
  return out;
}

test("the options are one NUL-terminated list handed over on descriptor 4", () => {
  assert.ok(text.endsWith("\0"));
  assert.ok(!opts.includes(""), "no empty option");
  assert.equal(plan.fds.get(4), plan.args);
  assert.deepEqual(plan.argv.slice(0, 4), ["/usr/bin/bwrap", "--args", "4", "--"]);
  assert.deepEqual(plan.argv.slice(4), ["/usr/bin/python3", "-I", "/opt/agentbox/supervisor.py"]);
});

test("every namespace is new, user namespaces cannot be made inside, the sandbox dies with its parent", () => {
  for (const o of ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]) assert.ok(has(o), o);
  assert.ok(!has("--share-net"), "no host network");
  assert.ok(has("--cap-drop", "ALL"));
  assert.ok(has("--uid", "1000") && has("--gid", "1000"), "an unprivileged uid inside");
});

test("seccomp is loaded from descriptor 3, which holds the program", () => {
  assert.ok(has("--seccomp", "3"));
  assert.equal(plan.fds.get(3), SECCOMP);
});

test("the host is seen read-only: only the workspace is bound writable, and only at /home/user", () => {
  assert.deepEqual(all("--bind", 2), [[WORKSPACE, SANDBOX_HOME]]);
  assert.deepEqual(all("--dev-bind", 2), []);
  const roSources = all("--ro-bind", 2).map(([src]) => src as string);
  assert.ok(roSources.includes("/usr"));
  for (const src of [...roSources, ...all("--ro-bind-try", 2).map(([s]) => s as string)]) {
    assert.ok(src === "/usr" || src.startsWith("/etc/") || src === netDirOf(WORKSPACE), `unexpected host path ${src}`);
    assert.ok(!/shadow|sudoers|ssh|\/root/.test(src), `secret host path ${src}`);
  }
  assert.ok(has("--tmpfs", "/usr/local"), "/usr/local hidden");
  // The sandbox's network sockets: a directory of its own, read-only inside.
  assert.ok(has("--ro-bind", netDirOf(WORKSPACE), "/run/agentbox"));
  // Public CA certificates (HTTPS through the egress proxy); never /etc/ssl/private.
  assert.ok(has("--ro-bind-try", "/etc/ssl/certs", "/etc/ssl/certs"));
  assert.ok(!opts.some((o) => o.startsWith("/etc/ssl/private")));
  // The root is remounted read-only last, after every mount under it is in place.
  assert.deepEqual(opts.slice(-2), ["--remount-ro", "/"]);
});

test("/tmp is a size-capped tmpfs; /proc is the sandbox's own", () => {
  const tmp = find("--tmpfs", "/tmp");
  assert.ok(tmp > 1);
  assert.deepEqual(opts.slice(tmp - 2, tmp), ["--size", String(64 * 2 ** 20)]);
  assert.ok(has("--proc", "/proc"));
});

test("no host environment: cleared, then only a fixed set of variables", () => {
  const clear = find("--clearenv");
  assert.ok(clear >= 0);
  const sets = all("--setenv", 2);
  assert.deepEqual(sets.map(([name]) => name).sort(), ["HOME", "LANG", "PATH", "TMPDIR"]);
  for (let i = 0; i < opts.length; i++) if (opts[i] === "--setenv") assert.ok(i > clear, "every --setenv after --clearenv");
  const values = new Set(sets.map(([, value]) => value));
  for (const [name, value] of Object.entries(process.env)) {
    if (value && value.length > 8 && !["PATH", "HOME"].includes(name)) assert.ok(!values.has(value), `host ${name} leaked`);
  }
});

test("the runtime's modules come with their bytecode (unchecked hash), compiled by the host's python3", () => {
  const data = all("--ro-bind-data", 2);
  const dests = data.map(([, dest]) => dest);
  const tag = execFileSync("/usr/bin/python3", ["-I", "-c", "import sys; print(sys.implementation.cache_tag)"]).toString().trim();
  for (const mod of ["main", "kernels", "protocol", "state"]) {
    const dest = `/opt/agentbox/agentbox_rt/__pycache__/${mod}.${tag}.pyc`;
    const at = dests.indexOf(dest);
    assert.ok(at >= 0, dest);
    const bytes = plan.fds.get(Number(data[at]?.[0])) as Buffer;
    // PEP 552: flags 0b01, a hash-based file that is not checked against its source.
    assert.equal(bytes.readUInt32LE(4), 1);
  }
  // __main__'s bytecode is never cached: the entry point has none.
  assert.ok(!dests.some((d) => d?.includes("supervisor.cpython")));
});

test("the runtime and the account files are placed read-only from their own descriptors", () => {
  const data = all("--ro-bind-data", 2);
  const dests = data.map(([, dest]) => dest);
  for (const dest of ["/opt/agentbox/supervisor.py", "/etc/passwd", "/etc/group", "/etc/hosts"]) assert.ok(dests.includes(dest), dest);
  for (const [fd] of data) {
    const n = Number(fd);
    assert.ok(n >= 5, "descriptors 3 and 4 are the seccomp program and the options");
    assert.ok(plan.fds.get(n)?.length, `descriptor ${fd} has its bytes`);
  }
  assert.equal(new Set(data.map(([fd]) => fd)).size, data.length, "one descriptor per file");
  const passwd = plan.fds.get(Number(data.find(([, d]) => d === "/etc/passwd")?.[0]))?.toString() ?? "";
  assert.match(passwd, /^user:x:1000:1000:/m);
  assert.doesNotMatch(passwd, /\$|:0:0:.*\/bin\/(ba)?sh/, "no password hashes, no root shell");
});

describe("a sandbox of a custom template", () => {
  const ROOT = "/var/lib/agentbox-templates/x/rootfs/abc";
  const tplOpts = (python?: string) => {
    const p = planBwrap(WORKSPACE, 64, SECCOMP, undefined, { dir: ROOT, ...(python ? { python } : {}) });
    return { p, o: p.args.toString().split("\0").slice(0, -1) };
  };
  const idx = (o: string[], ...seq: string[]) => o.findIndex((_, i) => seq.every((s, j) => o[i + j] === s));

  test("its root is the template's tree, read-only; the host's /usr only under the runtime's own directory", () => {
    const { o } = tplOpts();
    assert.ok(idx(o, "--ro-bind", ROOT, "/") >= 0);
    assert.ok(idx(o, "--ro-bind", "/usr", HOST_USR) >= 0);
    assert.ok(idx(o, "--tmpfs", `${HOST_USR}/local`) >= 0, "the host's /usr/local hidden there too");
    assert.ok(idx(o, "--ro-bind", "/usr", "/usr") < 0, "not the host's /usr at /usr");
    assert.ok(!o.some((x) => x.startsWith("/etc/") && idx(o, "--ro-bind", x, x) >= 0), "none of the host's /etc");
    assert.ok(idx(o, "--remount-ro", "/opt/agentbox") >= 0);
    assert.deepEqual(o.slice(-2), ["--remount-ro", "/"]);
    // The same isolation: namespaces, no capabilities, seccomp, the private home and /tmp.
    for (const seq of [
      ["--unshare-all"],
      ["--disable-userns"],
      ["--cap-drop", "ALL"],
      ["--seccomp", "3"],
      ["--bind", WORKSPACE, SANDBOX_HOME],
    ])
      assert.ok(idx(o, ...seq) >= 0, seq.join(" "));
  });

  test("the host's loader is named to the supervisor after --clearenv; nothing else of the host's environment", () => {
    const { o } = tplOpts();
    const clear = o.indexOf("--clearenv");
    const names: string[] = [];
    o.forEach((x, i) => {
      if (x === "--setenv") {
        assert.ok(i > clear);
        names.push(o[i + 1] as string);
      }
    });
    assert.deepEqual(names.sort(), ["AGENTBOX_HOST_LIBS", "AGENTBOX_HOST_LOADER", "AGENTBOX_HOST_USR", "HOME", "LANG", "PATH", "TMPDIR"]);
  });

  test("the supervisor runs on the image's python3 when it has one, else on the host's through the host's loader", () => {
    assert.deepEqual(tplOpts("/usr/local/bin/python3").p.argv.slice(4), ["/usr/local/bin/python3", "-I", "/opt/agentbox/supervisor.py"]);
    const own = tplOpts().p.argv.slice(4);
    assert.match(own[0] as string, new RegExp(`^${HOST_USR}/lib/.*ld-linux`));
    assert.deepEqual(own.slice(1, 2), ["--library-path"]);
    assert.deepEqual(own.slice(3), [`${HOST_USR}/bin/python3`, "-I", "/opt/agentbox/supervisor.py"]);
  });
});
