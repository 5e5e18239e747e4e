// Resource groups: one cgroup per sandbox capping memory, process count and CPU, nested in a group
// per tenant that caps the tenant's sandboxes together and gives each tenant an equal CPU weight:
//
//   <service's own cgroup>/agentbox/<service>/pool/<sandbox>       started, no tenant yet (warm pool)
//   <service's own cgroup>/agentbox/<service>/t-<tenant>/<sandbox>  handed to a tenant
//
// `agentbox` may be shared by several services on one host; `<service>` (a hash of the workspace
// dir) is this one's alone. A sandbox is started before its tenant is known (the warm pool), so it
// is moved into its tenant's group when it is handed out: a new group with the same limits is made
// under the tenant's and every process is moved into it (cgroup directories cannot be re-parented).
// cgroup v1 (one hierarchy per controller) is what most hosts here have; a host with a unified v2
// hierarchy that carries the controllers gets the same layout there.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Limits } from "./settings.js";

export const CGROUP_ROOT = "/sys/fs/cgroup";
const ROOT = CGROUP_ROOT;
const V1_CONTROLLERS = ["memory", "pids", "cpu", "cpuacct"] as const;
/**
 * The v1 freezer hierarchy, joined too where the host mounts it (after the four above, so their
 * positions in a group's directory list stay fixed): pause() freezes the sandbox's group there.
 */
const V1_FREEZER = "freezer";
/** How long a freeze may take to settle (a task in an uninterruptible sleep delays it). */
const FREEZE_WAIT_MS = 10_000;
const PARENT = "agentbox";
const TENANT_PREFIX = "t-";
/**
 * Sandboxes not handed out yet (starting, or waiting in the warm pool) share one group, weighted
 * as one tenant per start that may run at once: starts (which serve every tenant's creates) keep
 * going under load, and they and whatever pool sandboxes do while they wait cannot take more of a
 * contended CPU than that.
 */
const POOL = "pool";
/** Every tenant group gets the same CPU weight, so busy tenants split the CPU evenly. */
const V1_CPU_SHARES = 1024;
const V2_CPU_WEIGHT = 100;

export interface CgroupUsage {
  memoryBytes: number;
  cpuNs: number;
  oomKills: number;
}

/** What a tenant's group caps: all of its sandboxes together. */
export interface TenantLimits {
  memoryMb: number;
  processes: number;
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
  /**
   * Freezes (true) or thaws (false) every process of the group, waiting until the kernel reports
   * it done; throws when the host has no freezer.
   */
  freeze(frozen: boolean): Promise<void>;
}

/** This process's cgroup path in the hierarchy of `controller` ("" on v2). */
export function ownCgroup(controller: string): string {
  for (const line of fs.readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const [, ctrls, p] = line.split(":");
    if (ctrls !== undefined && p !== undefined && ctrls.split(",").includes(controller)) return p;
  }
  return "/";
}

async function readNumber(file: string): Promise<number> {
  return Number((await safeRead(file)).trim()) || 0;
}

export function isV2(): boolean {
  try {
    return fs.readFileSync(path.join(ROOT, "cgroup.controllers"), "utf8").includes("memory");
  } catch {
    return false;
  }
}

const write = (dir: string, file: string, value: string) => fs.promises.writeFile(path.join(dir, file), value);

/** A freeze (or thaw) that did not settle in time: a task in an uninterruptible sleep (disk I/O on
 * a busy host) holds the group in FREEZING. The group is thawed again; a later try may succeed. */
export class FreezeTimeout extends Error {}

/** The tenant's group name: tenant ids are any string, a directory name is not. */
export function tenantGroupName(tenantId: string): string {
  return TENANT_PREFIX + crypto.createHash("sha256").update(tenantId).digest("hex").slice(0, 16);
}

/** One sandbox's group, in one directory per hierarchy; the directories change when it moves to its tenant. */
class Group implements SandboxCgroup {
  /** Where the group is moving to while its processes are moved. */
  private next: string[] | undefined;
  private moving: Promise<void> = Promise.resolve();
  /**
   * The memory group the sandbox started in, kept (empty of processes) after a move until the
   * sandbox ends: what was charged there stays charged there (the kernel does not move charges)
   * and is uncharged there when freed, so usage() reads it live and adds it to the sandbox's figure.
   */
  private formerMemDir: string | undefined;

  constructor(
    private dirs: string[],
    private readonly v2: boolean,
  ) {}

