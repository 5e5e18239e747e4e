// CPU accounting for a benchmark's whole process tree: the benchmark joins a fresh cgroup v1
// `cpuacct` group before it starts the service, so the service, its spawner and every sandbox
// (nested below the service's own group) are counted there. What the service spends is that
// total less the benchmark's own CPU (its load-generating clients run in the same process).
import fs from "node:fs";
import path from "node:path";

const ROOT = "/sys/fs/cgroup/cpuacct";

export interface CpuAccount {
  /** CPU ms spent by the whole tree since the group was joined. */
  treeMs(): number;
  /** CPU ms spent by this process alone. */
  ownMs(): number;
  /** Leaves the group and removes it. */
  close(): void;
}

/** Joins a fresh accounting group; undefined where there is none (cgroup v2, or not root). */
export function joinCpuAccount(): CpuAccount | undefined {
  const dir = path.join(ROOT, `bench-${process.pid}`);
  try {
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, "tasks"), String(process.pid));
  } catch {
    return undefined;
  }
  const own = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  return {
    treeMs: () => Number(fs.readFileSync(path.join(dir, "cpuacct.usage"), "utf8")) / 1e6,
    ownMs: own,
    close() {
      fs.writeFileSync(path.join(ROOT, "tasks"), String(process.pid));
      removeGroups(dir);
    },
  };
}

/** Removes a group and the (empty) groups the service left below it, deepest first. */
function removeGroups(dir: string): void {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeGroups(path.join(dir, entry.name));
  }
  try {
    fs.rmdirSync(dir);
  } catch {
    // a process still in it keeps it; nothing is lost but an empty directory
  }
}
