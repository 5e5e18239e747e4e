// Build steps on top of a template's root filesystem: the base is copied onto a size-capped tmpfs
// (the build's disk limit) owned by a sandbox's own unprivileged host uid, and every step runs in
// that one sandbox (namespaces, seccomp, no capabilities, the template's CPU and memory cgroup, no
// network of its own) as root of its user namespace, so installers may write anywhere in the copy
// and nowhere else. Each step's output goes to the build's log as it comes; the first failing
// step ends the build and is named in its error. The changed copy becomes the new template's root.
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import type { Limits } from "../sandbox/settings.js";
import { ApiError } from "../errors.js";
import type { Box } from "../sandbox/box.js";
import { HOST_USR, hostLoader, STAGES_DIR } from "../sandbox/bwrap.js";
import { makeDir, writeFile } from "../sandbox/files.js";
import type { CustomTemplate } from "../sandbox/manager.js";
import { commandLine, shellQuote } from "../sandbox/service.js";
import { ToolError } from "./pull.js";
import { tooManyFiles } from "./rootfs.js";

const run = promisify(execFile);

export const STEP_TYPES = ["run", "pip_install", "npm_install", "apt_install", "bun_install", "copy_file", "git_clone", "mkdir"] as const;
/** `copy_from` (not in the API's list): a multi-stage Dockerfile's `COPY --from`, [stage index, source, destination]. */
export type StepType = (typeof STEP_TYPES)[number] | "copy_from";

export interface Step {
  type: StepType;
  args?: string[];
  /** base64 (copy_file). */
  content?: string;
  options?: Record<string, unknown>;
  /** What the log and a failure call the step (a Dockerfile's line); default `step N (type)`. */
  label?: string;
}

/** Installers that need the network: here they get only what the build sandbox has (see docs/templates.md). */
const APT = "apt-get -o APT::Sandbox::User=root -o Acquire::Retries=0";

/** The shell command of a step that runs one (undefined for the file steps, done through the supervisor's file operations). */
export function stepCommand(step: Step): string | undefined {
  const args = step.args ?? [];
  switch (step.type) {
    case "run":
      return args.join(" ");
    case "pip_install":
      return commandLine("python3 -m pip install --no-cache-dir --retries 0 --timeout 15 --root-user-action=ignore", args);
    case "npm_install":
      return commandLine("npm install --global --no-audit --no-fund", args);
    case "bun_install":
      return commandLine("bun add --global", args);
    case "apt_install":
      return `${APT} update && ${commandLine(`${APT} install -y --no-install-recommends`, args)}`;
    case "git_clone":
      return commandLine("git clone --depth 1 --", args);
    case "copy_from":
      return copyFromCommand(args);
    default:
      return undefined;
  }
}

/**
 * `COPY --from=<stage>`, run in the build sandbox with the host's own cp and mkdir (through its
 * loader, like the runtime: the image need not have them) from the earlier stage's root, bound
 * read-only at STAGES_DIR/<index>. Docker's rules: a directory's contents go into the destination;
 * a file goes to the destination, or into it when it ends in `/`. Links are copied as links.
 */
function copyFromCommand([stage, src, dest]: string[]): string {
  const { loader, libDir } = hostLoader();
  const tool = (name: string) => `${loader} --library-path ${libDir} ${HOST_USR}/bin/${name}`;
  const from = `${STAGES_DIR}/${stage}${src === "/" ? "" : src}`;
  const to = dest as string;
  const parent = to.endsWith("/") ? to : path.posix.dirname(to);
  const cp = `${tool("cp")} -R -P --preserve=mode,timestamps,links --`;
  return (
    `if [ -d ${shellQuote(from)} ]; then ${tool("mkdir")} -p -- ${shellQuote(to)} && ${cp} ${shellQuote(`${from}/.`)} ${shellQuote(to)}; ` +
    `else ${tool("mkdir")} -p -- ${shellQuote(parent)} && ${cp} ${shellQuote(from)} ${shellQuote(to)}; fi`
  );
}

