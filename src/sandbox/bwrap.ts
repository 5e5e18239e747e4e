// How one sandbox is started: the bubblewrap command line (namespaces, read-only system view,
// private /home/user and /tmp, no capabilities, seccomp, empty environment), the launcher that
// joins the sandbox's cgroup before exec'ing bwrap, and the files the sandbox gets read-only.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const RUNTIME_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../runtime");
const RUNTIME_DIR_FALLBACK = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../runtime");

export const SANDBOX_UID = 1000;
export const SANDBOX_HOME = "/home/user";

/**
 * Joins each cgroup given before `--`, drops core dumps, then becomes bwrap. Runs as the sandbox's
 * host uid. The group's process cap (pids.max) is handed to the supervisor as AGENTBOX_PIDS_MAX so
 * it can tell when the sandbox is stuck at it; the variable goes right after `--args N` (options
 * there are applied after the descriptor's --clearenv) and only to the supervisor, never to kernels.
 */
export const LAUNCHER = `
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  echo $$ > "$1" || exit 125
  [ -r "\${1%/*}/pids.max" ] && read -r pids < "\${1%/*}/pids.max"
  shift
done; shift
ulimit -c 0
ulimit -n 4096
case "\${pids:-x}" in *[!0-9]*) exec "$@" ;; esac
bwrap=$1 args=$2 fd=$3; shift 3
exec "$bwrap" "$args" "$fd" --setenv AGENTBOX_PIDS_MAX "$pids" "$@"
`;

/** Where runtime/ is: next to src/ (tsx), or one level further up (compiled into dist/). */
function runtimeDir(): string {
  for (const dir of [RUNTIME_DIR, RUNTIME_DIR_FALLBACK]) {
    if (fs.existsSync(path.join(dir, "supervisor.py"))) return dir;
  }
  throw new Error("runtime file supervisor.py not found");
}

/**
 * Every file under runtime/ (the supervisor entry, its agentbox_rt package, node_kernel.js) as a
 * path relative to it, sorted so descriptor numbers are stable. Read on every call, so a new module
 * needs no change here. Bytecode caches and dotfiles are not runtime files.
 */
function runtimeFiles(dir: string, rel = ""): string[] {
  const entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const files: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith(".") || entry.name === "__pycache__" || entry.name.endsWith(".pyc")) continue;
    const name = path.posix.join(rel, entry.name);
    if (entry.isDirectory()) files.push(...runtimeFiles(dir, name));
    else if (entry.isFile()) files.push(name);
  }
  return files;
}

/** Compiles the modules named on stdin (JSON: dir, names) with py_compile; prints the cache tag and each module's bytecode (hex). */
const COMPILE = `
import json, os, py_compile, sys, tempfile
req = json.load(sys.stdin)
out = {}
with tempfile.TemporaryDirectory() as tmp:
    for i, name in enumerate(req["names"]):
        cfile = os.path.join(tmp, str(i))
        py_compile.compile(os.path.join(req["dir"], name), cfile=cfile, dfile="/opt/agentbox/" + name, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        out[name] = open(cfile, "rb").read().hex()
print(json.dumps({"tag": sys.implementation.cache_tag, "pyc": out}))
`;

const bytecodeMade = new Map<string, { dest: string; data: Buffer }[]>();

/**
 * The runtime's package modules as bytecode beside them (…/__pycache__/<module>.<tag>.pyc), made by
 * the host's python3 once per set of sources. Without it every sandbox start compiles every module
 * again (its /opt/agentbox is read-only: nothing is ever cached there), some 20 ms of CPU each time.
 * Unchecked-hash bytecode (PEP 552): the copies bwrap writes have new mtimes, and these are made from
 * exactly the sources shipped with them. A python of another version (a template image's own) looks
 * for its own tag, finds none and compiles as before; so does every python if the host's cannot compile.
 */
function runtimeBytecode(dir: string, files: { name: string; data: Buffer }[]): { dest: string; data: Buffer }[] {
  // supervisor.py runs as __main__, whose bytecode is never cached: only the package's modules.
  const modules = files.filter((f) => f.name.endsWith(".py") && f.name.includes("/"));
  const hash = crypto.createHash("sha256");
  for (const f of modules) hash.update(f.name).update("\0").update(f.data).update("\0");
  const key = hash.digest("hex");
  const known = bytecodeMade.get(key);
  if (known) return known;
  let made: { dest: string; data: Buffer }[] = [];
  try {
    const out = execFileSync("/usr/bin/python3", ["-I", "-S", "-c", COMPILE], {
      input: JSON.stringify({ dir, names: modules.map((f) => f.name) }),
      maxBuffer: 64 * 2 ** 20,
    });
    const { tag, pyc } = JSON.parse(out.toString()) as { tag: string; pyc: Record<string, string> };
    made = Object.entries(pyc).map(([name, hex]) => ({
      dest: `/opt/agentbox/${path.posix.dirname(name)}/__pycache__/${path.posix.basename(name, ".py")}.${tag}.pyc`,
      data: Buffer.from(hex, "hex"),
    }));
  } catch {
    // No bytecode: the modules compile at each start, as they did before.
  }
  bytecodeMade.clear();
  bytecodeMade.set(key, made);
  return made;
}

