// Starts the real service (the same entry point as `npm start`) on a free loopback port with its
// own data directory and bootstrap key, for end-to-end tests; with AGENTBOX_TEST_CLUSTER=1, a
// three-node cluster in its place (test/helpers/cluster.ts).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { entryArgs } from "./entry.js";

export interface TestServer {
  url: string;
  key: string;
  /** The admin key (AGENTBOX_ADMIN_KEY) for /v1/admin; empty if the test unset it. */
  adminKey: string;
  dataDir: string;
  workspaceDir: string;
  port: number;
  process: ChildProcess;
  /** The API process's pid: under a sandbox host its child (the pid file it writes), else process's. */
  apiPid(): number;
  /** Output of the service so far (its JSON log lines). */
  logs(): string;
  /** SIGTERM, wait for exit. Leaves the data dir so a restart can re-adopt it. */
  stop(): Promise<void>;
  /** SIGKILL, no clean-up by the service. */
  crash(): Promise<void>;
  /** Stops, unmounts what sandboxes it left, removes the data and workspace directories. */
  dispose(): Promise<void>;
}

/**
 * startServer() starts a three-node cluster (AGENTBOX_TEST_CLUSTER=1, `npm run test:cluster`): the
 * few checks that look at one node's own disk or processes are skipped then (each says why).
 */
export const testCluster = process.env.AGENTBOX_TEST_CLUSTER === "1";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

/** Unmounts every workspace left under `dir` (sandboxes a test left running) and removes it. */
export function removeWorkspaces(dir: string): void {
  const mounts = fs
    .readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4])
    .filter((m): m is string => m?.startsWith(`${dir}/`) === true);
  for (const m of mounts) {
    try {
      execFileSync("umount", ["-l", m], { stdio: "pipe" });
    } catch (err) {
      // The service may have unmounted it meanwhile (a sandbox it was still ending).
      if (fs.readFileSync("/proc/self/mountinfo", "utf8").includes(` ${m} `)) throw err;
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

export interface ServerOptions {
  env?: Record<string, string>;
  dataDir?: string;
  key?: string;
  port?: number;
  workspaceDir?: string;
  /** The address to listen on and be reached at (127.0.0.1). */
  host?: string;
  /** A command the service is started through, e.g. one that enters a network namespace (test/helpers/netns.ts). */
  wrap?: string[];
  /** How long it may take to answer /health (default 60 s). */
  startTimeoutMs?: number;
  /**
   * Start the service as `npm start` does, under its sandbox host (src/sandbox/host-main.ts), which
   * outlives its API process; else the API process on its own (default; AGENTBOX_TEST_SANDBOX_HOST=1
   * makes the host the default).
   */
  sandboxHost?: boolean;
}

/**
 * The service the end-to-end tests talk to: one node, or, when the test process has
 * AGENTBOX_TEST_CLUSTER=1 (`npm run test:cluster`), a three-node cluster behind the same
 * interface whose url is a node that owns no sandbox, so every sandbox request is forwarded
 * (test/helpers/cluster.ts).
 */
export async function startServer(opts: ServerOptions = {}): Promise<TestServer> {
  if (testCluster && opts.wrap === undefined && opts.host === undefined) {
    // Imported when used: cluster.ts starts its nodes with startNode() below.
    const { startClusterServer } = await import("./cluster.js");
    return startClusterServer(opts);
  }
  return startNode(opts);
}

/** One service, on its own: the single node of startServer(), or one node of a cluster. */
export async function startNode(opts: ServerOptions = {}): Promise<TestServer> {
  const host = opts.host ?? "127.0.0.1";
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-test-"));
  // Same data dir → same workspace dir, so a restarted service re-adopts its sandboxes.
  const workspaceDir = opts.workspaceDir ?? path.join("/run/agentbox-test", path.basename(dataDir));
  const key = opts.key ?? `test_${crypto.randomBytes(12).toString("hex")}`;
  const adminKey = opts.env?.AGENTBOX_ADMIN_KEY ?? `testadmin_${crypto.randomBytes(16).toString("hex")}`;
  // AGENTBOX_SERVER_NODE_ARGS: extra Node options for the service, e.g. "--cpu-prof --cpu-prof-dir=prof"
  // to profile it under a benchmark (Node refuses --cpu-prof in NODE_OPTIONS).
  const nodeArgs = process.env.AGENTBOX_SERVER_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? [];
  const [command, ...prefix] = [...(opts.wrap ?? []), process.execPath];
  const sandboxHost = opts.sandboxHost ?? process.env.AGENTBOX_TEST_SANDBOX_HOST === "1";
  const child = spawn(command as string, [...prefix, ...nodeArgs, ...entryArgs(sandboxHost ? "sandbox/host-main" : "main")], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      AGENTBOX_HOST: host,
      AGENTBOX_PORT: String(port),
      AGENTBOX_DATA_DIR: dataDir,
      AGENTBOX_WORKSPACE_DIR: workspaceDir,
      AGENTBOX_API_KEY: key,
      AGENTBOX_ADMIN_KEY: adminKey,
      AGENTBOX_LOG_LEVEL: "warn",
      AGENTBOX_WARM_POOL: "2",
      // Tests check behaviour, not admission (the tests of admission set their own): on a busy
      // machine one sandbox start can take longer than the default bound, and a create the default
      // would refuse at once (503, retry) is let wait for its start instead.
      AGENTBOX_CREATE_WAIT_MS: "30000",
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const url = `http://${host}:${port}`;
  // Generous: a service starts its spawner process first, and tsx compiles the source (seconds on a loaded host).
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited during start (${child.exitCode}):\n${output}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`service did not become healthy:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const exited = () =>
    new Promise<void>((resolve) =>
      child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve()),
    );
  const server: TestServer = {
    url,
    key,
    adminKey,
    dataDir,
    workspaceDir,
    port,
    process: child,
    apiPid: () => (sandboxHost ? Number(fs.readFileSync(path.join(dataDir, "api.pid"), "utf8").trim()) : (child.pid as number)),
    logs: () => output,
    async stop() {
      child.kill("SIGTERM");
      await exited();
    },
    async crash() {
      child.kill("SIGKILL");
      await exited();
    },
    async dispose() {
      await server.stop();
      removeWorkspaces(workspaceDir);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}

/** A small JSON client for the service; `key: ""` sends requests without a key. */
/**
 * Runs a test's body against `server`; a failure carries the service's log while it ran (its
 * warnings: a sandbox process that died, a refused request), to tell a bug of the test from one of
 * the service's.
 */
export async function withServiceLog(server: Pick<TestServer, "logs">, body: () => Promise<void>): Promise<void> {
  const from = server.logs().length;
  try {
    await body();
  } catch (err) {
    const log = server.logs().slice(from).slice(-4000) || "(nothing)";
    if (err instanceof Error) err.message += `\n\nservice log during the test:\n${log}`;
    throw err;
  }
}

export function client(server: { url: string; key: string }) {
  return async function call<T = Record<string, unknown>>(
    method: string,
    route: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: T; headers: Headers }> {
    // An empty key sends no Authorization header (for authentication tests).
    const auth: Record<string, string> = server.key ? { authorization: `Bearer ${server.key}` } : {};
    const init: RequestInit = { method, headers: { ...auth, ...headers } };
    if (body !== undefined) {
      (init.headers as Record<string, string>)["content-type"] = "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    const res = await fetch(`${server.url}${route}`, init);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: return the text
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  };
}