/** Refuses (400) steps that cannot run, before anything is recorded. */
export function checkSteps(steps: Step[]): void {
  steps.forEach((step, i) => {
    const bad = (why: string) => new ApiError("invalid_request", `build_steps[${i}] (${step.type}): ${why}`);
    const args = step.args ?? [];
    if (step.type === "copy_file") {
      if (args.length !== 1 || !args[0]?.startsWith("/")) throw bad("args must be [absolute destination path]");
      if (step.content === undefined) throw bad("content (base64) is required");
    } else if (step.type === "mkdir") {
      if (args.length === 0 || !args.every((a) => a.startsWith("/"))) throw bad("args must be absolute paths");
    } else if (step.type === "run") {
      if (args.join("").trim() === "") throw bad("args must hold the command");
    } else if (step.type === "git_clone") {
      if (args.length < 1 || args.length > 2) throw bad("args must be [url] or [url, destination]");
    } else if (args.length === 0) throw bad("args must name what to install");
  });
}

export interface StepRunOptions {
  /** The base template's root filesystem and python. */
  base: { dir: string; python: string | null };
  /** Root filesystems of the build's earlier stages (a multi-stage Dockerfile), for `copy_from`. */
  stages?: string[];
  steps: Step[];
  /** Where the build's writable copy is mounted (a directory of its own, traversable by sandbox uids). */
  layerDir: string;
  /** Where the finished copy is written back to disk (the build's scratch directory). */
  out: string;
  limits: Limits;
  /** MiB the steps may add on top of the base. */
  diskMb: number;
  /** Files, directories and links the result may hold (AGENTBOX_TEMPLATE_MAX_FILES): the copy's tmpfs holds no more inodes. */
  maxFiles: number;
  deadline: AbortSignal;
  deadlineAt: number;
  /**
   * Runs a host command of the build (the base's copy onto the layer, its chown, the result's copy
   * back) in the build's memory group; absent: as a child of the service.
   */
  host?: { run(file: string, args: string[], signal: AbortSignal): Promise<void>; limitMb(mb: number): Promise<void> };
  startBox(prepare: (uid: number) => Promise<CustomTemplate>): Promise<{ box: Box; release(): Promise<void> }>;
  log(line: string): void;
  progress(percent: number): void;
}

/** A host command of the build: in its memory group when it has one. */
function hostRun(o: StepRunOptions, file: string, args: string[]): Promise<unknown> {
  return o.host ? o.host.run(file, args, o.deadline) : run(file, args, { signal: o.deadline });
}

async function sizeMb(dir: string): Promise<number> {
  const { stdout } = await run("du", ["-sxm", dir], { maxBuffer: 1 << 20 });
  return Number(stdout.split(/\s/)[0]) || 0;
}

