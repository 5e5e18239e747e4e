// A build's host-side work in a memory cgroup of its own, not the service's: pulling and unpacking
// (skopeo, umoci), copying its base onto its in-memory layer (a tmpfs: the copy's pages are charged
// to the group of the process that writes them, so without this up to the layer's size was charged
// to the service) and writing the result back. Limited to the layer's size plus headroom for the
// tools; past it the kernel reclaims or kills there, never in the service. One group per build:
//
//   <the service's own memory cgroup>/agentbox-builds/<service>/<build id>
//
// `<service>` names this service's templates directory, so services sharing a host sweep only
// their own leftovers. A command joins the group before it execs (a root shell writes its own pid,
// then drops to the build uid with setpriv where the command must not run as root).
import { execFile } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { CGROUP_ROOT, isV2, ownCgroup } from "../sandbox/cgroup.js";

const PARENT = "agentbox-builds";
/** Joins the group named by $0, then execs the rest. */
const JOIN = 'echo $$ > "$0" && exec "$@"';

export class BuildCgroup {
  private constructor(
    readonly dir: string,
    private readonly v2: boolean,
  ) {}

  /** This service's parent group (made if missing). */
  static parentOf(serviceKey: string): { dir: string; v2: boolean } {
    const v2 = isV2();
    const home = path.join(CGROUP_ROOT, v2 ? "" : "memory", ownCgroup(v2 ? "" : "memory"));
    const top = path.join(home, PARENT);
    const dir = path.join(top, crypto.createHash("sha256").update(serviceKey).digest("hex").slice(0, 16));
    fs.mkdirSync(dir, { recursive: true });
    if (v2) {
      // The memory controller handed down to the build groups (where the service's group delegates it).
      for (const d of [home, top, dir]) {
        try {
          fs.writeFileSync(path.join(d, "cgroup.subtree_control"), "+memory");
        } catch {
          // Not delegated: create() fails to set the limit and says so.
        }
      }
    }
    return { dir, v2 };
  }

  /** The build's group with its memory limit. */
  static async create(serviceKey: string, buildId: string, memoryBytes: number): Promise<BuildCgroup> {
    const parent = BuildCgroup.parentOf(serviceKey);
    const dir = path.join(parent.dir, buildId);
    await fs.promises.mkdir(dir, { recursive: true });
    const group = new BuildCgroup(dir, parent.v2);
    try {
      const bytes = String(Math.round(memoryBytes));
      if (parent.v2) {
        await fs.promises.writeFile(path.join(dir, "memory.max"), bytes);
        await fs.promises.writeFile(path.join(dir, "memory.swap.max"), "0").catch(() => {});
      } else await fs.promises.writeFile(path.join(dir, "memory.limit_in_bytes"), bytes);
    } catch (err) {
      await group.destroy();
      throw err;
    }
    return group;
  }

  /** Removes this service's build groups left by a stop during a build (none of its builds runs at start). */
  static async sweep(serviceKey: string): Promise<void> {
    const { dir } = BuildCgroup.parentOf(serviceKey);
    for (const name of await fs.promises.readdir(dir).catch(() => [] as string[])) {
      if (name.startsWith("bld_")) await new BuildCgroup(path.join(dir, name), isV2()).destroy();
    }
  }

  get procsFile(): string {
    return path.join(this.dir, "cgroup.procs");
  }

  /**
   * The command line that runs `file args` in the group: as root, or as `uid` (dropped to after
   * joining). A spawn of it must not set a uid of its own.
   */
  wrap(file: string, args: string[], uid?: number): [string, string[]] {
    const drop = uid === undefined ? [] : ["/usr/bin/setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups"];
    return ["/bin/sh", ["-c", JOIN, this.procsFile, ...drop, file, ...args]];
  }

  /** Runs a host command (as root) in the group; its output bounded, killed when `signal` aborts. */
  run(file: string, args: string[], signal?: AbortSignal): Promise<void> {
    const [f, a] = this.wrap(file, args);
    return new Promise((resolve, reject) => {
      execFile(f, a, { maxBuffer: 1 << 20, killSignal: "SIGKILL", ...(signal ? { signal } : {}) }, (err) =>
        err ? reject(err) : resolve(),
      );
    });
  }

  /** Sets the group's memory limit (a limit below what it holds now is refused by the kernel after it tried to reclaim). */
  async limitMb(mb: number): Promise<void> {
    await fs.promises.writeFile(path.join(this.dir, this.v2 ? "memory.max" : "memory.limit_in_bytes"), String(mb * 2 ** 20));
  }

  /** The most memory the group has been charged at once, in bytes (0 when the kernel does not say). */
  async peakBytes(): Promise<number> {
    const file = path.join(this.dir, this.v2 ? "memory.peak" : "memory.max_usage_in_bytes");
    return Number((await fs.promises.readFile(file, "utf8").catch(() => "0")).trim()) || 0;
  }

  /** Kills what is left in the group and removes it (what it had charged goes to its parent). */
  async destroy(): Promise<void> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const procs = await fs.promises.readFile(this.procsFile, "utf8").catch(() => "");
      for (const pid of procs.split("\n").filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // gone already
        }
      }
      try {
        await fs.promises.rmdir(this.dir);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      }
      await new Promise((r) => setTimeout(r, 20 + attempt * 10));
    }
  }
}
