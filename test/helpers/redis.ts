// Starts a private redis-server (Redis 7, from the distribution) on a free loopback port in a
// temporary directory, without persistence, for the cluster tests; halt() and start() restart it
// empty on the same port (an outage); stop() ends it and removes the directory.
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "./server.js";

export interface TestRedis {
  url: string;
  port: number;
  /** The server running now (another one after halt() and start()). */
  readonly process: ChildProcess;
  /** Kills the server (SIGKILL, as a crash); what it held is gone, as it keeps nothing on disk. */
  halt(): Promise<void>;
  /** Starts a new, empty server on the same port. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Answers PONG to a PING on a fresh connection. */
function ping(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    socket.setTimeout(1000);
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (d) => {
      socket.destroy();
      resolve(d.toString().startsWith("+PONG"));
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** `host`: the address to listen on (loopback unless a test's private network needs another). */
export async function startRedis(host = "127.0.0.1"): Promise<TestRedis> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-redis-"));
  const port = await freePort();
  let child = await spawnRedis(dir, port, host);
  return {
    url: `redis://${host}:${port}`,
    port,
    get process() {
      return child;
    },
    async halt() {
      await kill(child, "SIGKILL");
    },
    async start() {
      child = await spawnRedis(dir, port, host);
    },
    async stop() {
      await kill(child, "SIGTERM");
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  await new Promise((r) => child.once("exit", r));
}

/** A redis-server on `port`, answering PING; empty (no persistence), whatever an earlier one held. */
async function spawnRedis(dir: string, port: number, host: string): Promise<ChildProcess> {
  const args = [
    "--port",
    String(port),
    "--bind",
    host,
    "--protected-mode",
    "no",
    "--dir",
    dir,
    "--save",
    "",
    "--appendonly",
    "no",
    "--daemonize",
    "no",
  ];
  const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const deadline = Date.now() + 15_000;
  while (!(await ping(port, host))) {
    if (child.exitCode !== null) throw new Error(`redis-server exited (${child.exitCode}):\n${output}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`redis-server did not answer:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}
