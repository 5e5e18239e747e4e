// A memory cgroup per replica process, so a replica that outgrows its limit is killed by the kernel
// alone (and restarted by its supervisor) instead of pressing on the service or the host:
//   cgroup v1: <memory mount>/<service's own group>/agentbox-replicas/<replica>/memory.limit_in_bytes
//   cgroup v2: <unified>/<service's own group's parent>/agentbox-replicas/<replica>/memory.max
// On v2 a process may only join a leaf, and the service's own group holds the service, so the
// replicas' group is made next to it. Without a writable memory controller (an unprivileged
// service, a container without delegation) replicas run without a limit and the service logs it.
import fs from "node:fs";
import path from "node:path";

const ROOT = "/sys/fs/cgroup";
const GROUP = "agentbox-replicas";

function ownGroup(controller: string | ""): string | undefined {
  try {
    for (const line of fs.readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
      const [, ctrls, p] = line.split(":");
      if (ctrls === undefined || p === undefined) continue;
      if (controller === "" ? ctrls === "" : ctrls.split(",").includes(controller)) return p;
    }
  } catch {
    // no /proc: no cgroups
  }
  return undefined;
}

interface Layout {
  /** The directory that holds one group per replica. */
  base: string;
  limitFile: string;
}

function layout(): Layout | undefined {
  try {
    if (fs.readFileSync(path.join(ROOT, "cgroup.controllers"), "utf8").includes("memory")) {
      const own = ownGroup("") ?? "/";
      const parent = path.join(ROOT, path.dirname(own));
      const base = path.join(parent, GROUP);
      fs.mkdirSync(base, { recursive: true });
      fs.writeFileSync(path.join(base, "cgroup.subtree_control"), "+memory");
      return { base, limitFile: "memory.max" };
    }
  } catch {
    // not v2, or the controller is not ours
  }
  const own = ownGroup("memory");
  const mount = path.join(ROOT, "memory");
  if (own === undefined || !fs.existsSync(mount)) return undefined;
  try {
    const base = path.join(mount, own, GROUP);
    fs.mkdirSync(base, { recursive: true });
    return { base, limitFile: "memory.limit_in_bytes" };
  } catch {
    return undefined;
  }
}

let cached: Layout | null | undefined;

/** A replica's memory group; `undefined` when this host gives the service no memory controller. */
export class MemoryLimit {
  private constructor(private readonly dir: string) {}

  static create(name: string, limitMb: number): MemoryLimit | undefined {
    if (cached === undefined) cached = layout() ?? null;
    if (cached === null) return undefined;
    const dir = path.join(cached.base, name);
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, cached.limitFile), String(Math.round(limitMb * 2 ** 20)));
      return new MemoryLimit(dir);
    } catch {
      return undefined;
    }
  }

  /** Moves a process into the group (its children, started later, stay in it). */
  add(pid: number): void {
    fs.writeFileSync(path.join(this.dir, "cgroup.procs"), String(pid));
  }

  /** Removes the group once its processes are gone (a group with processes cannot be removed: left as is). */
  remove(): void {
    try {
      fs.rmdirSync(this.dir);
    } catch {
      // still has a process (it is being killed) or already gone
    }
  }
}