  /** Where the group is now, relative to the service's group (`name` or `t-.../name`). */
  get place(): string {
    const dir = (this.next ?? this.dirs)[0] as string;
    const parent = path.basename(path.dirname(dir));
    return parent.startsWith(TENANT_PREFIX) || parent === POOL ? `${parent}/${path.basename(dir)}` : path.basename(dir);
  }

  get name(): string {
    return path.basename(this.dirs[0] as string);
  }

  /** Where a process joining now must go (a restarted sandbox process joins the group it moves to). */
  get procsFiles(): string[] {
    return (this.next ?? this.dirs).map((d) => path.join(d, "cgroup.procs"));
  }

  private get memDir(): string {
    return (this.next ?? this.dirs)[0] as string;
  }

  // Read synchronously on purpose: a few bytes the kernel renders from counters (no disk, no
  // cgroup lock), ~10 us, where fs.promises.readFile takes four thread-pool round trips (~300 us
  // idle, far more when the pool is busy with workspace and cgroup cleanup) around every run.
  oomKills(): number {
    try {
      const file = path.join(this.memDir, this.v2 ? "memory.events" : "memory.oom_control");
      return Number(/oom_kill (\d+)/.exec(fs.readFileSync(file, "utf8"))?.[1] ?? 0);
    } catch {
      return 0;
    }
  }

  private memoryFile(dir: string): string {
    return path.join(dir, this.v2 ? "memory.current" : "memory.usage_in_bytes");
  }

  /**
   * Memory charged to the group the sandbox started in (0 when it never moved): while it moves,
   * that group still holds some of its processes, and afterwards it holds what they had charged.
   */
  private chargedBefore(): Promise<number> {
    const before = this.next ? this.dirs[0] : this.formerMemDir;
    return before ? readNumber(this.memoryFile(before)) : Promise.resolve(0);
  }

  async usage(): Promise<CgroupUsage> {
    const dirs = this.next ?? this.dirs;
    const memDir = dirs[0] as string;
    if (this.v2) {
      const [stat, memoryBytes, before] = await Promise.all([
        safeRead(path.join(memDir, "cpu.stat")),
        readNumber(this.memoryFile(memDir)),
        this.chargedBefore(),
      ]);
      return {
        memoryBytes: memoryBytes + before,
        cpuNs: Number(/usage_usec (\d+)/.exec(stat)?.[1] ?? 0) * 1000,
        oomKills: this.oomKills(),
      };
    }
    const [memoryBytes, cpuNs, before] = await Promise.all([
      readNumber(this.memoryFile(memDir)),
      readNumber(path.join(dirs[3] as string, "cpuacct.usage")),
      this.chargedBefore(),
    ]);
    return { memoryBytes: memoryBytes + before, cpuNs, oomKills: this.oomKills() };
  }

  async kill(): Promise<void> {
    await killGroups([...this.dirs, ...(this.next ?? [])]);
    // A frozen task keeps a SIGKILL pending until it is thawed (v1).
    if (this.frozen) await this.freeze(false).catch(() => {});
  }

  async destroy(): Promise<void> {
    await this.moving;
    await removeGroups(this.formerMemDir ? [...this.dirs, this.formerMemDir] : this.dirs);
  }

  private frozen = false;

  /** The freezer's directory: the v1 freezer hierarchy's, or the unified one. */
  private freezerDir(): string | undefined {
    const dirs = this.next ?? this.dirs;
    if (this.v2) return dirs[0];
    return dirs.find((d) => d.startsWith(`${ROOT}/${V1_FREEZER}/`));
  }

