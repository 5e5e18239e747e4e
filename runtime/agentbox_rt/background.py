# Background processes (ops bg_start, bg_list, bg_get, bg_watch, bg_unwatch, bg_stdin, bg_signal): a `bash -c`
# that outlives the request that started it. The supervisor keeps each one's stdin pipe and the
# latest bytes of its stdout and stderr (a ring per stream), and forwards new output to the
# requests watching it. Everything ends with the sandbox: the processes are in its namespaces and
# cgroup, and the table lives in this supervisor.
import fcntl
import os
import signal
import time

from .files import resolve
from .procs import signal_group, spawn
from .programs import program
from .protocol import MAX_FRAME, send
from .state import WORKDIR, children, env_for
from .streams import Stream

SIGNALS = {"TERM": signal.SIGTERM, "INT": signal.SIGINT, "HUP": signal.SIGHUP, "KILL": signal.SIGKILL}
F_SETPIPE_SZ = 1031

procs = {}  # pid -> Background, in start order (running and exited)
watches = {}  # watch request id -> Background


def now_iso():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)


class Ring:
    """The latest `cap` bytes written to a stream, and how many earlier ones were dropped."""

    def __init__(self, cap):
        self.cap = cap
        self.buf = bytearray()
        self.dropped = 0

    def add(self, data):
        self.buf += data
        over = len(self.buf) - self.cap
        if over > 0:
            del self.buf[:over]
            self.dropped += over


class Background:
    def __init__(self, req, cwd):
        # Both rings travel in one frame (bg_get): kept well under the frame limit whatever is configured.
        cap = min(int(req.get("output_cap") or 1 << 20), MAX_FRAME // 4)
        self.command = req["command"]
        self.rings = {1: Ring(cap), 2: Ring(cap)}
        self.watchers = []
        self.exit_code = None
        self.started_at = now_iso()
        self.ended_at = None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe()
        try:
            # stdin is fd 0 of the child (spawn moves extra fds after /dev/null).
            self.pid = spawn([*program("/bin/bash"), "--norc", "--noprofile", "-c", self.command], cwd, env_for(req.get("env")), out_w, err_w, {0: in_r})
        finally:
            for fd in (out_w, err_w, in_r):
                os.close(fd)
        self.stdin = in_w
        try:
            fcntl.fcntl(in_w, F_SETPIPE_SZ, 1 << 20)  # a whole bounded stdin write fits at once
        except OSError:
            pass
        os.set_blocking(in_w, False)
        # Each output pipe goes into its ring, and on to every watcher (see output).
        self.out = Stream(out_r, self, 1)
        self.err = Stream(err_r, self, 2)
        children[self.pid] = self

    def output(self, num, data):
        self.rings[num].add(data)
        for wid in self.watchers:
            send({"ev": "out", "id": wid, "stream": num}, data)

    def info(self):
        return {
            "pid": self.pid,
            "command": self.command,
            "status": "running" if self.exit_code is None else "exited",
            "exit_code": self.exit_code,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }

    def on_exit(self, status):
        # A signal death is reported as a shell does: 128 + N.
        self.exit_code = status if status >= 0 else 128 - status
        self.ended_at = now_iso()
        self.out.drain()
        self.err.drain()
        # Children it left behind may hold the pipes open: their output is no longer this process's.
        self.out.close()
        self.err.close()
        self.close_stdin()
        for wid in self.watchers:
            watches.pop(wid, None)
            send({"ev": "exit", "id": wid, "exit_status": status})
        self.watchers = []

    def close_stdin(self):
        if self.stdin >= 0:
            os.close(self.stdin)
            self.stdin = -1


def forget_exited(limit):
    """Keeps at most `limit` exited processes in the table (the oldest go first)."""
    exited = [p for p in procs.values() if p.exit_code is not None]
    for p in exited[: max(0, len(exited) - limit)]:
        del procs[p.pid]


def found(rid, pid):
    p = procs.get(pid)
    if p is None:
        send({"ev": "bg", "id": rid, "status": "not_found"})
    return p


def handle_bg(op, header, body):
    rid = header.get("id")
    if op == "bg_start":
        cwd = resolve(header.get("cwd") or WORKDIR)
        if not os.path.isdir(cwd):
            send({"ev": "bg", "id": rid, "status": "bad_cwd", "message": cwd})
            return
        limit = int(header.get("max_procs") or 16)
        running = sum(1 for p in procs.values() if p.exit_code is None)
        if running >= limit:
            send({"ev": "bg", "id": rid, "status": "too_many", "message": "%d background processes are running (the limit)" % running})
            return
        forget_exited(limit - 1)
        try:
            p = Background(header, cwd)
        except OSError as e:
            send({"ev": "bg", "id": rid, "status": "spawn_error", "message": "could not start the command: %s" % e})
            return
        procs[p.pid] = p
        send({"ev": "bg", "id": rid, "status": "ok", "procs": [p.info()]})
    elif op == "bg_list":
        send({"ev": "bg", "id": rid, "status": "ok", "procs": [p.info() for p in procs.values()]})
    elif op == "bg_get":
        p = found(rid, header.get("pid"))
        if p is not None:
            out, err = bytes(p.rings[1].buf), bytes(p.rings[2].buf)
            info = p.info()
            info.update({"stdout_len": len(out), "stdout_dropped": p.rings[1].dropped, "stderr_dropped": p.rings[2].dropped})
            send({"ev": "bg", "id": rid, "status": "ok", "procs": [info]}, out + err)
    elif op == "bg_watch":
        # Answered by `out` events (what is retained, then live output) and `exit` when it ends.
        p = found(rid, header.get("pid"))
        if p is None:
            return
        for num in (1, 2):
            if p.rings[num].buf:
                send({"ev": "out", "id": rid, "stream": num}, bytes(p.rings[num].buf))
        if p.exit_code is not None:
            send({"ev": "exit", "id": rid, "exit_status": p.exit_code})
            return
        p.watchers.append(rid)
        watches[rid] = p
    elif op == "bg_stdin":
        p = found(rid, header.get("pid"))
        if p is None:
            return
        if p.stdin < 0:
            send({"ev": "bg", "id": rid, "status": "closed", "message": "the process's stdin is closed"})
            return
        written = 0
        try:
            while written < len(body):
                written += os.write(p.stdin, body[written:])
        except BlockingIOError:
            pass
        except OSError as e:  # EPIPE: nobody reads it any more
            send({"ev": "bg", "id": rid, "status": "closed", "message": "the process's stdin is closed (%s)" % e.strerror})
            return
        if written < len(body):
            send({"ev": "bg", "id": rid, "status": "full", "message": "the process has not read its stdin: %d of %d bytes written" % (written, len(body))})
            return
        if header.get("eof"):
            p.close_stdin()
        send({"ev": "bg", "id": rid, "status": "ok"})
    elif op == "bg_signal":
        p = found(rid, header.get("pid"))
        if p is None:
            return
        if p.exit_code is None:
            signal_group(p.pid, SIGNALS.get(header.get("signal"), signal.SIGKILL))
        send({"ev": "bg", "id": rid, "status": "ok", "procs": [p.info()]})
    elif op == "bg_unwatch":
        p = watches.pop(header.get("watch"), None)
        if p is not None and header.get("watch") in p.watchers:
            p.watchers.remove(header.get("watch"))
        send({"ev": "ok", "id": rid})
