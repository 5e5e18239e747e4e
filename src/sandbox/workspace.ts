// Workspaces: each sandbox's /home/user is its own size-capped tmpfs mounted on the host under the
// data dir, owned by the sandbox's host uid. It outlives the sandbox's processes (so files survive
// a kernel restart or a service restart) and is unmounted and removed when the sandbox ends.
// mount and umount run in the spawner (./spawner.ts), never as a fork of the service itself.
import fs from "node:fs";
import path from "node:path";

/** Runs a program to its end (rejects when it fails). */
export type Exec = (file: string, args: string[]) => Promise<void>;

export class WorkspaceManager {
  readonly root: string;

  /**
   * `root` must be traversable by the sandboxes' host uids (bubblewrap opens the workspace as that
   * uid), so it lives outside the data dir, which holds the database and stays private.
   */
  constructor(
    root: string,
    private readonly run: Exec,
  ) {
    this.root = root;
    let dir = root;
    fs.mkdirSync(root, { recursive: true, mode: 0o711 });
    while (dir !== path.dirname(dir)) {
      if ((fs.statSync(dir).mode & 0o001) === 0) {
        throw new Error(`workspace directory ${root} is not reachable by sandbox users: ${dir} lacks o+x (set AGENTBOX_WORKSPACE_DIR)`);
      }
      dir = path.dirname(dir);
    }
  }

  pathOf(name: string): string {
    return path.join(this.root, name);
  }

  async create(name: string, uid: number, sizeMb: number): Promise<string> {
    const dir = this.pathOf(name);
    await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
    if (!(await this.isMounted(dir))) {
      await this.run("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m,uid=${uid},gid=${uid},mode=700,nosuid,nodev`, "tmpfs", dir]);
    }
    return dir;
  }

  /**
   * A mount point has another device than its parent. (Reading /proc/self/mountinfo instead blocks
   * the event loop for long once hundreds of workspaces are mounted.)
   */
  async isMounted(dir: string): Promise<boolean> {
    try {
      const [own, parent] = await Promise.all([fs.promises.stat(dir), fs.promises.stat(path.dirname(dir))]);
      return own.dev !== parent.dev;
    } catch {
      return false;
    }
  }

  async destroy(name: string): Promise<void> {
    const dir = this.pathOf(name);
    try {
      await fs.promises.access(dir);
    } catch {
      return;
    }
    for (let attempt = 0; attempt < 20 && (await this.isMounted(dir)); attempt++) {
      try {
        await this.run("umount", [dir]);
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    if (await this.isMounted(dir)) await this.run("umount", ["-l", dir]);
    await fs.promises.rm(dir, { recursive: true, force: true });
  }

  /** Names of every workspace present now (mounted or not). */
  existing(): Promise<string[]> {
    return fs.promises.readdir(this.root);
  }
}
