# The supervisor's main loop: requests from the service (handle), exited children (reap), run and
# command deadlines, and the process-cap check.
import ctypes
import os
import selectors
import signal
import time

from .archive import handle_archive
from .background import handle_bg
from .commands import Command
from .datastack import prewarm
from .files import file_op, resolve
from .kernels import Kernel, Run
from .netstart import start_relay
from .pidcap import PIDS_CHECK_S, PIDS_MAX, check_pids, pids_check, start_kernel
from .protocol import LinkReader, send, widen_pipes
from .state import HOME, WORKDIR, children, kernels, runs, sel, user_env
from .stats import own_io, start_io_accounting, stats

GRACE_S = 1.0
FILE_OPS = ("file", "open_read", "read_chunk", "open_write", "write_chunk", "commit", "close")


def handle(header, body):
    op = header.get("op")
    rid = header.get("id")
    prewarm.on_request(op)
    if op == "run":
        run = Run(header, body)
        key = header.get("kernel") or header["lang"]
        kernel = kernels.get(key)
        if kernel is None:
            try:
                kernel = start_kernel(key, header)
            except OSError as e:
                send({"ev": "done", "id": rid, "error": "Kernel failed to start: %s" % e, "state_lost": True})
                return
            kernels[key] = kernel
        run.kernel = kernel
        runs[rid] = run
        if pids_check["notice"]:
            run.output(2, pids_check["notice"].encode())
            pids_check["notice"] = None
        kernel.start(run)
    elif op == "start_kernel":
        key = header["kernel"]
        if key not in kernels:
            try:
                kernels[key] = start_kernel(key, header)
            except OSError as e:  # EAGAIN at the process cap, ENOMEM...: an answer, not the end of the supervisor
                send({"ev": "error", "id": rid, "message": "Kernel failed to start: %s" % e})
                return
        send({"ev": "ok", "id": rid})
    elif op == "kill_kernel":
        kernel = kernels.pop(header["kernel"], None)
        if kernel is not None:
            kernel.kill()
        send({"ev": "ok", "id": rid})
    elif op == "exec":
        cwd = resolve(header.get("cwd") or WORKDIR)
        if not os.path.isdir(cwd):
            send({"ev": "exit", "id": rid, "bad_cwd": cwd})
            return
        try:
            runs[rid] = Command(header, cwd)
        except OSError as e:
            send({"ev": "exit", "id": rid, "exit_status": 127, "spawn_error": "could not start the command: %s" % e})
    elif op == "cancel":
        # A client stopped waiting: a python run is interrupted (kernel state kept), other kernels
        # and commands are killed, as a timeout does.
        job = runs.get(header.get("target"))
        if job is not None:
            job.stop()
        send({"ev": "ok", "id": rid})
    elif op.startswith("bg_"):
        handle_bg(op, header, body)
    elif op.startswith("archive_"):
        handle_archive(op, header, body)
    elif op in FILE_OPS:
        reply, data = file_op(op, header, body)
        if reply is not None:
            reply.update({"ev": "file", "id": rid})
            send(reply, data)
        elif op == "read_chunk":
            send({"ev": "chunk", "id": rid}, data)
        else:
            send({"ev": "ok", "id": rid})
    elif op == "stats":
        reply = stats()
        reply.update({"ev": "stats", "id": rid})
        send(reply)
    elif op == "setenv":
        user_env.clear()
        user_env.update(header.get("env") or {})
        send({"ev": "ok", "id": rid})
    elif op == "ping":
        send({"ev": "ok", "id": rid})
    elif op == "net":
        try:
            started = start_relay(header)
        except OSError as e:
            send({"ev": "error", "id": rid, "message": "network relay failed to start: %s" % e})
            return
        send({"ev": "ok", "id": rid, "started": started})
    elif op == "prewarm":
        # Asked by the service for the few pool sandboxes next in line (not every sandbox: each
        # pre-import costs ~0.6 s of CPU and ~60 MiB while it is held).
        try:
            prewarm.start(lambda: Kernel("python:warm", "python", WORKDIR, None, warm=True))
        except OSError:
            pass  # no head start, nothing else lost
        send({"ev": "ok", "id": rid})
    else:
        send({"ev": "error", "id": rid, "message": "unknown op"})


def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        child = children.pop(pid, None)
        if child is not None:
            code = os.waitstatus_to_exitcode(status)
            child.on_exit(code)


def check_deadlines():
    now = time.monotonic()
    for job in list(runs.values()):
        if job.killed_at is None and now >= job.deadline:
            job.expire()
        elif job.killed_at is not None and now - job.killed_at > GRACE_S:
            job.escalate()


def main():
    start_io_accounting()
    widen_pipes()
    # Not dumpable: user code runs as the same uid and must not reach our fds through /proc.
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        # PR_SET_CHILD_SUBREAPER = 36: orphaned background jobs are reaped here (their I/O counted).
        libc.prctl(36, 1, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort; the sandbox is the boundary
        pass
    os.chdir(HOME)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    sel.register(wake_r, selectors.EVENT_READ, Waker(wake_r))
    sel.register(0, selectors.EVENT_READ, LinkReader(handle))
    send({"ev": "ready", "pid": os.getpid()})
    while True:
        timeout = PIDS_CHECK_S if PIDS_MAX else None
        if runs:
            now = time.monotonic()
            nxt = min((j.deadline if j.killed_at is None else j.killed_at + GRACE_S) for j in runs.values())
            wait = max(0.0, nxt - now) + 0.001
            timeout = wait if timeout is None else min(timeout, wait)
        for key, _ in sel.select(timeout):
            key.data.on_ready()
        reap()
        check_deadlines()
        check_pids()
        prewarm.tick()


class Waker:
    """Drains the signal wake-up pipe; the loop reaps children after every wake-up."""

    def __init__(self, fd):
        self.fd = fd

    def on_ready(self):
        try:
            while True:
                data = os.read(self.fd, 4096)
                own_io[0] += len(data)
                if not data:
                    break
        except BlockingIOError:
            pass

