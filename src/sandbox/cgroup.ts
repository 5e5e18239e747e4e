// Resource groups: one cgroup per sandbox capping memory, process count and CPU, nested under the
// service's own cgroup. cgroup v1 (one hierarchy per controller) is what most hosts here have; a
// host with a unified v2 hierarchy that carries the controllers gets the v2 layout instead.
import fs from "node:fs";
import path from "node:path";
import type { Limits } from "../config.js";

const ROOT = "/sys/fs/cgroup";
const V1_CONTROLLERS = ["memory", "pids", "cpu", "cpuacct"] as const;
const PARENT = "agentbox";

export interface CgroupUsage {
  memoryBytes: number;
  cpuNs: number;
  oomKills: number;
}

export interface SandboxCgroup {
  /** Files the sandbox's launcher writes its own pid into, to join the group before it execs. */
  readonly procsFiles: string[];
  /** Memory, CPU and OOM kills (for metrics). */
  usage(): Promise<CgroupUsage>;
  /** Only the OOM kill count: one small kernel-rendered file, read before and after every run. */
  oomKills(): number;
  /** SIGKILLs every process in the group now (without waiting for them to go or removing the group). */
  kill(): Promise<void>;
  /** Kills every process left in the group and removes it. */
  destroy(): Promise<void>;
}

function ownCgroup(controller: string): string {
  for (const line of fs.readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const [, ctrls, p] = line.split(":");
    if (ctrls !== undefined && p !== undefined && ctrls.split(",").includes(controller)) return p;
  }
  return "/";
}

async function readNumber(file: string): Promise<number> {
  return Number((await safeRead(file)).trim()) || 0;
}

function isV2(): boolean {
  try {
    return fs.readFileSync(path.join(ROOT, "cgroup.controllers"), "utf8").includes("memory");
  } catch {
    return false;
  }
}

export class CgroupManager {
  private readonly v2 = isV2();
  private readonly parents: Record<string, string> = {};

  constructor() {
    if (this.v2) {
      const base = path.join(ROOT, ownCgroup(""), PARENT);
      fs.mkdirSync(base, { recursive: true });
      try {
        fs.writeFileSync(path.join(base, "cgroup.subtree_control"), "+memory +pids +cpu");
      } catch {
        // Controllers not delegated to us: limits will fail loudly at create time.
      }
      this.parents.unified = base;
      return;
    }
    for (const ctrl of V1_CONTROLLERS) {
      const mount = path.join(ROOT, ctrl);
      if (!fs.existsSync(mount)) throw new Error(`cgroup controller '${ctrl}' is not mounted at ${mount}`);
      const dir = path.join(mount, ownCgroup(ctrl), PARENT);
      fs.mkdirSync(dir, { recursive: true });
      this.parents[ctrl] = dir;
    }
  }

  async create(name: string, uid: number, limits: Limits): Promise<SandboxCgroup> {
    const write = (dir: string, file: string, value: string) => fs.promises.writeFile(path.join(dir, file), value);
    const quota = Math.round(limits.cpus * 100000);
    const dirs = this.v2
      ? [path.join(this.parents.unified as string, name)]
      : V1_CONTROLLERS.map((ctrl) => path.join(this.parents[ctrl] as string, name));
    try {
      await Promise.all(dirs.map((dir) => fs.promises.mkdir(dir, { recursive: true })));
      if (this.v2) {
        const dir = dirs[0] as string;
        await write(dir, "memory.max", String(limits.memoryMb * 2 ** 20));
        await write(dir, "memory.swap.max", "0");
        await write(dir, "pids.max", String(limits.pids));
        await write(dir, "cpu.max", `${quota} 100000`);
      } else {
        const [mem, pids, cpu] = dirs as [string, string, string, string];
        await Promise.all([
          write(mem, "memory.limit_in_bytes", String(limits.memoryMb * 2 ** 20)),
          write(pids, "pids.max", String(limits.pids)),
          write(cpu, "cpu.cfs_period_us", "100000").then(() => write(cpu, "cpu.cfs_quota_us", String(quota))),
        ]);
      }
      await Promise.all(dirs.map((dir) => fs.promises.chown(path.join(dir, "cgroup.procs"), uid, uid)));
    } catch (err) {
      await removeGroups(dirs).catch(() => {});
      throw err;
    }
    const v2 = this.v2;
    const memDir = dirs[0] as string;
    const oomFile = path.join(memDir, v2 ? "memory.events" : "memory.oom_control");
    // Read synchronously on purpose: a few bytes the kernel renders from counters (no disk, no
    // cgroup lock), ~10 us, where fs.promises.readFile takes four thread-pool round trips (~300 us
    // idle, far more when the pool is busy with workspace and cgroup cleanup) around every run.
    const oomKills = (): number => {
      try {
        return Number(/oom_kill (\d+)/.exec(fs.readFileSync(oomFile, "utf8"))?.[1] ?? 0);
      } catch {
        return 0;
      }
    };
    return {
      procsFiles: dirs.map((d) => path.join(d, "cgroup.procs")),
      oomKills,
      async usage(): Promise<CgroupUsage> {
        if (v2) {
          const [stat, memoryBytes, oom] = await Promise.all([
            safeRead(path.join(memDir, "cpu.stat")),
            readNumber(path.join(memDir, "memory.current")),
            oomKills(),
          ]);
          return { memoryBytes, cpuNs: Number(/usage_usec (\d+)/.exec(stat)?.[1] ?? 0) * 1000, oomKills: oom };
        }
        const acct = dirs[3] as string;
        const [memoryBytes, cpuNs, oom] = await Promise.all([
          readNumber(path.join(memDir, "memory.usage_in_bytes")),
          readNumber(path.join(acct, "cpuacct.usage")),
          oomKills(),
        ]);
        return { memoryBytes, cpuNs, oomKills: oom };
      },
      kill: () => killGroups(dirs),
      destroy: () => removeGroups(dirs),
    };
  }

  /** Every sandbox group that exists now, by name: the start-up sweep removes the ones no record owns. */
  async existing(): Promise<string[]> {
    const first = Object.values(this.parents)[0] as string;
    return (await fs.promises.readdir(first, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  }

  removeByName(name: string): Promise<void> {
    return removeGroups(Object.values(this.parents).map((p) => path.join(p, name)));
  }
}

async function safeRead(file: string): Promise<string> {
  try {
    return await fs.promises.readFile(file, "utf8");
  } catch {
    return "";
  }
}

/** SIGKILLs every process in the groups (a group already removed has none). */
async function killGroups(dirs: string[]): Promise<void> {
  await Promise.all(
    dirs.map(async (dir) => {
      for (const pid of (await safeRead(path.join(dir, "cgroup.procs"))).split("\n").filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // already gone
        }
      }
    }),
  );
}

async function removeGroups(dirs: string[]): Promise<void> {
  let left = dirs;
  for (let attempt = 0; attempt < 50; attempt++) {
    await killGroups(left);
    const results = await Promise.all(
      left.map((dir) =>
        fs.promises.rmdir(dir).then(
          () => true,
          (err: NodeJS.ErrnoException) => err.code === "ENOENT",
        ),
      ),
    );
    left = left.filter((_, i) => !results[i]);
    if (left.length === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`cgroups could not be removed: ${left.join(", ")}`);
}
