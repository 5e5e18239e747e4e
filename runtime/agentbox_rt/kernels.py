# Kernels: one long-lived process per language (or named context) that runs code and keeps its
# state between runs. Python is forked from the supervisor, node runs node_kernel.js, bash runs
# BASH_DRIVER; each reports a run's result over its own control socket.
import _ast  # the C module behind `ast` (its node types are all run_cell needs; ast.py costs memory)
import builtins  # noqa: F401 - preloaded so a forked python kernel starts without imports
import ctypes
import io  # noqa: F401 - preloaded for the python kernel
import json
import os
import selectors
import shlex  # noqa: F401 - preloaded for the bash kernel: lazily loading it later would show up as sandbox disk I/O
import signal
import socket
import sys
import time
import traceback  # noqa: F401 - preloaded for the python kernel

from . import datastack
from .datastack import prewarm
from .display import Results, hook_matplotlib
from .procs import signal_group, spawn
from .programs import program, system_path
from .protocol import MAX_FRAME, send
from .state import HOME, children, env_for, kernels, runs, sel
from .streams import Job, Stream

# Once per sandbox, when the supervisor loads: matplotlib's environment for every process.
datastack.prepare()
# A control-socket line longer than this is not a result the supervisor could forward: skipped.
MAX_CTL_LINE = 64 << 20
RESULT_PREFIX = b'{"result":'

NODE_KERNEL = "/opt/agentbox/node_kernel.js"
# The kernel's working directory is set by spawn() (a context's cwd, else /home/user).
# Each run arrives as three NUL-terminated fields: set-up (the run's own environment, with the
# previous values saved), the user's code, and the restore step; the code's status is reported.
BASH_DRIVER = (
    "while IFS= read -r -d '' __ab_pre <&3 && IFS= read -r -d '' __ab_code <&3 && IFS= read -r -d '' __ab_post <&3; do "
    "eval \"$__ab_pre\"; "
    "{ eval \"$__ab_code\"; } 3<&- </dev/null; "
    "__ab_rc=$?; eval \"$__ab_post\"; "
    "printf '{\"rc\":%d}\\n' \"$__ab_rc\" >&3; "
    "done"
)


