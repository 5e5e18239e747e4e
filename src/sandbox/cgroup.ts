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
  usage(): CgroupUsage;
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

function readNumber(file: string): number {
  try {
    return Number(fs.readFileSync(file, "utf8").trim()) || 0;
  } catch {
    return 0;
  }
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

  create(name: string, uid: number, limits: Limits): SandboxCgroup {
    const dirs: string[] = [];
    const write = (dir: string, file: string, value: string) => fs.writeFileSync(path.join(dir, file), value);
    const quota = Math.round(limits.cpus * 100000);
    if (this.v2) {
      const dir = path.join(this.parents.unified as string, name);
      fs.mkdirSync(dir, { recursive: true });
      write(dir, "memory.max", String(limits.memoryMb * 2 ** 20));
      write(dir, "memory.swap.max", "0");
      write(dir, "pids.max", String(limits.pids));
      write(dir, "cpu.max", `${quota} 100000`);
      dirs.push(dir);
    } else {
      for (const ctrl of V1_CONTROLLERS) {
        const dir = path.join(this.parents[ctrl] as string, name);
        fs.mkdirSync(dir, { recursive: true });
        dirs.push(dir);
      }
      const [mem, pids, cpu] = dirs as [string, string, string, string];
      write(mem, "memory.limit_in_bytes", String(limits.memoryMb * 2 ** 20));
      write(pids, "pids.max", String(limits.pids));
      write(cpu, "cpu.cfs_period_us", "100000");
      write(cpu, "cpu.cfs_quota_us", String(quota));
    }
    for (const dir of dirs) fs.chownSync(path.join(dir, "cgroup.procs"), uid, uid);
    const v2 = this.v2;
    return {
      procsFiles: dirs.map((d) => path.join(d, "cgroup.procs")),
      usage(): CgroupUsage {
        if (v2) {
          const dir = dirs[0] as string;
          const cpu = /usage_usec (\d+)/.exec(safeRead(path.join(dir, "cpu.stat")));
          const oom = /oom_kill (\d+)/.exec(safeRead(path.join(dir, "memory.events")));
          return {
            memoryBytes: readNumber(path.join(dir, "memory.current")),
            cpuNs: Number(cpu?.[1] ?? 0) * 1000,
            oomKills: Number(oom?.[1] ?? 0),
          };
        }
        const [mem, , , acct] = dirs as [string, string, string, string];
        const oom = /oom_kill (\d+)/.exec(safeRead(path.join(mem, "memory.oom_control")));
        return {
          memoryBytes: readNumber(path.join(mem, "memory.usage_in_bytes")),
          cpuNs: readNumber(path.join(acct, "cpuacct.usage")),
          oomKills: Number(oom?.[1] ?? 0),
        };
      },
      destroy: () => removeGroups(dirs),
    };
  }

  /** Every sandbox group that exists now, by name: the start-up sweep removes the ones no record owns. */
  existing(): string[] {
    const first = Object.values(this.parents)[0] as string;
    return fs
      .readdirSync(first, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  }

  removeByName(name: string): Promise<void> {
    return removeGroups(Object.values(this.parents).map((p) => path.join(p, name)));
  }
}

function safeRead(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

async function removeGroups(dirs: string[]): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    let left = 0;
    for (const dir of dirs) {
      if (!fs.existsSync(dir)) continue;
      for (const pid of safeRead(path.join(dir, "cgroup.procs")).split("\n").filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // already gone
        }
      }
      try {
        fs.rmdirSync(dir);
      } catch {
        left++;
      }
    }
    if (left === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`cgroups could not be removed: ${dirs.join(", ")}`);
}
