// What a sandbox leaves on the host, to assert that an ended one left nothing: mounts of its
// workspace, its cgroups and the processes in them. Also a runner for the operator CLI.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { entryArgs } from "./entry.js";

const CGROUP_ROOT = "/sys/fs/cgroup";
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

/** Mount points at or under `dir`. */
export function mountsUnder(dir: string): string[] {
  return fs
    .readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4])
    .filter((m): m is string => m !== undefined && (m === dir || m.startsWith(`${dir}/`)));
}

/**
 * The `agentbox` parent cgroups of services started by this test process (they inherit its
 * cgroups): one per controller on cgroup v1, one on v2.
 */
export function agentboxCgroupParents(): string[] {
  const parents: string[] = [];
  for (const line of fs.readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const [, ctrls, p] = line.split(":");
    if (ctrls === undefined || p === undefined) continue;
    const dirs =
      ctrls === ""
        ? [path.join(CGROUP_ROOT, p, "agentbox")]
        : ctrls
            .split(",")
            .filter((c) => ["memory", "pids", "cpu", "cpuacct", "freezer"].includes(c))
            .map((c) => path.join(CGROUP_ROOT, c, p, "agentbox"));
    for (const d of dirs) if (fs.existsSync(d)) parents.push(d);
  }
  return [...new Set(parents)];
}

/** Directories at most `depth` levels under `dir` (the groups of services, tenants and sandboxes). */
function groupsUnder(dir: string, depth: number): string[] {
  if (depth === 0) return [];
  let names: string[];
  try {
    names = fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
  return names.flatMap((n) => [path.join(dir, n), ...groupsUnder(path.join(dir, n), depth - 1)]);
}

/** Cgroup directories that exist for the sandbox `id`, wherever it is nested (service, tenant). */
export function cgroupsOf(id: string): string[] {
  return agentboxCgroupParents().flatMap((p) => groupsUnder(p, 3).filter((d) => path.basename(d) === id));
}

/**
 * The group of the service whose workspace dir is `workspaceDir` (the parent of its tenants' and
 * sandboxes' groups), in every hierarchy where it exists.
 */
export function serviceCgroups(workspaceDir: string): string[] {
  const name = `svc-${crypto.createHash("sha256").update(workspaceDir).digest("hex").slice(0, 12)}`;
  return agentboxCgroupParents()
    .map((p) => path.join(p, name))
    .filter((d) => fs.existsSync(d));
}

/**
 * Pids in the sandbox `id`'s cgroups. A sandbox's processes cannot leave its cgroup, so an empty or
 * removed group means none of them is left (host uids are no proof: every service on the host
 * hands out the same range).
 */
export function processesInCgroups(id: string): number[] {
  const pids = new Set<number>();
  for (const dir of cgroupsOf(id)) {
    try {
      for (const pid of fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) pids.add(Number(pid));
    } catch {
      // removed while we looked
    }
  }
  return [...pids];
}

/** Polls `check` until it returns true or `ms` pass; returns the last result. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5000, stepMs = 50): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** Runs the operator CLI (`npm run cli -- ...`) against a data dir (and a service, given AGENTBOX_URL/AGENTBOX_ADMIN_KEY in `env`). */
export function cli(
  dataDir: string,
  args: string[],
  env: Record<string, string> = {},
  input?: string | Buffer,
): { status: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, [...entryArgs("cli/main"), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", AGENTBOX_DATA_DIR: dataDir, ...env },
    encoding: "utf8",
    timeout: 30_000,
    input,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Creates an API key in the data dir's database with the CLI (its own tenant unless one is given) and returns it. */
export function createKey(dataDir: string, name: string, tenant?: string): { key: string; id: string; tenantId: string } {
  const res = cli(dataDir, ["keys", "bootstrap", "--name", name, "--json", ...(tenant ? ["--tenant", tenant] : [])]);
  if (res.status !== 0) throw new Error(`keys bootstrap failed (${res.status}): ${res.stderr}`);
  const parsed = JSON.parse(res.stdout) as { key: string; id: string; tenant_id: string };
  return { key: parsed.key, id: parsed.id, tenantId: parsed.tenant_id };
}

/** Polls `probe` until it gives a value (every `stepMs`), and returns it; past `timeoutMs`, throws naming `what`. */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, stepMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
