# The in-sandbox supervisor: runs inside a sandbox's namespaces as the sandbox user, owns every
# kernel and command process there, and talks to the service over its stdin/stdout (never shared
# with user code). Frames both ways: u32 total length, u32 header length, JSON header, raw body.
#
# Requests (header.op): run, exec, kill_kernel, file, stats, setenv. Every request carries an `id`;
# every answer carries the same `id`. Output of runs and commands streams back as `out` frames.
import builtins  # noqa: F401 - preloaded so a forked python kernel starts without imports
import ctypes
import errno
import io  # noqa: F401 - preloaded for the python kernel
import traceback  # noqa: F401 - preloaded for the python kernel
import json
import os
import select  # noqa: F401 - preloaded: lazily loading it later would show up as sandbox disk I/O
import shlex  # noqa: F401 - preloaded for the bash kernel, same reason
import shutil  # noqa: F401 - preloaded for file deletes, same reason
import selectors
import signal
import socket
import stat
import struct
import sys
import time

HOME = "/home/user"
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
GRACE_S = 1.0

sel = selectors.DefaultSelector()
link_in = os.fdopen(0, "rb", buffering=0)
link_out_fd = 1
base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "LANG": "C.UTF-8", "TMPDIR": "/tmp", "USER": "user"}
user_env = {}
children = {}  # pid -> Child
kernels = {}  # kernel key -> Kernel
runs = {}  # request id -> Run


def send(header, body=b""):
    h = json.dumps(header, separators=(",", ":")).encode()
    data = struct.pack(">II", 4 + len(h) + len(body), len(h)) + h + body
    view = memoryview(data)
    while view:
        try:
            n = os.write(link_out_fd, view)
            own_io[1] += n
            view = view[n:]
        except BlockingIOError:
            select_write(link_out_fd)


def select_write(fd):
    import select

    select.select([], [fd], [])


def env_for(extra=None):
    env = dict(base_env)
    env.update(user_env)
    if extra:
        env.update(extra)
    return env


class Stream:
    """A pipe from a child whose bytes are forwarded to the run or command that owns it now."""

    def __init__(self, fd, owner, num):
        self.fd = fd
        self.owner = owner  # a Run/Command or None (discard)
        self.num = num
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, self)

    def on_ready(self):
        """Reads what is there; False once nothing more is available right now."""
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        own_io[0] += len(data)
        if not data:
            self.close()
            return False
        if self.owner is not None:
            self.owner.output(self.num, data)
        return True

    def drain(self):
        while self.fd >= 0 and self.on_ready():
            pass

    def close(self):
        if self.fd >= 0:
            sel.unregister(self.fd)
            os.close(self.fd)
            self.fd = -1


class Job:
    """Common part of a code run and a command: output accounting, caps, deadline."""

    def __init__(self, req):
        self.id = req["id"]
        self.cap = int(req.get("output_cap", 10 << 20))
        self.deadline = time.monotonic() + req.get("timeout_ms", 30000) / 1000.0
        self.sizes = {1: 0, 2: 0}
        self.truncated = False
        self.timed_out = False
        self.started = time.monotonic()
        self.killed_at = None

    def output(self, num, data):
        room = self.cap - self.sizes[num]
        if room <= 0:
            self.overflow()
            return
        if len(data) > room:
            data = data[:room]
        self.sizes[num] += len(data)
        send({"ev": "out", "id": self.id, "stream": num}, data)
        if self.sizes[num] >= self.cap:
            self.overflow()

    def overflow(self):
        if not self.truncated:
            self.truncated = True
            self.stop()

    def elapsed_ms(self):
        return int((time.monotonic() - self.started) * 1000)


class Kernel:
    def __init__(self, key, lang, cwd, env):
        self.key = key
        self.lang = lang
        self.run = None
        self.ctl_buf = b""
        parent, child = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        kenv = env_for(env)
        if lang == "python":
            pid = os.fork()
            if pid == 0:
                try:
                    parent.close()
                    python_kernel(child.detach(), out_w, err_w, cwd, kenv)
                finally:
                    os._exit(70)
        else:
            if lang == "bash":
                argv = ["/bin/bash", "--norc", "--noprofile", "-c", BASH_DRIVER]
                ctl_target = 3
            else:
                argv = ["/usr/bin/node", "--max-old-space-size=4096", NODE_KERNEL]
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
        self.run = run
        self.out.owner = run
        self.err.owner = run
        msg = {"code": run.code, "timeout_ms": run.timeout_ms, "env": run.env, "async": run.is_async}
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
        self.ctl_buf += data
        while b"\n" in self.ctl_buf:
            line, self.ctl_buf = self.ctl_buf.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if self.run is not None:
                self.out.drain()
                self.err.drain()
                run, self.run = self.run, None
                self.out.owner = self.err.owner = None
                run.finish(msg, state_lost=False)

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
        send(
            {
                "ev": "done",
                "id": self.id,
                "error": msg.get("error"),
                "rc": msg.get("rc"),
                "exit_status": msg.get("exit_status"),
                "state_lost": state_lost,
                "timed_out": self.timed_out,
                "truncated": self.truncated,
                "elapsed_ms": self.elapsed_ms(),
                "exec_ms": msg.get("exec_ms"),
            }
        )


