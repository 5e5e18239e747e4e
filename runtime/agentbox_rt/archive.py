# Snapshot archives through the channel: archive_create starts /opt/agentbox/archive_tool.py, which
# writes a tar of /home/user into a pipe that archive_read drains (`chunk` answers, then one
# `archive` answer with end=true and the tool's summary); archive_extract starts it the other way,
# archive_write feeds it (answered once the bytes are in the pipe) and archive_finish closes its
# input and answers with its summary; archive_close kills it. The tool is a process of its own in
# the sandbox (same uid, namespaces, limits), so a huge or hostile workspace costs the sandbox, not
# the supervisor's loop: every pipe here is non-blocking and waited on by the main selector.
import fcntl
import json
import os
import selectors
import signal

from .procs import signal_group, spawn
from .programs import own_python
from .protocol import send
from .state import HOME, base_env, children, sel
from .stats import own_io

TOOL = [*own_python(), "-I", "/opt/agentbox/archive_tool.py"]
MAX_ARCHIVES = 4
ERR_KEEP = 64 << 10
F_SETPIPE_SZ = 1031

archives = {}  # handle -> Archive
counter = [0]


class Archive:
    def __init__(self, mode, limit):
        self.mode = mode
        self.code = None  # exit status once the tool has exited
        self.err = bytearray()
        self.eof = False
        self.pending = None  # (request id, max bytes) of a read, or (request id, memoryview) of a write
        self.finishing = None  # request id of archive_finish
        self.watching = False
        data_r, data_w = os.pipe()
        err_r, err_w = os.pipe()
        for fd in (data_r, data_w):
            try:
                fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
            except OSError:
                pass  # the default size works, with more wake-ups
        argv = TOOL + [mode, str(int(limit))]
        env = {k: base_env[k] for k in ("PATH", "HOME", "LANG")}
        try:
            if mode == "create":
                self.pid = spawn(argv, HOME, env, data_w, err_w, {})
                self.fd, other = data_r, data_w
            else:
                null = os.open("/dev/null", os.O_WRONLY)
                try:
                    self.pid = spawn(argv, HOME, env, null, err_w, {0: data_r})
                finally:
                    os.close(null)
                self.fd, other = data_w, data_r
        except OSError:
            for fd in (data_r, data_w, err_r, err_w):
                os.close(fd)
            raise
        os.close(other)
        os.close(err_w)
        self.err_fd = err_r
        os.set_blocking(self.fd, False)
        os.set_blocking(err_r, False)
        children[self.pid] = self

    # ---- events from the main loop ----

    def on_ready(self):
        self.drain_err()
        self.pump()

    def on_exit(self, code):
        self.code = code
        self.drain_err()
        self.pump()

    def drain_err(self):
        while self.err_fd >= 0:
            try:
                data = os.read(self.err_fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            own_io[0] += len(data)
            if not data:
                os.close(self.err_fd)
                self.err_fd = -1
                return
            self.err += data
            del self.err[:-ERR_KEEP]

    def watch(self, on):
        if on and not self.watching and self.fd >= 0:
            sel.register(self.fd, selectors.EVENT_READ if self.mode == "create" else selectors.EVENT_WRITE, self)
            self.watching = True
        elif not on and self.watching:
            sel.unregister(self.fd)
            self.watching = False

    def close_fd(self):
        self.watch(False)
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    # ---- the answers ----

    def summary(self, rid, end):
        status, message, files = "ok", None, None
        lines = [ln for ln in bytes(self.err).decode("utf-8", "replace").splitlines() if ln.strip()]
        parsed = None
        if lines:
            try:
                parsed = json.loads(lines[-1])
            except ValueError:
                parsed = None
        if not isinstance(parsed, dict):
            parsed = {}
        if self.code != 0 or "error" in parsed:
            status = str(parsed.get("kind") or "error")
            message = str(parsed.get("error") or "the archive tool exited with status %s: %s" % (self.code, " ".join(lines[-3:])[:500]))
        elif isinstance(parsed.get("files"), int):
            files = parsed["files"]
        reply = {"ev": "archive", "id": rid, "status": status, "end": end}
        if message is not None:
            reply["message"] = message
        if files is not None:
            reply["files"] = files
        return reply

    def pump(self):
        if self.mode == "create":
            self.pump_read()
        else:
            self.pump_write()

    def pump_read(self):
        if self.pending is None:
            return
        rid, mx = self.pending
        buf = bytearray()
        while not self.eof and len(buf) < mx:
            try:
                data = os.read(self.fd, mx - len(buf))
            except BlockingIOError:
                break
            own_io[0] += len(data)
            if not data:
                self.eof = True
                self.close_fd()
                break
            buf += data
        if buf:
            self.pending = None
            self.watch(False)
            send({"ev": "chunk", "id": rid}, bytes(buf))
            return
        if not self.eof:
            self.watch(True)
            return
        if self.code is None:
            return  # on_exit answers
        self.pending = None
        archives.pop(self.handle, None)
        send(self.summary(rid, True))

    def pump_write(self):
        if self.pending is not None:
            rid, view = self.pending
            while view and self.fd >= 0:
                try:
                    n = os.write(self.fd, view)
                except BlockingIOError:
                    self.watch(True)
                    return
                except OSError:
                    # The tool stopped reading (it refused the archive): its summary says why.
                    self.close_fd()
                    view = view[:0]
                    break
                view = view[n:]
            self.pending = None
            self.watch(False)
            if self.fd < 0 and self.code is not None:
                send(self.summary(rid, True))
            else:
                send({"ev": "ok", "id": rid})
        if self.finishing is not None and self.pending is None:
            self.close_fd()
            if self.code is None:
                return
            rid, self.finishing = self.finishing, None
            archives.pop(self.handle, None)
            send(self.summary(rid, True))

    def kill(self):
        # A read or finish still waiting is answered, so the service never waits out its deadline.
        waiting = ([self.pending[0]] if self.pending else []) + ([self.finishing] if self.finishing else [])
        for rid in waiting:
            send({"ev": "archive", "id": rid, "status": "invalid", "end": True, "message": "the archive was closed"})
        if self.code is None:
            signal_group(self.pid, signal.SIGKILL)
        self.close_fd()
        if self.err_fd >= 0:
            os.close(self.err_fd)
            self.err_fd = -1
        self.pending = self.finishing = None


def handle_archive(op, req, body):
    rid = req.get("id")
    if op in ("archive_create", "archive_extract"):
        if len(archives) >= MAX_ARCHIVES:
            send({"ev": "archive", "id": rid, "status": "busy", "end": True, "message": "too many archives in progress"})
            return
        try:
            a = Archive("create" if op == "archive_create" else "extract", req.get("limit") or 0)
        except OSError as e:
            send({"ev": "archive", "id": rid, "status": "error", "end": True, "message": "could not start the archive tool: %s" % e})
            return
        counter[0] += 1
        a.handle = counter[0]
        archives[a.handle] = a
        send({"ev": "archive", "id": rid, "status": "ok", "end": False, "handle": a.handle})
        return
    a = archives.get(req.get("handle"))
    if a is None:
        send({"ev": "archive", "id": rid, "status": "invalid", "end": True, "message": "no such archive"})
        return
    if op == "archive_close":
        archives.pop(a.handle, None)
        a.kill()
        send({"ev": "ok", "id": rid})
    elif op == "archive_read" and a.mode == "create" and a.pending is None:
        a.pending = (rid, max(1, min(int(req.get("max") or 1 << 20), 1 << 20)))
        a.pump()
    elif op == "archive_write" and a.mode == "extract" and a.pending is None and a.finishing is None:
        a.pending = (rid, memoryview(body))
        a.pump()
    elif op == "archive_finish" and a.mode == "extract" and a.finishing is None:
        a.finishing = rid
        a.pump()
    else:
        send({"ev": "archive", "id": rid, "status": "invalid", "end": True, "message": "%s is not valid now" % op})
