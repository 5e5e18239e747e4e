// The spawner: a small process the service starts (./spawner.ts) that does every fork the sandboxes
// need — their launchers, and mount/umount for workspaces — so that none happens on the service's
// event loop (libuv forks the whole parent and waits for the exec: ~20 ms for a service of
// 300 MB, ~1 ms here). It imports nothing but Node and ./bwrap.ts on purpose: its footprint is
// what each fork copies. It exits (taking its sandboxes, which die with their parent) as soon as
// its channel to the service closes, so a dead service leaves nothing running.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import net from "node:net";
import type { Writable } from "node:stream";
import { LAUNCHER, planBwrap } from "./bwrap.js";
import type { SpawnerEvent, SpawnerRequest } from "./spawner-protocol.js";

const children = new Map<number, ChildProcess>();
/** Kills that came while their launch was still connecting: done as soon as the process exists. */
const killedEarly = new Set<number>();

function send(event: SpawnerEvent): void {
  if (process.connected) process.send?.(event);
}

function launch(req: Extract<SpawnerRequest, { op: "launch" }>): void {
  const fail = (err: Error) => {
    killedEarly.delete(req.id);
    send({ ev: "launched", id: req.id, error: err.message });
  };
  const sock = new net.Socket();
  // Nothing here reads what the service sends: it is for the supervisor once the socket is its stdin.
  sock.pause();
  sock.once("error", fail);
  sock.connect(req.socket, () => {
    sock.write(`${req.token}\n`, (err) => {
      if (err) return fail(err);
      sock.off("error", fail);
      sock.on("error", () => {});
      let child: ChildProcess;
      try {
        const plan = planBwrap(req.workspace, req.tmpMb, Buffer.from(req.seccomp, "base64"), undefined, req.root);
        const maxFd = Math.max(...plan.fds.keys());
        const stdio: (net.Socket | "pipe" | "ignore")[] = [sock, sock, "pipe"];
        for (let fd = 3; fd <= maxFd; fd++) stdio.push(plan.fds.has(fd) ? "pipe" : "ignore");
        child = spawn("/bin/sh", ["-c", LAUNCHER, "launch", ...req.cgroupProcs, "--", ...plan.argv], {
          uid: req.uid,
          gid: req.uid,
          env: {},
          cwd: "/",
          stdio,
        });
        for (const [fd, data] of plan.fds) {
          const pipe = child.stdio[fd] as Writable;
          pipe.on("error", () => {});
          pipe.end(data);
        }
      } catch (e) {
        sock.destroy();
        return fail(e as Error);
      }
      // The sandbox has its own copy of the socket now; ours would keep it open after the sandbox ends.
      sock.destroy();
      if (child.pid === undefined) {
        child.once("error", fail);
        return;
      }
      children.set(req.id, child);
      send({ ev: "launched", id: req.id, pid: child.pid });
      if (killedEarly.delete(req.id)) child.kill("SIGKILL");
      child.stderr?.on("data", (chunk: Buffer) => send({ ev: "log", id: req.id, line: chunk.toString().trimEnd() }));
      child.on("error", () => {});
      child.once("exit", (code, signal) => {
        children.delete(req.id);
        send({ ev: "exit", id: req.id, code, signal });
      });
    });
  });
}

process.on("message", (req: SpawnerRequest) => {
  switch (req.op) {
    case "launch":
      launch(req);
      break;
    case "kill": {
      const child = children.get(req.id);
      if (child) child.kill("SIGKILL");
      else killedEarly.add(req.id);
      break;
    }
    case "exec":
      execFile(req.file, req.args, (err, _stdout, stderr) =>
        send({ ev: "done", id: req.id, ...(err ? { error: `${err.message.trim()} ${String(stderr).trim()}`.trim() } : {}) }),
      );
      break;
  }
});

send({ ev: "ready" });

// The service is gone: so are its sandboxes (a launcher that has not exec'd bwrap yet has no
// die-with-parent of its own, hence the kill).
process.on("disconnect", () => {
  for (const child of children.values()) child.kill("SIGKILL");
  process.exit(0);
});
