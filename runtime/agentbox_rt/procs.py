# Starting and signalling the processes the supervisor owns (kernels, commands).
import os
import signal

from .state import HOME


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