class Kernel:
    def __init__(self, key, lang, cwd, env, warm=False):
        self.key = key
        self.lang = lang
        self.run = None
        self.ctl_buf = bytearray()
        self.ctl_skip = False  # inside a control line too long to keep (see on_ready)
        self.warm_ready = False  # a pre-import kernel that has imported the data stack
        self.reset_env = False  # claimed pre-import kernel: its environment predates setenv
        parent, child = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        kenv = env_for(env)
        if lang == "python":
            pid = os.fork()
            if pid == 0:
                try:
                    parent.close()
                    python_kernel(child.detach(), out_w, err_w, cwd, kenv, warm)
                finally:
                    os._exit(70)
        else:
            if lang == "bash":
                argv = [*program("/bin/bash"), "--norc", "--noprofile", "-c", BASH_DRIVER]
                ctl_target = 3
            else:
                argv = [*program("/usr/bin/node"), "--max-old-space-size=4096", NODE_KERNEL]
                ctl_target = 3
            pid = spawn(argv, cwd, kenv, out_w, err_w, {ctl_target: child.fileno()})
        child.close()
        os.close(out_w)
        os.close(err_w)
        self.pid = pid
        self.ctl = parent
        parent.setblocking(False)
        sel.register(parent.fileno(), selectors.EVENT_READ, self)
        self.out = Stream(out_r, None, 1)
        self.err = Stream(err_r, None, 2)
        children[pid] = self

    def start(self, run):
        if self.key == "python" and not prewarm.decided:
            warm = prewarm.claim(run.code)
            if warm is not None:
                # The first run of the sandbox's python imports the data stack and a kernel that
                # already has it is ready: that kernel becomes the sandbox's python kernel.
                warm.key = self.key
                warm.reset_env = True
                kernels[self.key] = warm
                run.kernel = warm
                self.discard()
                return warm.start(run)
        self.run = run
        self.out.owner = run
        self.err.owner = run
        msg = {"code": run.code, "timeout_ms": run.timeout_ms, "env": run.env, "async": run.is_async, "output_cap": run.cap}
        if self.reset_env:
            self.reset_env = False
            msg["base_env"] = env_for()
        if self.lang == "bash":
            import shlex

            names = [k for k in run.env if k.isidentifier() and not k.startswith("__ab_")]
            pre = post = ""
            if names:
                pre = "__ab_saved=$(declare -p %s 2>/dev/null); " % " ".join(names)
                pre += "".join("export %s=%s; " % (k, shlex.quote(run.env[k])) for k in names)
                post = 'unset %s; eval "$__ab_saved"; unset __ab_saved' % " ".join(names)
            fields = [pre, run.code, post]
            payload = b"".join(f.encode("utf-8", "surrogateescape").replace(b"\0", b"") + b"\0" for f in fields)
        else:
            payload = json.dumps(msg).encode() + b"\n"
        self.ctl.setblocking(True)
        try:
            self.ctl.sendall(payload)
        except OSError:
            pass
        self.ctl.setblocking(False)

    def on_ready(self):
        try:
            data = self.ctl.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            sel.unregister(self.ctl.fileno())
            return
        start = len(self.ctl_buf)
        self.ctl_buf += data
        nl = self.ctl_buf.find(b"\n", start)
        while nl >= 0:
            line = bytes(self.ctl_buf[:nl])
            del self.ctl_buf[: nl + 1]
            if self.ctl_skip:
                self.ctl_skip = False
            else:
                self.on_line(line)
            nl = self.ctl_buf.find(b"\n")
        if len(self.ctl_buf) > MAX_CTL_LINE:
            # A line this long is dropped as it arrives, never held whole (the kernel is user code).
            self.ctl_skip = True
            if self.run is not None:
                self.run.drop_result(len(self.ctl_buf))
            self.ctl_buf.clear()

    def on_line(self, line):
        if line.startswith(RESULT_PREFIX) and line.endswith(b"}"):
            if self.run is not None:
                self.out.drain()  # what was printed before the result is sent before it
                self.err.drain()
                self.run.result(line[len(RESULT_PREFIX) : -1])
            return
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        if "result_dropped" in msg:
            if self.run is not None:
                self.run.drop_result(msg["result_dropped"])
            return
        if msg.get("warm"):
            self.warm_ready = True
            datastack.not_sandbox_io(self.pid)
            return
        if self.run is not None:
            self.out.drain()
            self.err.drain()
            run, self.run = self.run, None
            self.out.owner = self.err.owner = None
            run.finish(msg, state_lost=False)

    def discard(self):
        """Ends a kernel nobody will use (an unclaimed pre-import kernel, or the plain kernel a
        claimed one replaces): its exit is not a run's failure."""
        children.pop(self.pid, None)
        signal_group(self.pid, signal.SIGKILL)
        try:
            sel.unregister(self.ctl.fileno())
        except (KeyError, ValueError):
            pass
        self.ctl.close()
        self.out.close()
        self.err.close()
        # Gone before the run that replaced it answers: its memory must not still count as the
        # sandbox's (metrics, the memory limit). Exiting frees it; bounded, reap() gets stragglers.
        deadline = time.monotonic() + 0.1
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid:
                return
            time.sleep(0.001)

    def collect(self):
        """Asks an idle python kernel to reap its exited children (see reclaim_pids)."""
        if self.lang == "python" and self.run is None:
            try:
                self.ctl.send(b'{"collect": true}\n')
            except OSError:
                pass

    def interrupt(self):
        if self.lang == "python":
            signal_group(self.pid, signal.SIGINT)
        else:
            self.kill()

    def kill(self):
        signal_group(self.pid, signal.SIGKILL)

    def on_exit(self, status):
        if prewarm.kernel is self:
            prewarm.kernel = None
        self.out.drain()
        self.err.drain()
        try:
            sel.unregister(self.ctl.fileno())
        except (KeyError, ValueError):
            pass
        self.ctl.close()
        signal_group(self.pid, signal.SIGKILL)
        if kernels.get(self.key) is self:
            del kernels[self.key]
        self.out.owner = self.err.owner = None
        if self.run is not None:
            run, self.run = self.run, None
            run.finish({"exit_status": status}, state_lost=True)


