// The background-process part of the supervisor protocol (runtime/agentbox_rt/background.py):
// its requests, and the one `bg` event that answers them, decoded field by field (the sandbox is
// untrusted). Watching a process is answered with the ordinary `out` and `exit` events.

export type BgRequest =
  | { op: "bg_start"; command: string; cwd?: string; env?: Record<string, string>; max_procs: number; output_cap: number }
  | { op: "bg_list" }
  /** Answered with the process's info and, as the body, its retained stdout then stderr (`stdout_len` splits them). */
  | { op: "bg_get"; pid: number }
  /** Answered by `out` events (retained output, then live) and `exit` when the process ends. */
  | { op: "bg_watch"; pid: number }
  /** Stops the watch of request `watch`. */
  | { op: "bg_unwatch"; watch: string }
  /** Writes the body to the process's stdin; `eof` closes it afterwards. */
  | { op: "bg_stdin"; pid: number; eof: boolean }
  | { op: "bg_signal"; pid: number; signal: BgSignal };

export const BG_SIGNALS = ["TERM", "INT", "HUP", "KILL"] as const;
export type BgSignal = (typeof BG_SIGNALS)[number];

export type BgStatus = "ok" | "not_found" | "too_many" | "spawn_error" | "bad_cwd" | "closed" | "full";

export interface BgProcessInfo {
  pid: number;
  command: string;
  status: "running" | "exited";
  exit_code: number | null;
  started_at: string;
  ended_at: string | null;
  stdout_len?: number;
  stdout_dropped?: number;
  stderr_dropped?: number;
}

export interface BgEvent {
  ev: "bg";
  id: string;
  status: BgStatus;
  message?: string;
  procs: BgProcessInfo[];
  body: Buffer;
}

const STATUSES = new Set<BgStatus>(["ok", "not_found", "too_many", "spawn_error", "bad_cwd", "closed", "full"]);
const int = (v: unknown): number | undefined => (typeof v === "number" && Number.isInteger(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function decodeInfo(v: unknown): BgProcessInfo | undefined {
  if (typeof v !== "object" || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const pid = int(o.pid);
  const command = str(o.command);
  if (pid === undefined || command === undefined) return undefined;
  const info: BgProcessInfo = {
    pid,
    command,
    status: o.status === "exited" ? "exited" : "running",
    exit_code: int(o.exit_code) ?? null,
    started_at: str(o.started_at) ?? "",
    ended_at: str(o.ended_at) ?? null,
  };
  for (const k of ["stdout_len", "stdout_dropped", "stderr_dropped"] as const) {
    const n = int(o[k]);
    if (n !== undefined) info[k] = Math.max(0, n);
  }
  return info;
}

/** The `bg` event from its header fields and body. */
export function decodeBgEvent(id: string, h: Record<string, unknown>, body: Buffer): BgEvent {
  const status = STATUSES.has(h.status as BgStatus) ? (h.status as BgStatus) : "spawn_error";
  const procs = Array.isArray(h.procs) ? h.procs.map(decodeInfo).filter((p): p is BgProcessInfo => p !== undefined) : [];
  const message = str(h.message);
  return message === undefined ? { ev: "bg", id, status, procs, body } : { ev: "bg", id, status, message, procs, body };
}
