// The service's own CPU group: its process (HTTP loop, admission, worker threads; not the spawner,
// whose launches and teardowns are the sandboxes' work) in a cgroup of its own beside the sandboxes' shared `agentbox` group, with a weight of
// its own (cpu controller only: no memory or process caps on the service).
//
//   <the service's own cgroup>/agentbox-services/<service>
//
// Why: a process outside any group weighs one busy process (with the kernel's autogroup, its whole
// session does) against the sandboxes' two per core, so on a saturated 2-core host the service's
// event loop got about a sixth of the CPU, and requests it had accepted sat unread in its sockets
// for seconds (the one-key load on a loaded host: accepted creates' p99 19.7 s outside the group,
// 2.4 s in it). The service takes only what it needs (~0.3–0.6 core at 800 answers/s here); the
// sandboxes keep the rest.
import fs from "node:fs";
import path from "node:path";
import { CGROUP_ROOT, isV2, ownCgroup } from "./cgroup.js";

const PARENT = "agentbox-services";
const V1_CPU_SHARES = 1024;
const V2_CPU_WEIGHT = 100;

export class ServiceCpuGroup {
  private constructor(
    /** The group this process joined. */
    readonly dir: string,
    /** The cgroup.procs file of the group it came from. */
    private readonly homeProcs: string,
  ) {}

  /**
   * Moves this process into its group, the shared parent weighing `weight` busy processes (every
   * service on the host sets the same). Throws when the host does not let it (the caller logs it
   * and the service runs where it was started); the process is back home then.
   */
  static join(service: string, weight: number): ServiceCpuGroup {
    const v2 = isV2();
    const home = path.join(CGROUP_ROOT, v2 ? "" : "cpu", ownCgroup(v2 ? "" : "cpu"));
    const parent = path.join(home, PARENT);
    const dir = path.join(parent, service);
    const homeProcs = path.join(home, "cgroup.procs");
    fs.mkdirSync(dir, { recursive: true });
    sweep(parent, service);
    fs.writeFileSync(path.join(dir, "cgroup.procs"), String(process.pid));
    try {
      if (v2) {
        // The parent's weight needs the cpu controller handed down to it (possible only where the
        // service's own group delegates it).
        fs.writeFileSync(path.join(home, "cgroup.subtree_control"), "+cpu");
        fs.writeFileSync(path.join(parent, "cpu.weight"), String(Math.min(10_000, Math.round(V2_CPU_WEIGHT * weight))));
      } else fs.writeFileSync(path.join(parent, "cpu.shares"), String(Math.max(2, Math.round(V1_CPU_SHARES * weight))));
    } catch (err) {
      fs.writeFileSync(homeProcs, String(process.pid));
      try {
        fs.rmdirSync(dir);
      } catch {
        // Another service's process in it: it stays.
      }
      throw err;
    }
    return new ServiceCpuGroup(dir, homeProcs);
  }

  /** Moves a child process (the spawner) back to the group the service came from: its work is not the service's. */
  release(pid: number): void {
    try {
      fs.writeFileSync(this.homeProcs, String(pid));
    } catch {
      // Gone already: its replacement is released when it starts.
    }
  }

  /**
   * Moves the process back where it started (at shutdown, after the spawner stopped). Its group is
   * left to the next start's sweep: children that end with the process (esbuild's service) are
   * still in it now.
   */
  leave(): void {
    try {
      fs.writeFileSync(this.homeProcs, String(process.pid));
    } catch {
      // The home group is gone: the process ends in its own group, which the next sweep removes.
    }
  }
}

/** Removes the empty groups of services that have stopped (the kernel refuses to remove one with a process in it). */
function sweep(parent: string, keep: string): void {
  let names: string[];
  try {
    names = fs
      .readdirSync(parent, { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name !== keep)
      .map((d) => d.name);
  } catch {
    return;
  }
  for (const name of names) {
    try {
      fs.rmdirSync(path.join(parent, name));
    } catch {
      // A running service's group (EBUSY): it stays.
    }
  }
}
