// The sandbox host's standby API process (src/sandbox/standby.ts), seen from outside: tests that
// kill an API process measure the take-over by a loaded standby, so they wait for it first.
import fs from "node:fs";

/** CPU time (ticks) of the standby API process among the host's children, if one runs. */
function standbyCpu(hostPid: number): number | undefined {
  for (const task of fs.readdirSync(`/proc/${hostPid}/task`)) {
    for (const kid of fs.readFileSync(`/proc/${hostPid}/task/${task}/children`, "utf8").split(/\s+/).filter(Boolean)) {
      try {
        if (!fs.readFileSync(`/proc/${kid}/environ`, "utf8").split("\0").includes("AGENTBOX_STANDBY_PROCESS=1")) continue;
        const stat = fs.readFileSync(`/proc/${kid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return Number(fields[11]) + Number(fields[12]);
      } catch {
        // gone meanwhile
      }
    }
  }
  return undefined;
}

/** Waits until the host's standby API process has loaded (it runs and uses no more CPU over a second). */
export async function standbyLoaded(hostPid: number, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const a = standbyCpu(hostPid);
    await new Promise((r) => setTimeout(r, 1000));
    if (a !== undefined && a === standbyCpu(hostPid)) return;
    if (Date.now() > deadline) throw new Error("the standby API process did not load in time");
  }
}
