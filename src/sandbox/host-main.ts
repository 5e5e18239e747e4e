// The sandbox host: the service's top process (what `npm start` runs). It holds every sandbox
// process and its supervisor's stream, and runs the API process (../main.ts) as its child,
// starting a new one when it dies: a crash of the API process (any bug in the HTTP layer, a kill -9)
// loses no sandbox, and the next API process takes every one over where it is (see
// docs/design.md, "Sandboxes outlive the API process"). It stays small and boring on purpose: it
// imports nothing but Node and ./spawn-core.ts (bubblewrap's plan), parses no request of a client
// or a sandbox, and reads no supervisor's stream — it only keeps a copy of each one open.
//
// Its channel to the API process is Node's IPC (./spawner-protocol.ts): the API process says hello,
// the host answers with each sandbox it holds (`alive`, its supervisor's socket as the handle) and
// `ready`, then serves launches, kills and execs as a spawner does. SIGTERM or SIGINT stops the whole
// service: passed to the API process, which stops its sandboxes and says `stop`; the host ends
// when it has exited, killing whatever is left.
import { type ChildProcess, fork } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SpawnCore } from "./spawn-core.js";
import type { SpawnerEvent, SpawnerRequest } from "./spawner-protocol.js";

/** An API process that dies sooner than this after its start counts as a quick failure (restarted with a growing delay). */
const QUICK_FAILURE_MS = 10_000;
const MAX_RESTART_DELAY_MS = 5000;

/** The API process's entry: ../main.ts beside this file (.js when compiled). */
function apiEntry(): string {
  const here = fileURLToPath(import.meta.url);
  return path.join(path.dirname(here), "..", `main${path.extname(here)}`);
}

/** One JSON line on stderr, shaped like the service's own log lines. */
function log(level: number, msg: string, extra: Record<string, unknown> = {}): void {
  process.stderr.write(`${JSON.stringify({ level, time: Date.now(), pid: process.pid, name: "sandbox-host", msg, ...extra })}\n`);
}

let api: ChildProcess | undefined;
/** The API process has said hello: it started far enough that a death of it is a crash, not a failed start. */
let greeted = false;
let stopping = false;
/** Some API process has said hello: from then on a failed start is retried, as a crash is. */
let everGreeted = false;
let quickFailures = 0;

const core = new SpawnCore((event: SpawnerEvent, socket) => {
  const child = api;
  if (!child?.connected) return;
  // The host keeps its copy of the socket: the supervisor's stream outlives the API process.
  if (socket) child.send(event, socket, { keepOpen: true }, () => {});
  else child.send(event, () => {});
}, true);

function end(code: number): void {
  core.killAll();
  core.close();
  process.exit(code);
}

function startApi(): void {
  const startedAt = Date.now();
  const child = fork(apiEntry(), process.argv.slice(2), {
    execArgv: process.execArgv,
    env: { ...process.env, AGENTBOX_SANDBOX_HOST: "1" },
    stdio: ["inherit", "inherit", "inherit", "ipc"],
    serialization: "json",
  });
  api = child;
  child.on("message", (req: SpawnerRequest) => {
    if (req.op === "hello") {
      greeted = true;
      everGreeted = true;
      for (const a of core.alive()) child.send({ ev: "alive", id: a.id, name: a.name, pid: a.pid }, a.socket, { keepOpen: true }, () => {});
      child.send({ ev: "ready", next: core.nextId }, () => {});
    } else if (req.op === "stop") stopping = true;
    else core.handle(req);
  });
  child.on("error", (err) => log(50, "API process error", { err: err.message }));
  child.once("exit", (code, signal) => {
    if (api === child) api = undefined;
    if (stopping) return end(code ?? 1);
    // A first start that fails before it reaches the host (bad settings) is the service's failure, as before.
    if (!everGreeted) return end(code ?? 1);
    quickFailures = !greeted || Date.now() - startedAt < QUICK_FAILURE_MS ? quickFailures + 1 : 0;
    const delay = quickFailures === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 250 * 2 ** (quickFailures - 1));
    log(50, "the API process ended; starting a new one (sandboxes keep running)", {
      exit: code ?? signal,
      sandboxes: core.alive().length,
      delay_ms: delay,
    });
    greeted = false;
    setTimeout(startApi, delay);
  });
}

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    stopping = true;
    // The API process stops the sandboxes gracefully; the host ends after it.
    if (api && api.exitCode === null && api.signalCode === null) api.kill(signal);
    else end(0);
  });
}

startApi();
