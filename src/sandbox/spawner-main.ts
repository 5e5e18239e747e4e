// The spawner: a small process an API process started on its own (without a sandbox host, see
// ./host-main.ts) forks (./spawner.ts) to do every fork the sandboxes need — their launchers, and
// mount/umount for workspaces — so that none happens on the service's event loop (libuv forks the
// whole parent and waits for the exec: ~20 ms for a service of 300 MB, ~1 ms here). Its work is
// ./spawn-core.ts, which imports nothing heavy on purpose. It exits (taking its sandboxes, which die
// with their parent) as soon as its channel to the service closes, so a dead service leaves nothing
// running. (Under a sandbox host, the host does this work and outlives the API process.)
import type net from "node:net";
import { SpawnCore } from "./spawn-core.js";
import type { SpawnerEvent, SpawnerRequest } from "./spawner-protocol.js";

const core = new SpawnCore((event: SpawnerEvent, socket?: net.Socket) => {
  if (!process.connected) return;
  // The socket goes to the service: this process keeps no copy of it.
  if (socket) process.send?.(event, socket);
  else process.send?.(event);
}, false);

process.on("message", (req: SpawnerRequest) => core.handle(req));

process.send?.({ ev: "ready" } satisfies SpawnerEvent);

// The service is gone: so are its sandboxes.
process.on("disconnect", () => {
  core.killAll();
  core.close();
  process.exit(0);
});
