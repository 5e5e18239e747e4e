// What a run's end means: one pure function from the supervisor's terminal event (or the service's
// own `gone`/`backstop`) and what the service observed (the OOM counter, output truncation) to the
// outcome, whether the kernel's state was lost, and the message the client sees.
import type { DoneEvent, Language } from "./protocol.js";

export type RunOutcome = "ok" | "error" | "timeout" | "oom" | "output_limit" | "kernel_lost";

export interface RunVerdict {
  outcome: RunOutcome;
  /** The kernel was restarted (or the whole sandbox): variables and imports of earlier runs are gone. */
  stateLost: boolean;
  error: string | null;
}

export interface RunEnd {
  /** The supervisor's `done`, or how the run ended without one. */
  end: DoneEvent | { ev: "gone" } | { ev: "backstop" };
  language: Language;
  timeoutS: number;
  memoryMb: number;
  outputCap: number;
  /** The sandbox's OOM-kill counter went up during the run. */
  oom: boolean;
  /** Output (or results) were cut at the cap, as seen by the service or the supervisor. */
  truncated: boolean;
}

export function classifyRun(r: RunEnd): RunVerdict {
  const limit = `${r.timeoutS} second${r.timeoutS === 1 ? "" : "s"}`;
  if (r.end.ev === "backstop") {
    return {
      outcome: "timeout",
      stateLost: true,
      error: `Execution timed out after ${limit}; the sandbox was restarted and all kernel state was lost`,
    };
  }
  if (r.end.ev === "gone") {
    // Processes ending together is what the cgroup's OOM killer does to a sandbox at its limit.
    if (r.oom) {
      return {
        outcome: "oom",
        stateLost: true,
        error: `Out of memory: the sandbox's limit of ${r.memoryMb} MiB was reached; it was restarted and all kernel state was lost (files are kept)`,
      };
    }
    return {
      outcome: "kernel_lost",
      stateLost: true,
      error: "The sandbox's processes ended unexpectedly; it was restarted and all kernel state was lost (files are kept)",
    };
  }
  const d = r.end;
  const stateLost = d.state_lost === true;
  const lost = stateLost ? "; the kernel was restarted and its state was lost" : "";
  const truncated = r.truncated || d.truncated === true;
  if (r.oom) {
    return { outcome: "oom", stateLost, error: `Out of memory: the sandbox's limit of ${r.memoryMb} MiB was reached${lost}` };
  }
  if (d.timed_out === true) {
    const rest = stateLost ? lost : "; the run was interrupted and the kernel's state was kept";
    return { outcome: "timeout", stateLost, error: `Execution timed out after ${limit}${rest}` };
  }
  if (truncated) {
    return {
      outcome: "output_limit",
      stateLost,
      error: `Output exceeded the limit of ${r.outputCap} bytes per stream and was truncated; the run was stopped${lost}`,
    };
  }
  if (d.rc !== undefined && d.rc !== 0) return { outcome: "error", stateLost, error: `exit status ${d.rc}` };
  if (d.exit_status !== undefined) {
    return {
      outcome: "kernel_lost",
      stateLost: true,
      error:
        r.language === "bash"
          ? `exit status ${d.exit_status} (the bash kernel exited and was restarted; its state was lost)`
          : `The kernel exited unexpectedly (status ${d.exit_status}); it was restarted and its state was lost`,
    };
  }
  if (d.error !== undefined) return { outcome: "error", stateLost, error: d.error };
  return { outcome: "ok", stateLost, error: null };
}