class Run(Job):
    def __init__(self, req, body):
        super().__init__(req)
        self.code = body.decode("utf-8", "surrogateescape")
        self.timeout_ms = int(req.get("timeout_ms", 30000))
        self.env = req.get("env") or {}
        self.is_async = bool(req.get("async"))
        self.kernel = None
        self.result_bytes = 0
        self.dropped = None  # size of the first result too large for the output cap

    def result(self, body):
        """One rich result from the kernel (UTF-8 JSON), forwarded as it comes; the results of a
        run share one output cap, as each output stream has its own."""
        # A frame over MAX_FRAME is never sent (the service would end the sandbox): dropped like one over the cap.
        if self.result_bytes + len(body) > self.cap or len(body) > MAX_FRAME - 4096:
            self.drop_result(len(body))
            return
        self.result_bytes += len(body)
        send({"ev": "result", "id": self.id}, body)

    def drop_result(self, size):
        send({"ev": "result", "id": self.id, "too_large": size})
        if self.dropped is None:
            self.dropped = size
            self.output(2, b"[result of %d bytes dropped: results are limited to %d bytes per run]\n" % (size, self.cap))

    def stop(self):
        if self.kernel is not None and self.killed_at is None:
            self.killed_at = time.monotonic()
            self.kernel.interrupt()

    def expire(self):
        self.timed_out = True
        self.stop()

    def escalate(self):
        if self.kernel is not None:
            self.kernel.kill()

    def finish(self, msg, state_lost):
        runs.pop(self.id, None)
        error = msg.get("error")
        if error is None and self.dropped is not None:
            error = "A result of %d bytes exceeded the output limit of %d bytes and was dropped" % (self.dropped, self.cap)
        send(
            {
                "ev": "done",
                "id": self.id,
                "error": error,
                "rc": msg.get("rc"),
                "exit_status": msg.get("exit_status"),
                "state_lost": state_lost,
                "timed_out": self.timed_out,
                "truncated": self.truncated,
                "elapsed_ms": self.elapsed_ms(),
                "exec_ms": msg.get("exec_ms"),
            }
        )


