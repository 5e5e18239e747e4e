// The sandbox processes of a spawner (./spawner-main.ts) or of a sandbox host (./host-main.ts):
// launches them (through the cgroup-joining launcher and bubblewrap), kills them, runs mount and
// umount, and gives each one's supervisor stream to the service as a socket handle. It imports
// nothing but Node and ./bwrap.ts on purpose: its process's footprint is what each fork copies.
//
// The supervisor's stream is a connected pair of unix sockets (Node has no socketpair(): the pair
// is made by connecting to a private listener, one pair at a time, so the accepted end is known to
// be that connection's). One end becomes the sandbox's stdin/stdout; the other is sent to the
// service. A host keeps its own copy of that end open (never reading it: the listener pauses on
// connect), so the supervisor sees no end of its stream while the API process is gone.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { Writable } from "node:stream";
import { LAUNCHER, planBwrap } from "./bwrap.js";
import type { SpawnerEvent, SpawnerRequest } from "./spawner-protocol.js";

/** Sends an event to the service (dropped when none is attached); `socket`: a handle that goes with it. */
export type Emit = (event: SpawnerEvent, socket?: net.Socket) => void;

interface Held {
  name: string;
  pid: number;
  child: ChildProcess;
  /** The service's end of the supervisor's stream, while this process keeps a copy. */
  socket: net.Socket | undefined;
}

const noop = () => {};

export class SpawnCore {
  private readonly held = new Map<number, Held>();
  /** Kills that came while their launch was still connecting: done as soon as the process exists. */
  private readonly killedEarly = new Set<number>();
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentbox-spawn-"));
  private readonly socketPath = path.join(this.dir, "s");
  private readonly server = net.createServer({ pauseOnConnect: true });
  private readonly listening: Promise<void>;
  /** Socket pairs are made one at a time. */
  private pairs: Promise<unknown> = Promise.resolve();
  /** One past the highest id the service has used (a re-attaching API process starts from it). */
  nextId = 1;

  constructor(
    private readonly emit: Emit,
    /** Keep a copy of each supervisor socket (a sandbox host); a spawner hands its copy over. */
    private readonly keepOpen: boolean,
  ) {
    fs.chmodSync(this.dir, 0o700);
    this.server.on("error", noop);
    this.listening = new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.socketPath, () => resolve());
    });
    this.listening.catch(noop);
  }

  /** Two connected sockets: [the sandbox's end, the service's end]. */
  private pair(): Promise<[net.Socket, net.Socket]> {
    const next = this.pairs.then(async () => {
      await this.listening;
      return new Promise<[net.Socket, net.Socket]>((resolve, reject) => {
        let accepted: net.Socket | undefined;
        let connected = false;
        const done = () => {
          if (!accepted || !connected) return;
          client.off("error", fail);
          resolve([client, accepted]);
        };
        const onConnection = (s: net.Socket) => {
          s.on("error", noop);
          accepted = s;
          done();
        };
        const fail = (err: Error) => {
          this.server.off("connection", onConnection);
          accepted?.destroy();
          reject(err);
        };
        this.server.once("connection", onConnection);
        const client = net.connect(this.socketPath, () => {
          connected = true;
          done();
        });
        client.once("error", fail);
      });
    });
    this.pairs = next.catch(noop);
    return next;
  }

  handle(req: SpawnerRequest): void {
    if ("id" in req && req.id >= this.nextId) this.nextId = req.id + 1;
    switch (req.op) {
      case "launch":
        void this.launch(req);
        break;
      case "kill": {
        const held = this.held.get(req.id);
        if (held) held.child.kill("SIGKILL");
        else this.killedEarly.add(req.id);
        break;
      }
      case "exec":
        execFile(req.file, req.args, (err, _stdout, stderr) =>
          this.emit({ ev: "done", id: req.id, ...(err ? { error: `${err.message.trim()} ${String(stderr).trim()}`.trim() } : {}) }),
        );
        break;
    }
  }

  private async launch(req: Extract<SpawnerRequest, { op: "launch" }>): Promise<void> {
    const fail = (err: Error) => {
      this.killedEarly.delete(req.id);
      this.emit({ ev: "launched", id: req.id, error: err.message });
    };
    let sandboxEnd: net.Socket;
    let serviceEnd: net.Socket;
    try {
      [sandboxEnd, serviceEnd] = await this.pair();
    } catch (err) {
      return fail(err as Error);
    }
    // Nothing here reads the sandbox's end: it is the supervisor's once it is its stdin.
    sandboxEnd.pause();
    sandboxEnd.on("error", noop);
    let child: ChildProcess;
    try {
      const plan = planBwrap(req.workspace, req.tmpMb, Buffer.from(req.seccomp, "base64"), undefined, req.root);
      const maxFd = Math.max(...plan.fds.keys());
      const stdio: (net.Socket | "pipe" | "ignore")[] = [sandboxEnd, sandboxEnd, "pipe"];
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
        pipe.on("error", noop);
        pipe.end(data);
      }
    } catch (e) {
      sandboxEnd.destroy();
      serviceEnd.destroy();
      return fail(e as Error);
    }
    // The sandbox has its own copy of its end now; ours would keep the stream open after it ends.
    sandboxEnd.destroy();
    if (child.pid === undefined) {
      serviceEnd.destroy();
      child.once("error", fail);
      return;
    }
    const held: Held = { name: req.name, pid: child.pid, child, socket: this.keepOpen ? serviceEnd : undefined };
    this.held.set(req.id, held);
    this.emit({ ev: "launched", id: req.id, pid: child.pid }, serviceEnd);
    if (this.killedEarly.delete(req.id)) child.kill("SIGKILL");
    child.stderr?.on("data", (chunk: Buffer) => this.emit({ ev: "log", id: req.id, line: chunk.toString().trimEnd() }));
    child.on("error", noop);
    child.once("exit", (code, signal) => {
      this.held.delete(req.id);
      held.socket?.destroy();
      this.emit({ ev: "exit", id: req.id, code, signal });
    });
  }

  /** The sandbox processes alive now, with this process's copy of each supervisor socket (a host's). */
  alive(): { id: number; name: string; pid: number; socket: net.Socket }[] {
    const out: { id: number; name: string; pid: number; socket: net.Socket }[] = [];
    for (const [id, h] of this.held) if (h.socket) out.push({ id, name: h.name, pid: h.pid, socket: h.socket });
    return out;
  }

  /** SIGKILLs every sandbox process (a launcher that has not exec'd bwrap yet has no die-with-parent of its own). */
  killAll(): void {
    for (const h of this.held.values()) h.child.kill("SIGKILL");
  }

  close(): void {
    this.server.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
