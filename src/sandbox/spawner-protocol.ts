// The messages between the service and its spawner process (./spawner-main.ts), defined once for
// both sides. They travel over the spawner's IPC channel (JSON); the supervisor's own byte stream
// does not: the spawner connects a unix socket to the service per sandbox and hands it to the
// sandbox as its stdin/stdout (see ./spawner.ts).
import type { TemplateRoot } from "./bwrap.js";

/** Service → spawner. */
export type SpawnerRequest =
  | {
      op: "launch";
      /** Names the sandbox process in every answer about it. */
      id: number;
      /** The service's private socket the spawner connects to for this sandbox. */
      socket: string;
      /** Sent first on that connection, so the service knows which sandbox it is. */
      token: string;
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
  | { op: "exec"; id: number; file: string; args: string[] };

/** Spawner → service. */
export type SpawnerEvent =
  /** The spawner listens for requests (sent once; requests before it wait in the service). */
  | { ev: "ready" }
  /** The launcher runs (its pid), or could not be started (`error`: then no exit follows). */
  | { ev: "launched"; id: number; pid?: number; error?: string }
  /** A line the sandbox process wrote to its stderr (bwrap's and the supervisor's diagnostics). */
  | { ev: "log"; id: number; line: string }
  | { ev: "exit"; id: number; code: number | null; signal: string | null }
  /** The answer to an exec: its exit (error set when it failed or could not run). */
  | { ev: "done"; id: number; error?: string };
