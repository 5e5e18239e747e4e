// Start-up checks: the service refuses to start (with a message naming the missing piece) rather
// than ever run code without a sandbox.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { SYSTEM_VIEW } from "./bwrap.js";

export function checkHost(): void {
  const problems: string[] = [];
  if (process.getuid?.() !== 0) problems.push("the service must run as root (it creates cgroups, mounts and per-sandbox users)");
  for (const bin of ["/usr/bin/bwrap", "/usr/bin/python3", "/usr/bin/node", "/bin/bash"]) {
    if (!fs.existsSync(bin)) problems.push(`${bin} is missing (run 'npm run setup')`);
  }
  if (!fs.existsSync("/sys/fs/cgroup/memory") && !fs.existsSync("/sys/fs/cgroup/cgroup.controllers"))
    problems.push("no cgroup filesystem at /sys/fs/cgroup");
  if (problems.length === 0) {
    try {
      execFileSync("/usr/bin/bwrap", ["--unshare-all", ...SYSTEM_VIEW.flat(), "/bin/true"], { stdio: "pipe", uid: 65534, gid: 65534 });
    } catch (err) {
      problems.push(
        `bubblewrap cannot create a sandbox here (are unprivileged user namespaces enabled?): ${(err as { stderr?: Buffer }).stderr?.toString().trim() ?? String(err)}`,
      );
    }
  }
  if (problems.length) throw new Error(`the host cannot run sandboxes:\n  - ${problems.join("\n  - ")}`);
}