def python_kernel(ctl_fd, out_w, err_w, cwd, env, warm=False):
    """Body of a python kernel process (forked from the supervisor: no interpreter start-up). A
    `warm` kernel first imports the data stack (datastack.prewarm_imports) and says so."""
    import builtins
    import io
    import traceback

    os.setsid()
    # Forked from the non-dumpable supervisor: become dumpable like every exec'd kernel, so the
    # supervisor can read this process's /proc/<pid>/io (sandbox disk metrics). User code runs in
    # this process anyway; nothing here is hidden from it.
    try:
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # As python3 itself does at start: a write to a closed pipe or socket raises BrokenPipeError
    # instead of killing the kernel (and its state) with SIGPIPE. subprocess restores the default
    # for the programs user code starts.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.dup2(ctl_fd, 3, inheritable=False)
    os.closerange(4, 65536)
    try:
        os.chdir(cwd)
    except OSError:
        os.chdir(HOME)
    os.environ.clear()
    os.environ.update(env)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True)
    sys.argv = [""]
    sys.path[:] = system_path(sys.path)
    sys.path.insert(0, "")
    ctl = socket.socket(fileno=3)
    reader = ctl.makefile("rb")
    results = Results(ctl)
    # display() needs no import, as in a notebook.
    builtins.display = results.display
    hook_matplotlib(results, datastack.link_font_cache)
    user_globals = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
    kernel_pid = os.getpid()
    if warm:
        try:
            datastack.prewarm_imports()
        except KeyboardInterrupt:
            pass
        ctl.sendall(b'{"warm": true}\n')
    while True:
        try:
            line = reader.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            os._exit(0)
        req = json.loads(line)
        if req.get("collect"):
            collect_children(0)
            continue
        if req.get("base_env") is not None:
            # A pre-import kernel's first run: the sandbox's environment as it is now, matplotlib's directory back.
            os.environ.clear()
            os.environ.update(req["base_env"])
            if "matplotlib" in sys.modules:
                datastack.link_font_cache()
        results.begin(int(req.get("output_cap") or 10 << 20))
        saved_env = None
        if req.get("env"):
            saved_env = dict(os.environ)
            os.environ.update(req["env"])
        error = None
        t0 = time.monotonic()
        try:
            try:
                run_cell(req["code"], user_globals, results)
            except SystemExit as e:
                if e.code not in (None, 0):
                    error = "SystemExit: %s" % (e.code,)
            except BaseException as e:  # noqa: BLE001 - user code may raise anything; report it
                if isinstance(e, KeyboardInterrupt) and os.getpid() != kernel_pid:
                    os._exit(130)  # a forked child, interrupted with the run: no traceback per child
                error = describe_python_error(e, traceback)
        except KeyboardInterrupt:
            if os.getpid() != kernel_pid:
                os._exit(130)
            error = "KeyboardInterrupt"
        exec_ms = int((time.monotonic() - t0) * 1000)
        if os.getpid() != kernel_pid:
            # A process the cell forked (os.fork) that ran off the end of the cell, or was interrupted
            # in it: it must not become a second kernel reading the same control socket.
            for s in (sys.stdout, sys.stderr):
                try:
                    s.flush()
                except Exception:  # noqa: BLE001
                    pass
            os._exit(1 if error else 0)
        if error is not None and error.startswith("KeyboardInterrupt"):
            collect_children(0.2)
        if "matplotlib._pylab_helpers" in sys.modules:
            try:
                results.flush_figures()
            except BaseException as e:  # noqa: BLE001 - drawing is user code too (an interrupt included)
                error = error or describe_python_error(e, traceback)
        if saved_env is not None:
            os.environ.clear()
            os.environ.update(saved_env)
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:  # noqa: BLE001 - a broken stream must not take the kernel down
                pass
        # The reply starts a line of its own: a result line the cell left unfinished (an interrupt
        # while it was being sent, or user code writing to fd 3) cannot swallow it.
        while True:
            try:
                ctl.sendall(b"\n" + json.dumps({"error": error, "exec_ms": exec_ms}).encode() + b"\n")
                break
            except KeyboardInterrupt:
                continue


def run_cell(code, user_globals, results):
    """Runs a cell as a notebook does: the value of a last expression statement (not None, and
    the cell not ending in ';') is the run's main result instead of being discarded."""
    tree = compile(code, "<cell>", "exec", _ast.PyCF_ONLY_AST)
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, _ast.Expr):
        exec(compile(tree, "<cell>", "exec"), user_globals)
        return
    del tree.body[-1]
    if tree.body:
        exec(compile(tree, "<cell>", "exec"), user_globals)
    value = eval(compile(_ast.Expression(last.value), "<cell>", "eval"), user_globals)
    if value is not None and not code.rstrip().endswith(";"):
        results.value(value)


def collect_children(wait_s):
    """After an interrupted cell: reaps the children the interrupt ended (the cell will never wait
    for them), so they do not hold the sandbox's process slots as zombies. Waits up to `wait_s` for
    children still exiting; children that keep running are left alone."""
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.005)
    except KeyboardInterrupt:
        return


def describe_python_error(e, traceback):
    tb = e.__traceback__
    # Hide the kernel's own frames: the user sees only their cell.
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    try:
        sys.stderr.write("".join(traceback.format_exception(type(e), e, tb)))
    except Exception:  # noqa: BLE001
        pass
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    name = type(e).__name__
    return "%s: %s" % (name, first) if first else name