/** Files placed read-only into every sandbox, each passed to bwrap on its own descriptor. */
export function sandboxFiles(): { dest: string; data: Buffer }[] {
  const dir = runtimeDir();
  const runtime = runtimeFiles(dir).map((name) => ({ name, data: fs.readFileSync(path.join(dir, name)) }));
  return [
    // /opt/agentbox/supervisor.py, /opt/agentbox/agentbox_rt/*.py, /opt/agentbox/node_kernel.js
    ...runtime.map((f) => ({ dest: `/opt/agentbox/${f.name}`, data: f.data })),
    ...runtimeBytecode(dir, runtime),
    {
      dest: "/etc/passwd",
      data: Buffer.from(
        "root:x:0:0:root:/root:/usr/sbin/nologin\nuser:x:1000:1000:sandbox user:/home/user:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
      ),
    },
    { dest: "/etc/group", data: Buffer.from("root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n") },
    { dest: "/etc/hosts", data: Buffer.from("127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n") },
    { dest: "/etc/hostname", data: Buffer.from("sandbox\n") },
  ];
}

export interface BwrapPlan {
  /** bwrap options, NUL-separated, for the --args descriptor. */
  args: Buffer;
  /** fd number -> bytes to write into it (seccomp program, args, files). */
  fds: Map<number, Buffer>;
  argv: string[];
}

const FIRST_FILE_FD = 5;

/** The process bwrap starts: the supervisor, unless a caller (the benchmark's baseline) names another. */
const SUPERVISOR = ["/usr/bin/python3", "-I", "/opt/agentbox/supervisor.py"];

/** The read-only system a sandbox sees: Debian's /usr (without /usr/local) and the usual symlinks into it. */
export const SYSTEM_VIEW: string[][] = [
  ["--ro-bind", "/usr", "/usr"],
  ["--tmpfs", "/usr/local"],
  ["--remount-ro", "/usr/local"],
  ["--symlink", "usr/bin", "/bin"],
  ["--symlink", "usr/lib", "/lib"],
  ["--symlink", "usr/lib64", "/lib64"],
  ["--symlink", "usr/sbin", "/sbin"],
];

/**
 * The host directory bound read-only at /run/agentbox in the sandbox: the unix sockets the service
 * listens on for the sandbox's egress and port connections (src/network/). Next to the workspace
 * root, one per sandbox; made here so it exists whenever a sandbox starts (pool ones too), root's
 * and read-only inside, so code in the sandbox can neither add nor replace a socket in it.
 */
export function netDirOf(workspace: string): string {
  return path.join(`${path.dirname(workspace)}.net`, path.basename(workspace));
}

function makeNetDir(workspace: string): string {
  const dir = netDirOf(workspace);
  fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o711 });
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  return dir;
}

/**
 * A sandbox of a custom template (src/templates/): its root is the template's read-only root
 * filesystem instead of the host's /usr, and the service's runtime comes from outside the image.
 */
export interface TemplateRoot {
  /** The template's unpacked root filesystem on the host (mount points prepared, see src/templates/rootfs.ts). */
  dir: string;
  /** Where the sandbox's processes start (a Dockerfile's WORKDIR); default /home/user. */
  workdir?: string;
  /**
   * The image's own python3 (its path inside the image) when it has one the runtime can run on:
   * the supervisor, and so the python kernel, runs on it. Absent, on the host's.
   */
  python?: string;
  /**
   * A template build's sandbox (src/templates/steps.ts): the root is its own copy, bound writable,
   * and the supervisor is uid 0 of the sandbox's user namespace, which is still the sandbox's
   * unprivileged host uid (the copy is owned by it), so installers may write anywhere in the copy.
   */
  build?: boolean;
  /**
   * A build's earlier stages (a multi-stage Dockerfile), bound read-only at STAGES_DIR/<index>:
   * their root filesystems, adopted and sanitized already, for `COPY --from` to copy out of.
   */
  stages?: string[];
}

/** Where a build sandbox sees the root filesystems of its build's earlier stages. */
export const STAGES_DIR = "/opt/agentbox/stages";

/**
 * Where the host's /usr is seen read-only inside a template's sandbox: the supervisor, and the
 * bash/node/python the image lacks, run from there through the host's dynamic loader (HOST_LOADER),
 * so that they never load the image's libraries and the image needs none of them.
 */
export const HOST_USR = "/opt/agentbox/host";

let loaderCache: { loader: string; libDir: string } | undefined;

/** The host's dynamic loader and library directory as seen from inside a template's sandbox. */
export function hostLoader(): { loader: string; libDir: string } {
  if (loaderCache) return loaderCache;
  for (const candidate of ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]) {
    let real: string;
    try {
      real = fs.realpathSync(candidate);
    } catch {
      continue;
    }
    if (!real.startsWith("/usr/")) continue;
    const inside = `${HOST_USR}${real.slice("/usr".length)}`;
    loaderCache = { loader: inside, libDir: path.posix.dirname(inside) };
    return loaderCache;
  }
  throw new Error("the host's dynamic loader was not found under /usr");
}