class Command(Job):
    """One `commands/run`: a fresh `bash -c` in its own process group. What it starts in the
    background stays alive after it exits (its output is then discarded); a timeout or an output
    overflow kills the whole group."""

    def __init__(self, req, cwd):
        super().__init__(req)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self.pid = spawn(["/bin/bash", "--norc", "--noprofile", "-c", req["command"]], cwd, env_for(req.get("env")), out_w, err_w, {})
        finally:
            os.close(out_w)
            os.close(err_w)
        self.out = Stream(out_r, self, 1)
        self.err = Stream(err_r, self, 2)
        children[self.pid] = self

    def stop(self):
        if self.killed_at is None:
            self.killed_at = time.monotonic()
            signal_group(self.pid, signal.SIGKILL)

    def expire(self):
        self.timed_out = True
        self.stop()

    def escalate(self):
        signal_group(self.pid, signal.SIGKILL)

    def on_exit(self, status):
        # Background children may keep the pipes open: take what is there now, discard the rest.
        self.out.drain()
        self.err.drain()
        self.out.owner = self.err.owner = None
        runs.pop(self.id, None)
        send(
            {
                "ev": "exit",
                "id": self.id,
                "exit_status": status,
                "timed_out": self.timed_out,
                "truncated": self.truncated,
                "elapsed_ms": self.elapsed_ms(),
            }
        )