  async freeze(frozen: boolean): Promise<void> {
    // Processes still moving into the tenant's group would land thawed in the new one.
    await this.moving;
    const dir = this.freezerDir();
    if (!dir) throw new Error("this host has no cgroup freezer");
    this.frozen = frozen;
    const [file, value, done] = this.v2
      ? ["cgroup.freeze", frozen ? "1" : "0", (s: string) => new RegExp(`^frozen ${frozen ? 1 : 0}$`, "m").test(s)]
      : ["freezer.state", frozen ? "FROZEN" : "THAWED", (s: string) => s.trim() === (frozen ? "FROZEN" : "THAWED")];
    const stateFile = this.v2 ? "cgroup.events" : "freezer.state";
    await write(dir, file, value);
    for (const deadline = Date.now() + FREEZE_WAIT_MS; ; ) {
      if (done(await safeRead(path.join(dir, stateFile)))) return;
      if (Date.now() > deadline) {
        if (frozen) await write(dir, file, this.v2 ? "0" : "THAWED").catch(() => {});
        this.frozen = false;
        throw new FreezeTimeout(`the sandbox's processes did not ${frozen ? "freeze" : "thaw"} within ${FREEZE_WAIT_MS} ms`);
      }
      // v1 re-tries the freeze of tasks that were busy when it reads FREEZING: write again.
      if (frozen && !this.v2) await write(dir, file, value).catch(() => {});
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /**
   * Moves every process into `to` (groups already made, limits set), then removes the old groups.
   * A process forked while we move is born in the old group, so the old groups are read again
   * until they are empty; one still forked after that is killed with the old group. Memory already
   * charged stays with the old memory group (kept until the sandbox ends, see formerMemDir); what
   * the sandbox allocates from now on counts against its tenant. One write at a time: the first waits for an RCU grace
   * period (milliseconds, more under load), the ones right after it do not.
   */
  moveTo(to: string[]): Promise<void> {
    const from = this.dirs;
    this.next = to;
    this.moving = (async () => {
      try {
        for (let round = 0; round < 20; round++) {
          let moved = 0;
          for (const [i, dir] of from.entries()) {
            for (const pid of (await safeRead(path.join(dir, "cgroup.procs"))).split("\n").filter(Boolean)) {
              moved += 1;
              await write(to[i] as string, "cgroup.procs", pid).catch((err: NodeJS.ErrnoException) => {
                if (err.code !== "ESRCH") throw err;
              });
            }
          }
          if (moved === 0) break;
        }
      } finally {
        this.dirs = to;
        this.next = undefined;
        // The old memory group is kept (see formerMemDir); a process forked into it after the
        // last round is killed all the same.
        // Named before the awaits: usage() in between must still add what is charged there.
        const [memDir, ...others] = from as [string, ...string[]];
        this.formerMemDir = memDir;
        await killGroups([memDir]);
        await removeGroups(others);
      }
    })();
    return this.moving;
  }
}

export class CgroupManager {
  private readonly v2 = isV2();
  /** The service's group in each hierarchy (`unified` on v2). */
  private readonly parents: Record<string, string> = {};
  /** Tenant groups made (or being made) by this process, by group name. */
  private readonly tenants = new Map<string, Promise<string[]>>();

  /**
   * `service`: a name for this service's own group, the same across its restarts. `memoryMb`: the
   * memory of all its sandboxes together. `parallelStarts`: sandbox starts that may run at once.
   * `cpuWeight`: the CPU weight of all sandboxes on the host together, in busy host processes.
   */
  constructor(
    service: string,
    memoryMb: number,
    private readonly parallelStarts = 1,
    cpuWeight = 1,
  ) {
    const bytes = String(Math.round(memoryMb * 2 ** 20));
    if (this.v2) {
      const top = path.join(ROOT, ownCgroup(""), PARENT);
      const base = path.join(top, service);
      fs.mkdirSync(base, { recursive: true });
      try {
        for (const dir of [top, base]) fs.writeFileSync(path.join(dir, "cgroup.subtree_control"), "+memory +pids +cpu");
        fs.writeFileSync(path.join(base, "memory.max"), bytes);
        fs.writeFileSync(path.join(top, "cpu.weight"), String(Math.min(10_000, Math.round(V2_CPU_WEIGHT * cpuWeight))));
      } catch {
        // Controllers not delegated to us: limits will fail loudly at create time.
      }
      this.parents.unified = base;
      this.makePoolGroup();
      return;
    }
    for (const ctrl of V1_CONTROLLERS) {
      const mount = path.join(ROOT, ctrl);
      if (!fs.existsSync(mount)) throw new Error(`cgroup controller '${ctrl}' is not mounted at ${mount}`);
      const dir = path.join(mount, ownCgroup(ctrl), PARENT, service);
      fs.mkdirSync(dir, { recursive: true });
      this.parents[ctrl] = dir;
    }
    const freezer = path.join(ROOT, V1_FREEZER);
    if (fs.existsSync(freezer)) {
      const dir = path.join(freezer, ownCgroup(V1_FREEZER), PARENT, service);
      fs.mkdirSync(dir, { recursive: true });
      this.parents[V1_FREEZER] = dir;
    }
    fs.writeFileSync(path.join(this.parents.memory as string, "memory.limit_in_bytes"), bytes);
    // The shared `agentbox` group's weight against the host's processes (every service here sets the same).
    fs.writeFileSync(
      path.join(path.dirname(this.parents.cpu as string), "cpu.shares"),
      String(Math.max(2, Math.round(V1_CPU_SHARES * cpuWeight))),
    );
    this.makePoolGroup();
  }

  private makePoolGroup(): void {
    const dirs = this.dirsOf(POOL);
    for (const dir of dirs) fs.mkdirSync(dir, { recursive: true });
    try {
      if (this.v2) {
        fs.writeFileSync(path.join(dirs[0] as string, "cgroup.subtree_control"), "+memory +pids +cpu");
        fs.writeFileSync(path.join(dirs[0] as string, "cpu.weight"), String(Math.min(10_000, V2_CPU_WEIGHT * this.parallelStarts)));
      } else fs.writeFileSync(path.join(dirs[2] as string, "cpu.shares"), String(V1_CPU_SHARES * this.parallelStarts));
    } catch {
      // Controllers not delegated to us: limits will fail loudly at create time.
    }
  }

  private dirsOf(place: string): string[] {
    return Object.values(this.parents).map((p) => path.join(p, place));
  }

  /** A sandbox group with its own limits, in the pool's group (no tenant yet: see assign()). */
  async create(name: string, uid: number, limits: Limits): Promise<SandboxCgroup> {
    const dirs = this.dirsOf(`${POOL}/${name}`);
    await this.makeSandboxGroups(dirs, uid, limits);
    return new Group(dirs, this.v2);
  }

  /**
   * The group of a sandbox that an earlier process of this service moved into its tenant's group
   * (a sandbox kept running by the sandbox host); undefined when it is not there.
   */
  open(name: string, tenantId: string): SandboxCgroup | undefined {
    const dirs = this.dirsOf(`${tenantGroupName(tenantId)}/${name}`);
    return dirs.every((dir) => fs.existsSync(dir)) ? new Group(dirs, this.v2) : undefined;
  }

  private async makeSandboxGroups(dirs: string[], uid: number, limits: Limits): Promise<void> {
    const quota = Math.round(limits.cpus * 100000);
    try {
      await Promise.all(dirs.map((dir) => fs.promises.mkdir(dir, { recursive: true })));
      if (this.v2) {
        const dir = dirs[0] as string;
        await Promise.all([
          write(dir, "memory.max", String(limits.memoryMb * 2 ** 20)),
          write(dir, "memory.swap.max", "0"),
          write(dir, "pids.max", String(limits.pids)),
          write(dir, "cpu.max", `${quota} 100000`),
        ]);
      } else {
        const [mem, pids, cpu] = dirs as [string, string, string, string];
        await Promise.all([
          write(mem, "memory.limit_in_bytes", String(limits.memoryMb * 2 ** 20)),
          write(pids, "pids.max", String(limits.pids)),
          write(cpu, "cpu.cfs_period_us", "100000").then(() => write(cpu, "cpu.cfs_quota_us", String(quota))),
        ]);
      }
      // The launcher joins as the sandbox's uid (also when a sandbox process is restarted).
      await Promise.all(dirs.map((dir) => fs.promises.chown(path.join(dir, "cgroup.procs"), uid, uid)));
    } catch (err) {
      await removeGroups(dirs).catch(() => {});
      throw err;
    }
  }

  /** Makes the tenant's group if this process has not yet, with its limits; its directories. */
  private tenantDirs(tenantId: string, limits: TenantLimits): Promise<string[]> {
    const name = tenantGroupName(tenantId);
    let made = this.tenants.get(name);
    if (!made) {
      const dirs = this.dirsOf(name);
      made = (async () => {
        await Promise.all(dirs.map((dir) => fs.promises.mkdir(dir, { recursive: true })));
        if (this.v2) {
          await write(dirs[0] as string, "cgroup.subtree_control", "+memory +pids +cpu").catch(() => {});
          await write(dirs[0] as string, "cpu.weight", String(V2_CPU_WEIGHT));
        } else {
          await write(dirs[2] as string, "cpu.shares", String(V1_CPU_SHARES));
        }
        await this.writeTenantLimits(dirs, limits);
        return dirs;
      })();
      this.tenants.set(name, made);
      made.catch(() => this.tenants.delete(name));
    }
    return made;
  }

  private async writeTenantLimits(dirs: string[], limits: TenantLimits): Promise<void> {
    const bytes = String(Math.round(limits.memoryMb * 2 ** 20));
    if (this.v2) {
      const dir = dirs[0] as string;
      await Promise.all([write(dir, "memory.max", bytes), write(dir, "pids.max", String(limits.processes))]);
    } else {
      await Promise.all([
        write(dirs[0] as string, "memory.limit_in_bytes", bytes),
        write(dirs[1] as string, "pids.max", String(limits.processes)),
      ]);
    }
  }

  /**
   * Moves a sandbox's group (and every process in it) into its tenant's group: a new group with
   * the sandbox's own limits under the tenant's, then the processes (see Group.moveTo).
   */
  async assign(group: SandboxCgroup, tenantId: string, uid: number, limits: Limits, tenant: TenantLimits): Promise<void> {
    const g = group as Group;
    const target = (await this.tenantDirs(tenantId, tenant)).map((dir) => path.join(dir, g.name));
    await this.makeSandboxGroups(target, uid, limits);
    await g.moveTo(target);
  }

  /**
   * Sets a tenant's limits on its group now (when its quotas change). A memory limit below what
   * the tenant's sandboxes use now is refused by the kernel (EBUSY) after it tried to reclaim.
   */
  async applyTenantLimits(tenantId: string, limits: TenantLimits): Promise<void> {
    const name = tenantGroupName(tenantId);
    const dirs = this.dirsOf(name);
    if (!this.tenants.has(name) && !fs.existsSync(dirs[0] as string)) return; // no group yet: made with the new limits
    await this.writeTenantLimits(await this.tenantDirs(tenantId, limits), limits);
  }

  /** Where a sandbox's group is now, relative to the service's group. */
  placeOf(group: SandboxCgroup): string {
    return (group as Group).place;
  }

  /**
   * Every sandbox group under the service's group now, as `pool/name` (no tenant yet),
   * `t-.../name`, or `name` (an earlier layout): the start-up sweep removes the ones no live
   * sandbox is in.
   */
  async existing(): Promise<string[]> {
    const first = Object.values(this.parents)[0] as string;
    const out: string[] = [];
    for (const d of await subdirs(first)) {
      if (d.startsWith(TENANT_PREFIX) || d === POOL) for (const s of await subdirs(path.join(first, d))) out.push(`${d}/${s}`);
      else out.push(d);
    }
    return out;
  }

  /** Removes a sandbox group found by existing(), killing anything left in it. */
  removeByName(place: string): Promise<void> {
    return removeGroups(this.dirsOf(place));
  }

  /** Removes every tenant group that has no sandbox group left in it (the others are kept). */
  async removeEmptyTenants(): Promise<void> {
    const first = Object.values(this.parents)[0] as string;
    for (const name of await subdirs(first)) {
      if (!name.startsWith(TENANT_PREFIX) || (await subdirs(path.join(first, name))).length > 0) continue;
      this.tenants.delete(name);
      await Promise.all(this.dirsOf(name).map((dir) => fs.promises.rmdir(dir).catch(() => {})));
    }
  }

  /** At stop: removes the empty tenant groups, the pool's and the service's own group if nothing is left in them. */
  async removeEmpty(): Promise<void> {
    await this.removeEmptyTenants();
    await Promise.all(this.dirsOf(POOL).map((dir) => fs.promises.rmdir(dir).catch(() => {})));
    await Promise.all(Object.values(this.parents).map((dir) => fs.promises.rmdir(dir).catch(() => {})));
  }

  /**
   * Groups of an earlier layout, directly under the shared `agentbox` group, by name: the start-up
   * sweep removes the ones named like this service's workspaces.
   */
  async legacy(): Promise<string[]> {
    return subdirs(path.dirname(Object.values(this.parents)[0] as string));
  }

  removeLegacy(name: string): Promise<void> {
    return removeGroups(Object.values(this.parents).map((p) => path.join(path.dirname(p), name)));
  }
}

async function subdirs(dir: string): Promise<string[]> {
  try {
    return (await fs.promises.readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return [];
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

/**
 * Kills what is left in the groups and removes them. A killed process can take a while to be gone
 * on a busy host (a large node kernel unmapping its heap), so this retries for up to ~30 s, more
 * slowly as it goes; it runs off the request path.
 */
async function removeGroups(dirs: string[]): Promise<void> {
  let left = dirs;
  // A group left frozen (a paused sandbox at a crash) holds its killed tasks until it is thawed.
  await Promise.all(
    dirs.filter((d) => d.startsWith(`${ROOT}/${V1_FREEZER}/`)).map((d) => write(d, "freezer.state", "THAWED").catch(() => {})),
  );
  for (let attempt = 0; attempt < 150; attempt++) {
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
    await new Promise((r) => setTimeout(r, Math.min(250, 20 + attempt * 5)));
  }
  throw new Error(`cgroups could not be removed: ${left.join(", ")}`);
}
