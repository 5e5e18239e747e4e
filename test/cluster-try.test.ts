// `npm run cluster:try`, as a person trying the cluster would use it: it starts PostgreSQL, Redis and
// three nodes and prints their URLs and a key; a sandbox created through node 1 runs code through
// node 3; a Ctrl-C (SIGINT to its process group, as a terminal sends it) stops everything it
// started, and nothing is left running.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { after, test } from "node:test";
import { createSandbox, pythonStdout } from "./helpers/api.js";
import { eventually } from "./helpers/leftovers.js";
import { client } from "./helpers/server.js";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
let child: ChildProcess | undefined;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

after(() => {
  // A failed test still stops what it started.
  if (child?.pid && child.exitCode === null && child.signalCode === null)
    try {
      process.kill(-child.pid, "SIGINT");
    } catch {
      // gone already
    }
});

test("npm run cluster:try: three nodes on PostgreSQL and Redis, a sandbox made on node 1 runs through node 3, Ctrl-C stops all", async () => {
  child = spawn("npm", ["run", "--silent", "cluster:try"], { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (d) => {
    out += d;
  });
  child.stderr?.on("data", (d) => {
    out += d;
  });
  const exited = new Promise<string>((resolve) => child?.once("exit", (code, signal) => resolve(signal ?? String(code))));
  assert.ok(await eventually(() => out.includes("Ctrl-C stops everything") || child?.exitCode !== null, 180_000, 200), out);
  assert.equal(child.exitCode, null, out);

  const urls = [...out.matchAll(/^ {2}node-(\d) {2}(http:\/\/\S+) {2}\(pid (\d+)\)$/gm)].map((m) => ({
    url: m[2] as string,
    pid: Number(m[3]),
  }));
  assert.equal(urls.length, 3, out);
  const key = /API key: +(\S+)/.exec(out)?.[1] as string;
  const pids = [...out.matchAll(/\(pid (\d+)\)$/gm)].map((m) => Number(m[1]));
  assert.equal(pids.length, 5, "three nodes, PostgreSQL and Redis");
  const redisPort = Number(/Redis +redis:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);

  const one = urls[0] as { url: string };
  const three = urls[2] as { url: string };
  const id = await createSandbox(client({ url: one.url, key }));
  assert.equal(await pythonStdout(client({ url: three.url, key }), id, "print(6 * 7)"), "42\n");

  // Ctrl-C: the terminal signals the whole foreground process group.
  process.kill(-(child.pid as number), "SIGINT");
  // npm itself ends by the signal it got (as in a terminal); the script under it by itself, once done.
  assert.ok(["0", "SIGINT"].includes(await exited), out);
  assert.ok(await eventually(() => pids.every((pid) => !alive(pid)), 30_000, 200), `still running: ${pids.filter(alive)}`);
  assert.match(out, /stopped; nothing left running/);
  for (const { url } of urls) await assert.rejects(fetch(`${url}/health`), "a node still answers");
  await assert.rejects(
    new Promise((resolve, reject) => {
      const socket = net.connect(redisPort, "127.0.0.1");
      socket.once("connect", () => resolve(socket.destroy()));
      socket.once("error", reject);
    }),
    "Redis still listens",
  );
});