/** Runs the steps; returns the changed tree (at `out`), ready for RootfsStore.adopt(). */
export async function runSteps(o: StepRunOptions): Promise<string> {
  await fs.promises.mkdir(o.layerDir, { recursive: true, mode: 0o755 });
  const capMb = (await sizeMb(o.base.dir)) + o.diskMb;
  // The copy's pages are charged to the group that writes them: its limit is what the layer may hold.
  await o.host?.limitMb(capMb);
  let mounted = false;
  try {
    const { box, release } = await o.startBox(async (uid) => {
      // The result's file limit as the copy's inode count (a few over it: the root and tmpfs's own);
      // a step that runs out of them fails naming the limit (see filesLeft), adopt() counts exactly.
      const inodes = o.maxFiles + 16;
      await run("mount", [
        "-t",
        "tmpfs",
        "-o",
        `size=${capMb}m,nr_inodes=${inodes},mode=755,uid=${uid},gid=${uid},nosuid,nodev`,
        "tmpfs",
        o.layerDir,
      ]);
      mounted = true;
      o.log(`copying the base (${capMb - o.diskMb} MiB) onto the build's layer (${capMb} MiB in all)`);
      await hostRun(o, "cp", ["-a", `${o.base.dir}/.`, `${o.layerDir}/`]);
      await hostRun(o, "chown", ["-R", "-h", `${uid}:${uid}`, o.layerDir]);
      return {
        id: "build",
        root: {
          dir: o.layerDir,
          build: true,
          ...(o.base.python ? { python: o.base.python } : {}),
          ...(o.stages?.length ? { stages: o.stages } : {}),
        },
        limits: o.limits,
        envVars: {},
      };
    });
    try {
      for (const [i, step] of o.steps.entries()) {
        if (o.deadline.aborted) throw o.deadline.reason;
        const label = step.label ?? `step ${i + 1} (${step.type})`;
        o.log(`${label}: ${stepCommand(step) ?? (step.args ?? []).join(" ")}`);
        try {
          await runStep(box, step, label, o);
        } catch (err) {
          // Out of inodes on the copy: the file limit is why, whatever the step's own words.
          if ((await filesLeft(o.layerDir)) === 0) throw tooManyFiles(o.maxFiles, `${label}: the build's result holds`);
          throw err;
        }
        o.progress(50 + Math.round((30 * (i + 1)) / o.steps.length));
      }
    } finally {
      await release();
    }
    o.log("writing the new layer");
    await fs.promises.mkdir(o.out, { mode: 0o755 });
    await hostRun(o, "cp", ["-a", `${o.layerDir}/.`, `${o.out}/`]);
    return o.out;
  } finally {
    if (mounted) await run("umount", ["-l", o.layerDir]).catch(() => {});
    await fs.promises.rm(o.layerDir, { recursive: true, force: true }).catch(() => {});
  }
}

/** Inodes left on the build's copy (0 once its file limit is reached); undefined when unknown. */
async function filesLeft(dir: string): Promise<number | undefined> {
  try {
    const st = await fs.promises.statfs(dir);
    return st.ffree <= 16 ? 0 : st.ffree;
  } catch {
    return undefined;
  }
}

async function runStep(box: Box, step: Step, label: string, o: StepRunOptions): Promise<void> {
  const failed = (why: string) => new ToolError(`${label} failed: ${why}`);
  const args = step.args ?? [];
  try {
    if (step.type === "mkdir") {
      for (const dir of args) await makeDir(box, dir);
      return;
    }
    if (step.type === "copy_file") {
      await writeFile(box, args[0] as string, Buffer.from(step.content ?? "", "base64"));
      return;
    }
  } catch (err) {
    throw failed((err as Error).message);
  }
  const timeoutMs = Math.max(1000, o.deadlineAt - Date.now());
  const lines = { 1: "", 2: "" };
  const r = await box.command({
    command: stepCommand(step) as string,
    cwd: "/",
    // The template is the image's own system: pip installs into it as a Dockerfile's RUN would
    // (PEP 668's marker would refuse it; the variable, unlike the flag, is ignored by older pips).
    env: { PIP_BREAK_SYSTEM_PACKAGES: "1", DEBIAN_FRONTEND: "noninteractive" },
    timeoutMs,
    watch: {
      output(stream, body) {
        const text = lines[stream] + body.toString();
        const parts = text.split("\n");
        lines[stream] = parts.pop() ?? "";
        for (const line of parts) o.log(line);
      },
      result() {},
    },
  });
  for (const rest of Object.values(lines)) if (rest) o.log(rest);
  if (r.timedOut) throw new ToolError(`${label} did not finish before the build's deadline (AGENTBOX_TEMPLATE_BUILD_TIMEOUT_S)`);
  if (r.exitCode !== 0) {
    const tail = (r.stderr.trim() || r.stdout.trim()).split("\n").slice(-3).join(" ").slice(0, 500);
    throw failed(`exit ${r.exitCode}${r.error && r.exitCode > 128 ? ` (${r.error})` : ""}: ${tail}`);
  }
}
