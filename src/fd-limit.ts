// The process's open-file limit, which the connection caps (API clients, sandbox egress) are sized under.
import fs from "node:fs";

/** The soft RLIMIT_NOFILE of this process (Node cannot read it directly); 1024 if unknown. */
export function openFileLimit(): number {
  try {
    const line = fs
      .readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    return Number.isFinite(soft) && soft > 0 ? soft : 1024;
  } catch {
    return 1024;
  }
}
