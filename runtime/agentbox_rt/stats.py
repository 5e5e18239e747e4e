# Stats for op "stats": network rx/tx and disk read/write as seen from inside the sandbox.
import os

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
