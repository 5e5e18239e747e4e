# The data stack inside a sandbox: matplotlib's configuration (non-interactive backend, the font
# list built once at set-up) and the pre-imported python kernel a fresh sandbox keeps while idle,
# so that its first `import numpy, pandas, matplotlib.pyplot` costs nothing.
import os
import re
import sys
import time

from .programs import system_path
from .state import base_env
from .stats import own_io, proc_io

# Built by scripts/setup.sh, read-only (/usr is bound read-only into every sandbox): matplotlib's
# font list and its matplotlibrc (Debian's matplotlib otherwise looks for /etc/matplotlibrc).
FONT_CACHE = "/usr/share/sandbox/matplotlib"
# matplotlib wants a writable config/cache directory (it warns and makes a temporary one on every
# import otherwise). The sandbox's private /tmp has one, whose font list is a link to the shared
# one; it is made when the python kernel first imports matplotlib, so a sandbox that never does
# has an empty /tmp. (A script started as a command builds its own list there once, ~0.3 s.)
MPL_DIR = "/tmp/matplotlib"

# What the pre-imported kernel imports, and how a first cell is recognised as wanting it.
PREWARM_MODULES = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot")
WANTS_DATA = re.compile(r"(?m)^[ \t]*(?:import|from)[ \t][^\n#]*\b(?:numpy|pandas|matplotlib|seaborn|scipy|sklearn|statsmodels)\b")
# The pre-import starts only once the sandbox has existed this long (a sandbox used at once never
# pays for it).
PREWARM_DELAY_S = 1.0
# An assigned sandbox that has not run python this long after its first request gives the memory back.
RELEASE_AFTER_S = 30.0


def prepare():
    """Once per sandbox, at supervisor start: the environment every process gets for matplotlib."""
    base_env["MPLBACKEND"] = "Agg"
    base_env["MPLCONFIGDIR"] = MPL_DIR
    base_env["MATPLOTLIBRC"] = FONT_CACHE


def link_font_cache():
    """Before matplotlib's first import in a kernel: its config dir, with the shared font list."""
    try:
        os.makedirs(MPL_DIR, exist_ok=True)
        for name in os.listdir(FONT_CACHE):
            if not name.startswith(".") and not os.path.lexists(os.path.join(MPL_DIR, name)):
                os.symlink(os.path.join(FONT_CACHE, name), os.path.join(MPL_DIR, name))
    except OSError:
        pass  # no cache built: matplotlib builds its own on first use (slow, but works)


def unlink_font_cache():
    """Undoes link_font_cache (a sandbox's /tmp starts empty): what matplotlib needed from the
    directory at import time, it has read."""
    try:
        for name in os.listdir(MPL_DIR):
            path = os.path.join(MPL_DIR, name)
            if os.path.islink(path) and os.readlink(path).startswith(FONT_CACHE + "/"):
                os.unlink(path)
        os.rmdir(MPL_DIR)
    except OSError:
        pass


def not_sandbox_io(pid):
    """The pre-import's file reads are the platform's doing, not the sandbox's: its disk metrics
    (stats.py) leave them out, as they leave out the supervisor's own I/O."""
    io = proc_io(pid)
    if io is not None:
        own_io[0] += io[0]
        own_io[1] += io[1]


def wants_data(code):
    return WANTS_DATA.search(code) is not None


def prewarm_imports():
    """In the pre-import kernel (a forked child): wait, then import the stack at idle priority."""
    time.sleep(PREWARM_DELAY_S)
    # The work runs in a thread of its own at SCHED_IDLE: it only uses CPU nothing else wants.
    # Not the kernel's main thread: an unprivileged thread cannot leave SCHED_IDLE again, and the
    # main thread runs the user's code once the kernel is claimed. Threads made during the import
    # would inherit SCHED_IDLE, so the BLAS library is loaded single-threaded (a sandbox has one
    # CPU by default, where more BLAS threads buy nothing).
    import threading

    blas_env = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    saved_env = {k: os.environ.get(k) for k in blas_env}
    for k in blas_env:
        os.environ[k] = "1"
    worker = threading.Thread(target=_import_stack, name="prewarm")
    worker.start()
    worker.join()
    for k, v in saved_env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    import gc

    gc.collect()


def _import_stack():
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # this thread only
    except (OSError, AttributeError):
        pass
    # Only from the system's packages: never a same-named file in the workspace (a restarted
    # sandbox keeps its files), which would be user code nobody ran.
    saved_path = sys.path[:]
    sys.path[:] = system_path(sys.path)
    try:
        for name in PREWARM_MODULES:
            __import__(name)
    except Exception:  # noqa: BLE001 - a missing package only means no head start
        return
    finally:
        sys.path[:] = saved_path
    # Drawing once loads the font and the PNG writer, which the first plot would otherwise pay.
    try:
        import io

        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(1, 1))
        fig.savefig(io.BytesIO(), format="png")
        plt.close(fig)
    except Exception:  # noqa: BLE001
        pass
    # The sandbox may never use this kernel: its /tmp stays as it was. Linked again when claimed.
    unlink_font_cache()


class Prewarm:
    """The supervisor's side: at most one pre-import kernel, claimed by the first python run that
    imports the stack, killed by any other first python run or after RELEASE_AFTER_S of use."""

    def __init__(self):
        self.kernel = None
        self.decided = False
        self.first_request_at = None

    def start(self, make_kernel):
        if self.kernel is None and not self.decided and os.path.isdir(FONT_CACHE):
            self.kernel = make_kernel()

    def claim(self, code):
        """The first run of the default python kernel: the pre-imported kernel if the code wants
        it and it is ready, else None (and the pre-imported kernel is released)."""
        if self.decided:
            return None
        self.decided = True
        kernel, self.kernel = self.kernel, None
        if kernel is None:
            return None
        if kernel.warm_ready and wants_data(code):
            return kernel
        self.release(kernel)
        return None

    def release(self, kernel):
        if not kernel.warm_ready:
            not_sandbox_io(kernel.pid)
        kernel.discard()
        if not kernel.warm_ready:
            unlink_font_cache()  # killed in the middle of its imports

    def on_request(self, op):
        """Any request but a probe marks the sandbox as in use: the release clock starts."""
        if self.first_request_at is None and op not in ("ping", "stats", "prewarm"):
            self.first_request_at = time.monotonic()

    def tick(self):
        if self.kernel is not None and self.first_request_at is not None:
            if time.monotonic() - self.first_request_at > RELEASE_AFTER_S:
                self.decided = True
                kernel, self.kernel = self.kernel, None
                self.release(kernel)


prewarm = Prewarm()