/** The read-only system of a template's sandbox: the image's root, the host's /usr beside the runtime. */
function templateView(root: TemplateRoot): string[][] {
  return [
    [root.build ? "--bind" : "--ro-bind", root.dir, "/"],
    ["--tmpfs", "/opt/agentbox"],
    ["--ro-bind", "/usr", HOST_USR],
    ["--tmpfs", `${HOST_USR}/local`],
    ["--remount-ro", `${HOST_USR}/local`],
    ...(root.stages ?? []).map((dir, i) => ["--ro-bind", dir, `${STAGES_DIR}/${i}`]),
  ];
}

/**
 * What the supervisor of a template's sandbox is told about the host's programs (after --clearenv:
 * bwrap applies its environment options in order). Kernels and commands get their own environment.
 */
function templateEnv(): string[][] {
  const { loader, libDir } = hostLoader();
  return [
    ["--setenv", "AGENTBOX_HOST_USR", HOST_USR],
    ["--setenv", "AGENTBOX_HOST_LOADER", loader],
    ["--setenv", "AGENTBOX_HOST_LIBS", libDir],
  ];
}

/** The supervisor's command line in a template's sandbox: the image's python3, or the host's. */
export function templateSupervisor(root: TemplateRoot): string[] {
  if (root.python) return [root.python, ...SUPERVISOR.slice(1)];
  const { loader, libDir } = hostLoader();
  return [loader, "--library-path", libDir, `${HOST_USR}/bin/python3`, ...SUPERVISOR.slice(1)];
}

/** The host's own files a default sandbox sees under /etc (a template's sandbox has its image's /etc). */
const HOST_ETC: string[][] = [
  ["--dir", "/etc"],
  ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"],
  ["--ro-bind-try", "/etc/alternatives", "/etc/alternatives"],
  ["--ro-bind-try", "/etc/localtime", "/etc/localtime"],
  ["--ro-bind-try", "/etc/mime.types", "/etc/mime.types"],
  // The public CA certificates, for HTTPS through the egress proxy (pip, requests, curl, npm).
  ["--ro-bind-try", "/etc/ssl/certs", "/etc/ssl/certs"],
  ["--ro-bind-try", "/etc/ssl/openssl.cnf", "/etc/ssl/openssl.cnf"],
];

export function planBwrap(
  workspace: string,
  tmpMb: number,
  seccomp: Buffer,
  command: string[] = SUPERVISOR,
  root?: TemplateRoot,
): BwrapPlan {
  const files = sandboxFiles();
  const opts = [
    ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"],
    root?.build
      ? ["--uid", "0", "--gid", "0", "--hostname", "sandbox"]
      : ["--uid", String(SANDBOX_UID), "--gid", String(SANDBOX_UID), "--hostname", "sandbox"],
    ...(root ? templateView(root) : [...SYSTEM_VIEW, ...HOST_ETC]),
    ["--ro-bind", makeNetDir(workspace), "/run/agentbox"],
    ["--proc", "/proc", "--dev", "/dev"],
    // /dev is a tmpfs the size of host memory: read-only, with a capped /dev/shm (POSIX shared
    // memory, multiprocessing's locks) as its only writable place.
    ["--size", String(tmpMb * 2 ** 20), "--perms", "1777", "--tmpfs", "/dev/shm"],
    ["--remount-ro", "/dev"],
    ["--size", String(tmpMb * 2 ** 20), "--tmpfs", "/tmp"],
    ["--bind", workspace, SANDBOX_HOME],
    ["--chdir", SANDBOX_HOME],
    ["--cap-drop", "ALL", "--clearenv"],
    ["--setenv", "PATH", "/usr/bin:/bin"],
    ["--setenv", "HOME", SANDBOX_HOME],
    ["--setenv", "LANG", "C.UTF-8"],
    ["--setenv", "TMPDIR", "/tmp"],
    ...(root ? templateEnv() : []),
    ...(root?.workdir ? [["--setenv", "AGENTBOX_WORKDIR", root.workdir]] : []),
    ["--seccomp", "3"],
  ].flat();
  const fds = new Map<number, Buffer>([[3, seccomp]]);
  files.forEach((f, i) => {
    opts.push("--ro-bind-data", String(FIRST_FILE_FD + i), f.dest);
    fds.set(FIRST_FILE_FD + i, f.data);
  });
  // The runtime's tmpfs in a template's sandbox is read-only once its files are in.
  if (root) opts.push("--remount-ro", "/opt/agentbox");
  // Last: the root itself (/, /etc, /opt, /home) read-only; /home/user, /tmp, /dev and /proc are their own mounts.
  // (A build's root stays writable: its changes are the new template.)
  if (!root?.build) opts.push("--remount-ro", "/");
  const args = Buffer.from(`${opts.join("\0")}\0`);
  fds.set(4, args);
  return {
    args,
    fds,
    // LAUNCHER inserts its --setenv after the first three of these.
    argv: ["/usr/bin/bwrap", "--args", "4", "--", ...(root && command === SUPERVISOR ? templateSupervisor(root) : command)],
  };
}
