// Built root filesystems on disk: one read-only directory per content digest, shared by every
// template (and so every sandbox) built from the same image. An unpacked image is made safe to run
// from here before it is adopted: no device nodes or setuid bits, owned by root, within its size,
// and with the mount points a sandbox needs (replacing anything of the image's that would make
// bubblewrap follow a link out of the tree).
import fs from "node:fs";
import path from "node:path";
import { ApiError } from "../errors.js";

/** Directories and files a sandbox mounts over (src/sandbox/bwrap.ts): they must exist, as real entries. */
const MOUNT_DIRS = ["proc", "dev", "tmp", "home/user", "opt/agentbox", "run/agentbox", "etc"];
const MOUNT_FILES = ["etc/passwd", "etc/group", "etc/hosts", "etc/hostname"];
/** The oldest Python the runtime's supervisor runs on. */
const MIN_PYTHON_MINOR = 9;
/** Where an image's python3 may be (official python images put theirs in /usr/local). */
const PYTHONS = ["usr/local/bin/python3", "usr/bin/python3"];

export class RootfsStore {
  readonly root: string;
  readonly workRoot: string;
  /** Build steps' writable copies (each a tmpfs while its build runs). */
  readonly layerRoot: string;

  constructor(dir: string) {
    this.root = path.join(dir, "rootfs");
    this.workRoot = path.join(dir, "work");
    this.layerRoot = path.join(dir, "layers");
    // Traversable (not listable) by the sandboxes' host uids, which open their template's root.
    for (const d of [dir, this.root, this.workRoot, this.layerRoot]) fs.mkdirSync(d, { recursive: true, mode: 0o711 });
    for (let d = dir; d !== path.dirname(d); d = path.dirname(d)) {
      if ((fs.statSync(d).mode & 0o001) === 0) {
        throw new Error(`template directory ${dir} is not reachable by sandbox users: ${d} lacks o+x (set AGENTBOX_TEMPLATE_DIR)`);
      }
    }
  }

  pathOf(digest: string): string {
    return path.join(this.root, digest);
  }

  has(digest: string): boolean {
    return fs.existsSync(this.pathOf(digest));
  }

  /** A build's scratch directory, owned by the uid its tools run as. */
  async workDir(buildId: string, uid: number): Promise<string> {
    const dir = path.join(this.workRoot, buildId);
    await fs.promises.rm(dir, { recursive: true, force: true });
    await fs.promises.mkdir(dir, { mode: 0o700 });
    await fs.promises.chown(dir, uid, uid).catch(() => {});
    return dir;
  }

  layerDir(buildId: string): string {
    return path.join(this.layerRoot, buildId);
  }

  async removeWork(buildId: string): Promise<void> {
    await fs.promises.rm(path.join(this.workRoot, buildId), { recursive: true, force: true });
  }

  /**
   * Makes an unpacked tree safe and ready (see the file comment) and moves it to its digest's place;
   * when that digest is already there the new copy is dropped. Returns the image's python3, if usable.
   */
  async adopt(tree: string, digest: string, limits: TreeLimits): Promise<string | null> {
    if (!/^[a-f0-9]{64}$/.test(digest)) throw new Error(`not a sha256 digest: ${digest}`);
    const dest = this.pathOf(digest);
    if (fs.existsSync(dest)) {
      await fs.promises.rm(tree, { recursive: true, force: true });
      return findPython(dest);
    }
    await sanitize(tree, limits);
    await prepareMountPoints(tree);
    await fs.promises.chmod(tree, 0o755);
    try {
      await fs.promises.rename(tree, dest);
    } catch (err) {
      // Another build of the same image (builds run in parallel) adopted it meanwhile: use theirs.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOTEMPTY" && code !== "EEXIST") throw err;
      await fs.promises.rm(tree, { recursive: true, force: true });
    }
    return findPython(dest);
  }

  async remove(digest: string): Promise<void> {
    await fs.promises.rm(this.pathOf(digest), { recursive: true, force: true });
  }

  /** Digests on disk (to sweep those no template uses any more). */
  existing(): string[] {
    return fs.readdirSync(this.root).filter((d) => /^[a-f0-9]{64}$/.test(d));
  }

