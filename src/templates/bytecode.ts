// The bytecode of an image's own Python, made once at build time: a template's sandboxes run their
// supervisor on the image's python3 with a read-only root, so a module whose cached bytecode is
// missing or stale (official python images ship none; a copied tree has new mtimes) is compiled
// again at every start, the largest part of a cold create. The image's python imports what the
// runtime imports, in a sandbox of the new root (the image's python is untrusted code), writing its
// bytecode under the sandbox's own /home/user (-X pycache_prefix); the service then copies those
// files into the root's __pycache__ directories, only beside a source file of the same name and
// never through a link. Python checks each file against its source's mtime and size before use.
import fs from "node:fs";
import path from "node:path";
import type { Box } from "../sandbox/box.js";
import { SANDBOX_HOME } from "../sandbox/bwrap.js";
import { shellQuote } from "../sandbox/service.js";

/** Where the sandbox writes the bytecode, under its /home/user. */
const PREFIX_DIR = ".bytecode";
/** What the supervisor and a python kernel import before any user code (runtime/agentbox_rt). */
const IMPORTS = 'import sys; sys.path.insert(0, "/opt/agentbox"); import agentbox_rt.main, agentbox_rt.kernels';
/** Bounds on what is taken from the sandbox: files, bytes each. */
const MAX_FILES = 4000;
const MAX_FILE_BYTES = 4 * 2 ** 20;
const PYC = /^([A-Za-z0-9_]+)\.([a-z]+-[0-9]+)\.pyc$/;

export interface BytecodeRun {
  /** A sandbox on the root (read-only), and its release. */
  box: Box;
  /** The image's python3, its path inside the image. */
  python: string;
  /** The root filesystem on the host, where the files go. */
  root: string;
  timeoutMs: number;
}

/** Makes the bytecode; returns how many files were added to the root. */
export async function warmBytecode(o: BytecodeRun): Promise<number> {
  const prefix = `${SANDBOX_HOME}/${PREFIX_DIR}`;
  const r = await o.box.command({
    command: `${shellQuote(o.python)} -I -X pycache_prefix=${prefix} -c ${shellQuote(IMPORTS)}`,
    cwd: SANDBOX_HOME,
    timeoutMs: o.timeoutMs,
  });
  if (r.exitCode !== 0) return 0;
  return copyInto(path.join(o.box.workspace, PREFIX_DIR), o.root);
}

/** A real directory (no link on the way) under `root`, or undefined. */
async function realDirUnder(root: string, parts: string[]): Promise<string | undefined> {
  let at = root;
  for (const part of parts) {
    if (part === "" || part === "." || part === "..") return undefined;
    at = path.join(at, part);
    const st = await fs.promises.lstat(at).catch(() => undefined);
    if (!st?.isDirectory()) return undefined;
  }
  return at;
}

/**
 * Copies `<from>/<dir>/<module>.<tag>.pyc` to `<root>/<dir>/__pycache__/` where `<root>/<dir>/<module>.py`
 * is a regular file: the sandbox's files are read without following links, written through a
 * temporary name and renamed (a link in the way is replaced, never followed).
 */
async function copyInto(from: string, root: string): Promise<number> {
  let copied = 0;
  const stack: string[][] = [[]];
  for (let rel = stack.pop(); rel !== undefined && copied < MAX_FILES; rel = stack.pop()) {
    const dir = path.join(from, ...rel);
    const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (entry.isDirectory()) {
        stack.push([...rel, entry.name]);
        continue;
      }
      const m = PYC.exec(entry.name);
      if (!m || !entry.isFile()) continue;
      const srcDir = await realDirUnder(root, rel);
      if (!srcDir) continue;
      const source = await fs.promises.lstat(path.join(srcDir, `${m[1]}.py`)).catch(() => undefined);
      if (!source?.isFile()) continue;
      const data = await readRegular(path.join(dir, entry.name));
      if (!data) continue;
      const cache = path.join(srcDir, "__pycache__");
      const st = await fs.promises.lstat(cache).catch(() => undefined);
      if (st && !st.isDirectory()) continue;
      if (!st) await fs.promises.mkdir(cache, { mode: 0o755 });
      const tmp = path.join(cache, `.${entry.name}.${process.pid}.tmp`);
      await fs.promises.writeFile(tmp, data, { mode: 0o644, flag: "wx" });
      await fs.promises.rename(tmp, path.join(cache, entry.name));
      copied += 1;
      if (copied >= MAX_FILES) break;
    }
  }
  return copied;
}

/** A regular file's bytes (not through a link, at most MAX_FILE_BYTES), or undefined. */
async function readRegular(file: string): Promise<Buffer | undefined> {
  let fh: fs.promises.FileHandle | undefined;
  try {
    fh = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    const st = await fh.stat();
    if (!st.isFile() || st.size > MAX_FILE_BYTES) return undefined;
    return await fh.readFile();
  } catch {
    return undefined;
  } finally {
    await fh?.close();
  }
}
