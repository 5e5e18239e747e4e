// Workspaces: each sandbox's /home/user is its own size-capped tmpfs mounted on the host under the
// data dir, owned by the sandbox's host uid. It outlives the sandbox's processes (so files survive
// a kernel restart or a service restart) and is unmounted and removed when the sandbox ends.
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export class WorkspaceManager {
  readonly root: string;

  constructor(dataDir: string) {
    this.root = path.join(dataDir, "workspaces");
    fs.mkdirSync(this.root, { recursive: true, mode: 0o711 });
    fs.chmodSync(this.root, 0o711);
  }

  pathOf(name: string): string {
    return path.join(this.root, name);
  }

  async create(name: string, uid: number, sizeMb: number): Promise<string> {
    const dir = this.pathOf(name);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!this.isMounted(dir)) {
      await run("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m,uid=${uid},gid=${uid},mode=700,nosuid,nodev`, "tmpfs", dir]);
    }
    return dir;
  }

  isMounted(dir: string): boolean {
    return fs.readFileSync("/proc/self/mountinfo", "utf8").includes(` ${dir} `);
  }

  async destroy(name: string): Promise<void> {
    const dir = this.pathOf(name);
    if (!fs.existsSync(dir)) return;
    for (let attempt = 0; attempt < 20 && this.isMounted(dir); attempt++) {
      try {
        await run("umount", [dir]);
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    if (this.isMounted(dir)) await run("umount", ["-l", dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  }

  /** Names of every workspace present now (mounted or not). */
  existing(): string[] {
    return fs.readdirSync(this.root);
  }
}
