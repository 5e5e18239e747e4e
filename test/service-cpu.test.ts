// The service's own process runs in a CPU group of its own beside the sandboxes' (cgroup v1 here),
// weighing as much as all sandboxes together, so that sandboxes saturating the CPU do not starve
// the loop that reads requests; its spawner is moved back out; with AGENTBOX_SERVICE_CPU_WEIGHT=0 it stays where it was started.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { createSandbox } from "./helpers/api.js";
import { client, startServer } from "./helpers/server.js";

const CPU_ROOT = "/sys/fs/cgroup/cpu";
const v1 = fs.existsSync(path.join(CPU_ROOT, "cpu.shares"));

/** The cpu-hierarchy cgroup of a process. */
function cpuGroup(pid: number): string {
  for (const line of fs.readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n")) {
    const [, ctrls, p] = line.split(":");
    if (ctrls?.split(",").includes("cpu") && p !== undefined) return p;
  }
  throw new Error(`no cpu cgroup for ${pid}`);
}

/** Children of a process (the spawner is one). */
function childrenOf(pid: number): number[] {
  const file = `/proc/${pid}/task/${pid}/children`;
  return fs.readFileSync(file, "utf8").split(/\s+/).filter(Boolean).map(Number);
}

test("the service runs in its own CPU group, weighted like all sandboxes together; its spawner and sandboxes do not", {
  skip: !v1 && "cgroup v1 only",
}, async () => {
  const server = await startServer();
  const pid = server.process.pid as number;
  let dir = "";
  try {
    const group = cpuGroup(pid);
    assert.match(group, /\/agentbox-services\/[^/]+$/, `service in ${group}`);
    dir = path.join(CPU_ROOT, group);
    const shares = Number(fs.readFileSync(path.join(path.dirname(dir), "cpu.shares"), "utf8"));
    assert.equal(shares, os.availableParallelism() * 2 * 1024);
    // The spawner was moved back out (sandbox launches and teardowns are the sandboxes' work), and sandboxes are never in it.
    const spawners = childrenOf(pid).filter((kid) => fs.readFileSync(`/proc/${kid}/cmdline`, "utf8").includes("spawner-main"));
    assert.equal(spawners.length, 1, "the spawner runs");
    for (const kid of spawners) assert.equal(cpuGroup(kid), cpuGroup(process.pid));
    const c = client({ url: server.url, key: server.key });
    const id = await createSandbox(c);
    const run = await c<{ logs: { stdout: string } }>("POST", `/v1/agents/sandboxes/${id}/code/run`, {
      language: "bash",
      code: "cat /proc/self/cgroup | grep -E ':cpu(,|:)' | head -1",
    });
    assert.equal(run.status, 200);
    assert.doesNotMatch(run.body.logs.stdout, /agentbox-services/, "a sandbox is never in the service's group");
  } finally {
    await server.dispose();
  }
  // A stopped service's group is removed by the next start (once its last child has ended).
  assert.ok(fs.existsSync(path.dirname(dir)));
  const next = await startServer();
  try {
    assert.equal(fs.existsSync(dir), false, `${dir} removed by the next start`);
  } finally {
    await next.dispose();
  }
});

test("AGENTBOX_SERVICE_CPU_WEIGHT=0 leaves the service where it was started", { skip: !v1 && "cgroup v1 only" }, async () => {
  const server = await startServer({ env: { AGENTBOX_SERVICE_CPU_WEIGHT: "0" } });
  try {
    assert.equal(cpuGroup(server.process.pid as number), cpuGroup(process.pid));
  } finally {
    await server.dispose();
  }
});