  /** Removes what builds a stop of the service interrupted: scratch directories and build-step copies (tmpfs mounts). */
  async sweepBuilds(unmount: (dir: string) => Promise<void>): Promise<void> {
    for (const name of await fs.promises.readdir(this.layerRoot)) {
      const dir = path.join(this.layerRoot, name);
      await unmount(dir).catch(() => {});
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
    for (const name of await fs.promises.readdir(this.workRoot))
      await fs.promises.rm(path.join(this.workRoot, name), { recursive: true, force: true });
  }
}

/** What a root filesystem may take on the host's disk. */
export interface TreeLimits {
  /** Bytes, counted in blocks. */
  maxBytes: number;
  /** Files, directories and links (inodes): an image of empty files takes no blocks but one inode each. */
  maxFiles: number;
}

/** The error of a tree over its file count. */
export function tooManyFiles(maxFiles: number, whatHolds = "The root filesystem holds"): ApiError {
  return new ApiError(
    "invalid_request",
    `${whatHolds} more than ${maxFiles} files, directories and links, the limit (AGENTBOX_TEMPLATE_MAX_FILES)`,
  );
}

/**
 * Walks the tree without following links: removes device nodes, fifos and sockets, clears setuid,
 * setgid and sticky-on-files bits, gives everything to root, and counts the bytes and entries it takes.
 */
async function sanitize(tree: string, { maxBytes, maxFiles }: TreeLimits): Promise<void> {
  let bytes = 0;
  let files = 0;
  const stack = [tree];
  for (let dir = stack.pop(); dir !== undefined; dir = stack.pop()) {
    for (const entry of await fs.promises.readdir(dir, { withFileTypes: true })) {
      if (++files > maxFiles) throw tooManyFiles(maxFiles);
      const p = path.join(dir, entry.name);
      const st = await fs.promises.lstat(p);
      bytes += st.blocks * 512;
      if (bytes > maxBytes) {
        throw new ApiError(
          "invalid_request",
          `The unpacked image is larger than ${Math.round(maxBytes / 2 ** 20)} MiB (AGENTBOX_TEMPLATE_MAX_ROOTFS_MB)`,
        );
      }
      if (!(st.isFile() || st.isDirectory() || st.isSymbolicLink())) {
        await fs.promises.rm(p, { force: true });
        continue;
      }
      await fs.promises.lchown(p, 0, 0).catch(() => {});
      if (!st.isSymbolicLink() && (st.mode & 0o6000) !== 0) await fs.promises.chmod(p, st.mode & 0o1777);
      if (st.isDirectory()) stack.push(p);
    }
  }
}

/** Makes `rel` a real directory under `tree`, replacing any link or file on its way. */
async function realDir(tree: string, rel: string): Promise<string> {
  let at = tree;
  for (const part of rel.split("/")) {
    at = path.join(at, part);
    const st = await fs.promises.lstat(at).catch(() => undefined);
    if (st?.isDirectory()) continue;
    if (st) await fs.promises.rm(at, { force: true });
    await fs.promises.mkdir(at, { mode: 0o755 });
  }
  return at;
}

async function prepareMountPoints(tree: string): Promise<void> {
  for (const rel of MOUNT_DIRS) await realDir(tree, rel);
  for (const rel of MOUNT_FILES) {
    const file = path.join(await realDir(tree, path.dirname(rel)), path.basename(rel));
    const st = await fs.promises.lstat(file).catch(() => undefined);
    if (st?.isFile()) continue;
    if (st) await fs.promises.rm(file, { recursive: true, force: true });
    await fs.promises.writeFile(file, "", { mode: 0o644 });
  }
}

/** Resolves a path inside the tree, following links as the sandbox would (absolute ones from the tree's root). */
function resolveInside(tree: string, rel: string, hops = 0): string | undefined {
  if (hops > 8) return undefined;
  const parts = rel.split("/").filter((p) => p !== "" && p !== ".");
  let at = "";
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    at = part === ".." ? path.posix.dirname(at) : path.posix.join(at, part);
    const full = path.join(tree, at);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(full);
    } catch {
      return undefined;
    }
    if (st.isSymbolicLink()) {
      const target = fs.readlinkSync(full);
      const base = target.startsWith("/") ? target : path.posix.join(path.posix.dirname(at), target);
      return resolveInside(tree, path.posix.join(base, ...parts.slice(i + 1)), hops + 1);
    }
  }
  return at === "" || at.startsWith("..") ? undefined : at;
}

/**
 * The image's python3 (as a path inside it) when it is one the runtime runs on: a regular file with
 * its standard library next to it at version 3.9 or newer. Null otherwise (the host's is used).
 */
export function findPython(tree: string): string | null {
  for (const candidate of PYTHONS) {
    const real = resolveInside(tree, candidate);
    if (!real || !fs.statSync(path.join(tree, real), { throwIfNoEntry: false })?.isFile()) continue;
    const prefix = path.posix.dirname(path.posix.dirname(real));
    const libDir = path.join(tree, prefix, "lib");
    const versions = fs.existsSync(libDir) ? fs.readdirSync(libDir) : [];
    const ok = versions.some((v) => {
      const m = /^python3\.(\d+)$/.exec(v);
      return m !== null && Number(m[1]) >= MIN_PYTHON_MINOR && fs.existsSync(path.join(libDir, v, "os.py"));
    });
    if (ok) return `/${candidate}`;
  }
  return null;
}
