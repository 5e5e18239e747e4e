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
// when it has exited, killing whatever is left. SIGHUP restarts the API process alone (an upgrade of
// it): the running one gets SIGUSR2, finishes its requests and exits leaving its sandboxes, and a
// freshly loaded one (never the spare, which holds the old code) takes them over.
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

/** The API process serving now (or starting). */
let api: ChildProcess | undefined;
/**
 * A standby API process: its modules loaded, waiting for `go` (./standby.ts). Loading them is most
 * of a start (seconds from source or under load); with one waiting, an API process that dies is
 * replaced in about the time the rest of a start takes. Off with AGENTBOX_API_STANDBY=0.
 */
let spare: ChildProcess | undefined;
/** The spare has said it waits: `go` may be sent. */
let spareLoaded = false;
/** The API process has said hello: it started far enough that a death of it is a crash, not a failed start. */
let greeted = false;
let stopping = false;
/** Some API process has said hello: from then on a failed start is retried, as a crash is. */
let everGreeted = false;
let quickFailures = 0;
/** A restart asked for by SIGHUP is under way: the API process's exit is planned, not a failure. */
let restarting = false;
/** How long a restarting API process may take to finish its requests before it is killed. */
const RESTART_KILL_MS = 60_000;
let apiStartedAt = 0;
/** AGENTBOX_API_STANDBY (declared with the sandbox settings, parsed as they parse a boolean: the host reads no settings module). */
const standbyOn = !["0", "false", "no", "off"].includes((process.env.AGENTBOX_API_STANDBY ?? "").trim().toLowerCase());
/** A spare is started this long after the API process's hello, so that it does not slow that start. */
const SPARE_DELAY_MS = 2000;

const core = new SpawnCore((event: SpawnerEvent, socket) => {
  const child = api;
  if (!child?.connected) return;
  // The host keeps its copy of the socket: the supervisor's stream outlives the API process.
  if (socket) child.send(event, socket, { keepOpen: true }, () => {});
  else child.send(event, () => {});
}, true);

function end(code: number): never {
  spare?.kill("SIGKILL");
  core.killAll();
  core.close();
  process.exit(code);
}

function forkApi(standby: boolean): ChildProcess {
  const child = fork(apiEntry(), process.argv.slice(2), {
    execArgv: process.execArgv,
    env: { ...process.env, AGENTBOX_SANDBOX_HOST: "1", AGENTBOX_STANDBY_PROCESS: standby ? "1" : "0" },
    stdio: ["inherit", "inherit", "inherit", "ipc"],
    serialization: "json",
  });
  child.on("error", (err) => log(50, "API process error", { err: err.message }));
  child.on("message", (req: SpawnerRequest) => onRequest(child, req));
  child.once("exit", (code, signal) => onExit(child, code, signal));
  return child;
}

/** `child` serves now (a new process, or the spare told to go). */
function serve(child: ChildProcess): void {
  api = child;
  greeted = false;
  apiStartedAt = Date.now();
}

function onRequest(child: ChildProcess, req: SpawnerRequest): void {
  if (req.op === "standby") {
    if (child === spare) spareLoaded = true;
    // Promoted before it had loaded: it goes now.
    else if (child === api) child.send({ ev: "go" }, () => {});
    return;
  }
  if (child !== api) return;
  if (req.op === "hello") {
    greeted = true;
    everGreeted = true;
    for (const a of core.alive()) child.send({ ev: "alive", id: a.id, name: a.name, pid: a.pid }, a.socket, { keepOpen: true }, () => {});
    child.send({ ev: "ready", next: core.nextId }, () => {});
    if (standbyOn && !spare) setTimeout(startSpare, SPARE_DELAY_MS).unref();
  } else if (req.op === "stop") stopping = true;
  else core.handle(req);
}

function startSpare(): void {
  if (stopping || spare || !api) return;
  spareLoaded = false;
  spare = forkApi(true);
}

function onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
  if (child === spare) {
    // A spare that died while waiting is started again at the next API process's hello.
    spare = undefined;
    return;
  }
  if (child !== api) return;
  api = undefined;
  // A first start that fails before it reaches the host (bad settings) is the service's failure, as before.
  if (stopping || !everGreeted) {
    end(code ?? 1);
    return;
  }
  if (restarting) {
    restarting = false;
    log(30, "the API process restarted on SIGHUP; a new one takes its sandboxes over", { sandboxes: core.alive().length });
    serve(forkApi(false));
    return;
  }
  quickFailures = !greeted || Date.now() - apiStartedAt < QUICK_FAILURE_MS ? quickFailures + 1 : 0;
  const delay = quickFailures === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 250 * 2 ** (quickFailures - 1));
  log(50, "the API process ended; starting a new one (sandboxes keep running)", {
    exit: code ?? signal,
    sandboxes: core.alive().length,
    delay_ms: delay,
    standby: spare !== undefined,
  });
  setTimeout(() => {
    if (stopping) return end(0);
    const next = spare;
    if (next) {
      spare = undefined;
      serve(next);
      if (spareLoaded) next.send({ ev: "go" }, () => {});
    } else serve(forkApi(false));
  }, delay);
}

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    stopping = true;
    // The API process stops the sandboxes gracefully; the host ends after it.
    spare?.kill("SIGKILL");
    if (api && api.exitCode === null && api.signalCode === null) api.kill(signal);
    else end(0);
  });
}

process.on("SIGHUP", () => {
  const child = api;
  if (stopping || restarting || !child || child.exitCode !== null || child.signalCode !== null) return;
  restarting = true;
  // The spare loaded the code that runs now: an upgrade wants the new one.
  spare?.kill("SIGKILL");
  spare = undefined;
  child.kill("SIGUSR2");
  setTimeout(() => {
    if (api === child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }, RESTART_KILL_MS).unref();
});

serve(forkApi(false));
