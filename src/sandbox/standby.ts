// A standby API process (see ./host-main.ts): one the sandbox host starts ahead of need, which
// loads every module (the longest part of a start: seconds under load) and then waits here, before
// it reads a setting or opens a file, until the host says go — when the API process it stands in
// for has died. A process not started as a standby goes on at once.
import type { SpawnerEvent, SpawnerRequest } from "./spawner-protocol.js";

/** Resolves when this process may start as the service's API process. */
export function standbyTurn(): Promise<void> {
  if (process.env.AGENTBOX_STANDBY_PROCESS !== "1" || typeof process.send !== "function") return Promise.resolve();
  return new Promise((resolve) => {
    // The host is gone before this process was needed: nothing to do.
    const onGone = () => process.exit(0);
    const onMessage = (event: SpawnerEvent) => {
      if (event.ev !== "go") return;
      process.off("message", onMessage);
      process.off("disconnect", onGone);
      resolve();
    };
    process.on("message", onMessage);
    process.once("disconnect", onGone);
    process.send?.({ op: "standby" } satisfies SpawnerRequest);
  });
}
