# The sandbox's process cap: noticing the sandbox stuck at it, and getting the slots back.
import os
import signal
import time

from .files import resolve
from .kernels import Kernel
from .state import WORKDIR, kernels

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
        return Kernel(key, header["lang"], resolve(header.get("cwd") or WORKDIR), None)
    except BlockingIOError:  # EAGAIN: no process slot left
        if not PIDS_MAX:
            raise
        reclaim_pids(sandbox_tasks())
        return Kernel(key, header["lang"], resolve(header.get("cwd") or WORKDIR), None)
