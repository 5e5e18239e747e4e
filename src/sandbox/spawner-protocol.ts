// The messages between the service and the process that holds its sandboxes — its spawner
// (./spawner-main.ts, a child of the service) or its sandbox host (./host-main.ts, the service's
// parent) — defined once for both sides. They travel over the Node IPC channel (JSON); the
// supervisor's own byte stream does not: it is one end of a connected unix socket pair whose other
// end is the sandbox's stdin/stdout, passed over the channel as a handle with `launched` (and with
// `alive`, to an API process that re-attaches to a sandbox host).
import type { TemplateRoot } from "./bwrap.js";

/** Service → spawner or host. */
export type SpawnerRequest =
  /** Sent first by an API process under a sandbox host: answered by `alive` for each sandbox it holds, then `ready`. */
  | { op: "hello" }
  | {
      op: "launch";
      /** Names the sandbox process in every answer about it. */
      id: number;
      /** The sandbox's name (its id): what a re-attaching API process adopts it by. */
      name: string;
      uid: number;
      workspace: string;
      tmpMb: number;
      cgroupProcs: string[];
      /** The seccomp program, base64 (the same for every sandbox, sent with each launch: ~1 KiB). */
      seccomp: string;
      /** A custom template's root filesystem (src/templates/); absent, the host's system view. */
      root?: TemplateRoot;
    }
  | { op: "kill"; id: number }
  | { op: "exec"; id: number; file: string; args: string[] }
  /** The whole service is stopping on purpose: a sandbox host ends too once the API process has exited. */
  | { op: "stop" }
  /** A standby API process has loaded its modules and waits for `go` (./standby.ts). */
  | { op: "standby" };

/** Spawner or host → service. */
export type SpawnerEvent =
  /**
   * Requests are taken from now on (sent once; requests before it wait in the service). `next`:
   * the first launch id the service may use (a host's sandboxes keep the ids an earlier API
   * process gave them).
   */
  | { ev: "ready"; next?: number }
  /** To a standby API process: the API process it stood in for is gone; start now. */
  | { ev: "go" }
  /** A sandbox process a sandbox host holds from an earlier API process, with its supervisor's socket as the handle. */
  | { ev: "alive"; id: number; name: string; pid: number }
  /** The launcher runs (its pid; the supervisor's socket is the handle), or could not be started (`error`: then no exit follows). */
  | { ev: "launched"; id: number; pid?: number; error?: string }
  /** A line the sandbox process wrote to its stderr (bwrap's and the supervisor's diagnostics). */
  | { ev: "log"; id: number; line: string }
  | { ev: "exit"; id: number; code: number | null; signal: string | null }
  /** The answer to an exec: its exit (error set when it failed or could not run). */
  | { ev: "done"; id: number; error?: string };