def spawn(argv, cwd, env, out_w, err_w, extra_fds):
    """fork+exec with stdin=/dev/null, the given stdout/stderr, extra fds moved to fixed numbers."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            signal.set_wakeup_fd(-1)
            for s in (signal.SIGCHLD, signal.SIGINT, signal.SIGPIPE, signal.SIGTERM):
                signal.signal(s, signal.SIG_DFL)
            null = os.open("/dev/null", os.O_RDONLY)
            moves = [(null, 0), (out_w, 1), (err_w, 2)] + [(src, dst) for dst, src in extra_fds.items()]
            temp = [(os.dup(src), dst) for src, dst in moves]
            for src, dst in temp:
                os.dup2(src, dst, inheritable=True)
            keep = max([2] + list(extra_fds.keys()))
            os.closerange(keep + 1, 65536)
            try:
                os.chdir(cwd)
            except OSError:
                os.chdir(HOME)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid


def signal_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except OSError:
        pass


def python_kernel(ctl_fd, out_w, err_w, cwd, env):
    """Body of a python kernel process (forked from the supervisor: no interpreter start-up)."""
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
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
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
    sys.path[:] = [p for p in sys.path if p.startswith("/usr/")]
    sys.path.insert(0, "")
    ctl = socket.socket(fileno=3)
    reader = ctl.makefile("rb")
    user_globals = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
    kernel_pid = os.getpid()
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
        saved_env = None
        if req.get("env"):
            saved_env = dict(os.environ)
            os.environ.update(req["env"])
        error = None
        t0 = time.monotonic()
        try:
            try:
                exec(compile(req["code"], "<cell>", "exec"), user_globals)
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
        if saved_env is not None:
            os.environ.clear()
            os.environ.update(saved_env)
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:  # noqa: BLE001 - a broken stream must not take the kernel down
                pass
        while True:
            try:
                ctl.sendall(json.dumps({"error": error, "exec_ms": exec_ms}).encode() + b"\n")
                break
            except KeyboardInterrupt:
                continue


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
    # Hide the kernel's own frame: the user sees only their cell.
    if tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    try:
        sys.stderr.write("".join(traceback.format_exception(type(e), e, tb)))
    except Exception:  # noqa: BLE001
        pass
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    name = type(e).__name__
    return "%s: %s" % (name, first) if first else name


# ---- files: done here so that every path resolves inside the sandbox's own view ----
#
# The supervisor runs inside the sandbox's mount namespace as the sandbox user, so `/etc/passwd`,
# `../../etc/shadow` or a symlink to `/etc` all land on the sandbox's own tiny /etc, never the
# host's. Two more rules protect the supervisor itself: only regular files are read or written
# (a FIFO or device could block it or, through /proc/self/fd, reach its link to the service), and
# nothing under /proc is touched (there /proc/self is the supervisor).

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class FileOpError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def resolve(path):
    if not path.startswith("/"):
        path = os.path.join(HOME, path)
    path = os.path.normpath(path)
    # POSIX keeps a leading "//"; the kernel does not care, users would.
    return "/" + path.lstrip("/")


def guard(path):
    if "\0" in path:
        raise FileOpError("invalid", "path contains a NUL byte")
    real = os.path.realpath(path)
    if real == "/proc" or real.startswith("/proc/"):
        raise FileOpError("invalid", "files under /proc cannot be used through the file API")


def open_regular(path, flags):
    """Opens `path` and returns the fd only if it is a regular file (checked on the open fd)."""
    fd = os.open(path, flags, 0o644)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise FileOpError("invalid", "%s is not a regular file" % path)
        os.set_blocking(fd, True)
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def iso(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + ".%03dZ" % int((ts % 1) * 1000)


def file_read(path, req):
    limit = int(req.get("limit", 100 << 20))
    fd, st = open_regular(path, READ_FLAGS)
    try:
        if st.st_size > limit:
            return {"status": "too_large", "path": path, "size": st.st_size}, b""
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        return {"status": "too_large", "path": path, "size": size}, b""
    return {"status": "ok", "path": path, "size": size}, b"".join(chunks)


def file_write(path, req, body):
    # Upload: a target that is an existing directory receives the file under its own name.
    name = req.get("default_name")
    if name and os.path.isdir(path):
        path = os.path.join(path, name)
        guard(path)
    parent = os.path.dirname(path) or "/"
    try:
        os.makedirs(parent, exist_ok=True)
    except FileExistsError:
        raise FileOpError("invalid", "%s is not a directory" % parent)
    fd, _ = open_regular(path, WRITE_FLAGS)
    try:
        view = memoryview(body)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)
    return {"status": "ok", "path": path, "size": len(body)}, b""


def file_list(path, req):
    limit = int(req.get("limit", 10000))
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise FileOpError("invalid", "%s is not a directory" % path)
    names = sorted(os.listdir(path))
    entries = []
    for name in names[:limit]:
        full = os.path.join(path, name)
        try:
            st = os.lstat(full)
        except OSError:
            continue
        entries.append(
            {
                "name": name,
                "path": full,
                "size": st.st_size,
                "is_dir": stat.S_ISDIR(st.st_mode),
                "modified_at": iso(st.st_mtime),
                "mode": stat.filemode(st.st_mode),
            }
        )
    return {"status": "ok", "path": path, "files": entries, "total": len(names)}, b""


def file_delete(path):
    if path in ("/", HOME, "/tmp"):
        raise FileOpError("invalid", "%s cannot be deleted" % path)
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)
    return {"status": "ok", "path": path}, b""


def file_mkdir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise FileOpError("invalid", "%s exists and is not a directory" % path)
    return {"status": "ok", "path": path}, b""


def file_stat(path):
    try:
        st = os.stat(path)
    except OSError:
        return {"status": "ok", "path": path, "exists": False, "is_dir": False}, b""
    return {"status": "ok", "path": path, "exists": True, "is_dir": stat.S_ISDIR(st.st_mode), "size": st.st_size}, b""


def file_op(req, body):
    op = req.get("action")
    raw = req.get("path")
    if not isinstance(raw, str) or raw == "":
        return {"status": "invalid", "message": "path is required"}, b""
    path = resolve(raw)
    try:
        guard(path)
        if op == "read":
            return file_read(path, req)
        if op == "write":
            return file_write(path, req, body)
        if op == "list":
            return file_list(path, req)
        if op == "delete":
            return file_delete(path)
        if op == "mkdir":
            return file_mkdir(path)
        if op == "stat":
            return file_stat(path)
        return {"status": "invalid", "message": "unknown file action"}, b""
    except FileOpError as e:
        return {"status": e.status, "path": path, "message": e.message}, b""
    except (FileNotFoundError, NotADirectoryError):
        # A missing file, or a path through something that is not a directory.
        return {"status": "not_found", "path": path}, b""
    except IsADirectoryError:
        return {"status": "is_dir", "path": path}, b""
    except PermissionError:
        return {"status": "invalid", "path": path, "message": "permission denied: %s" % path}, b""
    except ValueError as e:
        return {"status": "invalid", "path": path, "message": str(e)}, b""
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return {"status": "no_space", "path": path}, b""
        if e.errno == errno.ENXIO:
            return {"status": "invalid", "path": path, "message": "%s is not a regular file" % path}, b""
        return {"status": "invalid", "path": path, "message": "%s: %s" % (os.strerror(e.errno or 0), path)}, b""


# ---- stats ----
#
# Network: the sandbox's own network namespace (loopback only), from /proc/net/dev.
# Disk: the workspace is a tmpfs, so there is no block device to count. Instead: bytes that the
# sandbox's processes passed through read()/write() (rchar/wchar of /proc/<pid>/io). A process's
# counters include those of the children it reaped, and the supervisor (a child subreaper) reaps
# every process of the sandbox in the end. So: the sum over every live process, plus the
# supervisor's own counters minus the bytes it moved itself (its link to the service, the output
# pipes, the /proc files read here), which leaves what exited processes did and what the file API
# read and wrote. Approximate by what the supervisor's Python does on its own (a few KB).

own_io = [0, 0]  # bytes the supervisor itself read/wrote that are not the sandbox's I/O
io_base = [0, 0]  # the supervisor's counters when it started


self_io_fd = [-1]  # /proc/self/io, opened while still dumpable (afterwards opening it is refused)


def parse_io(data):
    own_io[0] += len(data)
    r = w = 0
    for line in data.split(b"\n"):
        if line.startswith(b"rchar:"):
            r = int(line[6:])
        elif line.startswith(b"wchar:"):
            w = int(line[6:])
    return r, w


def proc_io(pid):
    try:
        fd = os.open("/proc/%d/io" % pid, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return parse_io(os.read(fd, 4096))
    except OSError:
        return None
    finally:
        os.close(fd)


def self_io():
    try:
        return parse_io(os.pread(self_io_fd[0], 4096, 0))
    except OSError:
        return None


def start_io_accounting():
    """Called before the supervisor makes itself non-dumpable: the only moment it may open its own /proc/self/io."""
    try:
        self_io_fd[0] = os.open("/proc/self/io", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    base = self_io() or (0, 0)
    io_base[0], io_base[1] = base


def stats():
    rx = tx = 0
    try:
        with open("/proc/net/dev", "rb") as f:
            data = f.read()
        own_io[0] += len(data)
        for line in data.decode().splitlines()[2:]:
            name, rest = line.split(":", 1)
            cols = rest.split()
            rx += int(cols[0])
            tx += int(cols[8])
    except OSError:
        pass
    me = os.getpid()
    own = self_io() or (io_base[0] + own_io[0], io_base[1] + own_io[1])
    rd = max(0, own[0] - io_base[0] - own_io[0])
    wr = max(0, own[1] - io_base[1] - own_io[1])
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        io = proc_io(int(name))
        if io is not None:
            rd += io[0]
            wr += io[1]
    return {"network_rx": rx, "network_tx": tx, "disk_read": rd, "disk_write": wr}


# ---- the process cap ----
#
# A fork bomb, or children left sleeping in the background, can hold every process slot of the
# sandbox's cgroup after its run has returned; then nothing can start, not even a kernel. Every
# second the supervisor counts the sandbox's tasks. Near the cap (within PIDS_SLACK: a bomb's
# processes come and go, and the launcher outside this pid namespace counts too) twice in a row,
# held by the same process groups both times, it kills the processes of every process group that
# holds a quarter of the cap or more (of all groups if none does), except pid 1, itself and the
# kernels. Still near the cap just after: the kernels whose own group is such a hog (a python
# kernel's unreaped children, a thread bomb), but never one that is running code (its run's
# timeout deals with it). The next run's stderr says so.

PIDS_MAX = int(os.environ.get("AGENTBOX_PIDS_MAX") or 0)
PIDS_CHECK_S = 1.0
PIDS_SLACK = 5
pids_check = {"next": 0.0, "strikes": 0, "hogs": set(), "notice": None}


def sandbox_tasks():
    """{pid: (process group, tasks)} for every process of the sandbox, zombies included."""
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                procs[int(name)] = (int(fields[2]), max(1, int(fields[17])))
            except (OSError, IndexError, ValueError):
                pass
    return procs


def hog_groups(procs):
    groups = {}
    for pgid, tasks in procs.values():
        groups[pgid] = groups.get(pgid, 0) + tasks
    return {g for g, n in groups.items() if n >= max(1, PIDS_MAX // 4)}


def in_own_pid_namespace():
    # kill(-1) must never run outside the sandbox: there it would reach every process of this uid.
    try:
        with open("/proc/1/cmdline", "rb") as f:
            return os.getuid() != 0 and f.read().startswith(b"/usr/bin/bwrap\0")
    except OSError:
        return False


def check_pids():
    now = time.monotonic()
    if not PIDS_MAX or now < pids_check["next"]:
        return
    pids_check["next"] = now + PIDS_CHECK_S
    procs = sandbox_tasks()
    if sum(t for _, t in procs.values()) < PIDS_MAX - PIDS_SLACK:
        pids_check["strikes"] = 0
        return
    hogs = hog_groups(procs)
    if pids_check["strikes"] and hogs and pids_check["hogs"] and not hogs & pids_check["hogs"]:
        pids_check["strikes"] = 0  # another culprit than last time: a new episode
    pids_check["strikes"] += 1
    pids_check["hogs"] = hogs
    if pids_check["strikes"] == 2:
        reclaim_pids(procs)
        pids_check["next"] = now + PIDS_CHECK_S / 2  # soon: was that enough?
    elif pids_check["strikes"] > 2:
        lost = [k for k in kernels.values() if k.run is None and k.pid in hogs]
        for kernel in lost:
            kernel.kill()
        if lost:
            pids_check["notice"] = "[sandbox] The sandbox was at its limit of %d processes and threads: the %s kernel holding them was restarted (its state was lost).\n" % (
                PIDS_MAX,
                ", ".join(sorted(k.key for k in lost)),
            )
        pids_check["strikes"] = 0


def reclaim_pids(procs):
    if not in_own_pid_namespace():
        return
    hogs = hog_groups(procs)
    keep = {1, os.getpid()} | {k.pid for k in kernels.values()}
    killed = set()
    try:
        os.kill(-1, signal.SIGSTOP)  # nothing forks while the list is taken
    except OSError:
        pass
    for _ in range(50):
        victims = [p for p, (g, _) in sandbox_tasks().items() if p not in keep and p not in killed and (not hogs or g in hogs)]
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            killed.add(pid)
    try:
        os.kill(-1, signal.SIGCONT)
    except OSError:
        pass
    for kernel in kernels.values():
        kernel.collect()  # what was killed may be a python kernel's children: zombies until reaped
    if killed:
        pids_check["notice"] = "[sandbox] The sandbox was at its limit of %d processes and threads: %d processes were killed.\n" % (
            PIDS_MAX,
            len(killed),
        )


def start_kernel(key, header):
    try:
        return Kernel(key, header["lang"], resolve(header.get("cwd") or HOME), None)
    except BlockingIOError:  # EAGAIN: no process slot left
        if not PIDS_MAX:
            raise
        reclaim_pids(sandbox_tasks())
        return Kernel(key, header["lang"], resolve(header.get("cwd") or HOME), None)


# ---- the main loop ----


def handle(header, body):
    op = header.get("op")
    rid = header.get("id")
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
            kernels[key] = Kernel(key, header["lang"], resolve(header.get("cwd") or HOME), None)
        send({"ev": "ok", "id": rid})
    elif op == "kill_kernel":
        kernel = kernels.pop(header["kernel"], None)
        if kernel is not None:
            kernel.kill()
        send({"ev": "ok", "id": rid})
    elif op == "exec":
        cwd = resolve(header.get("cwd") or HOME)
        if not os.path.isdir(cwd):
            send({"ev": "exit", "id": rid, "bad_cwd": cwd})
            return
        try:
            runs[rid] = Command(header, cwd)
        except OSError as e:
            send({"ev": "exit", "id": rid, "exit_status": 127, "spawn_error": "could not start the command: %s" % e})
    elif op == "file":
        reply, data = file_op(header, body)
        reply.update({"ev": "file", "id": rid})
        send(reply, data)
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


class LinkReader:
    def __init__(self):
        self.buf = bytearray()

    def on_ready(self):
        data = os.read(0, 1 << 20)
        own_io[0] += len(data)
        if not data:
            for child in list(children.values()):
                signal_group(child.pid, signal.SIGKILL)
            os._exit(0)
        self.buf += data
        while len(self.buf) >= 8:
            total, hlen = struct.unpack_from(">II", self.buf, 0)
            if len(self.buf) < 4 + total:
                break
            header = json.loads(bytes(self.buf[8 : 8 + hlen]))
            body = bytes(self.buf[8 + hlen : 4 + total])
            del self.buf[: 4 + total]
            handle(header, body)


def main():
    start_io_accounting()
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
    sel.register(0, selectors.EVENT_READ, LinkReader())
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


if __name__ == "__main__":
    main()
