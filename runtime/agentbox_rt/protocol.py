# The link to the service: the supervisor's stdin/stdout (never shared with user code). Frames
# both ways: u32 total length, u32 header length, JSON header, raw body (src/sandbox/protocol.ts
# is the other side). Sizes are checked both ways: a frame over MAX_FRAME is never sent, and one
# announced from the service ends the supervisor (the link cannot be trusted to be in step after).
import fcntl
import json
import os
import select  # noqa: F401 - preloaded: lazily loading it later would show up as sandbox disk I/O
import signal
import struct

from .procs import signal_group
from .state import children
from .stats import own_io

MAX_FRAME = 16 << 20  # MAX_FRAME in src/sandbox/protocol.ts
F_SETPIPE_SZ = 1031
PIPE_SIZE = 1 << 20  # bulk transfers move 1 MiB chunks: fewer wake-ups with a pipe that holds one

link_in = os.fdopen(0, "rb", buffering=0)
link_out_fd = 1


def widen_pipes():
    for fd in (0, 1):
        try:
            fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:
            pass  # not a pipe, or over the system's pipe-max-size: the default works, slower


class FrameTooLarge(ValueError):
    pass


def frame(header, body=b""):
    h = json.dumps(header, separators=(",", ":")).encode()
    total = 4 + len(h) + len(body)
    if total > MAX_FRAME:
        raise FrameTooLarge("frame of %d bytes exceeds %d" % (total, MAX_FRAME))
    return struct.pack(">II", total, len(h)) + h, body


def send(header, body=b""):
    prefix, body = frame(header, body)
    write_all(prefix + body if len(body) < 65536 else prefix)
    if len(body) >= 65536:
        write_all(body)


def write_all(data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(link_out_fd, view)
            own_io[1] += n
            view = view[n:]
        except BlockingIOError:
            select_write(link_out_fd)


def send_result(run_id, obj):
    """Forwards one rich result of a run ({text?, html?, png?, ..., is_main_result?}). One too
    large for a frame is not sent: the service is told its size and counts the run as truncated.
    Returns whether the result was sent."""
    body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogateescape")
    try:
        send({"ev": "result", "id": run_id}, body)
        return True
    except FrameTooLarge:
        send({"ev": "result", "id": run_id, "too_large": len(body)})
        return False


def select_write(fd):
    import select

    select.select([], [fd], [])


def give_up():
    """The link is broken (closed, or out of step): end every child and the supervisor."""
    for child in list(children.values()):
        signal_group(child.pid, signal.SIGKILL)
    os._exit(0)


class LinkReader:
    def __init__(self, handle):
        self.buf = bytearray()
        self.handle = handle  # main.handle(header, body), for every complete frame

    def on_ready(self):
        data = os.read(0, 1 << 20)
        own_io[0] += len(data)
        if not data:
            give_up()
        self.buf += data
        while len(self.buf) >= 8:
            total, hlen = struct.unpack_from(">II", self.buf, 0)
            if total > MAX_FRAME or total < 4 or hlen > total - 4:
                give_up()
            if len(self.buf) < 4 + total:
                break
            header = json.loads(bytes(self.buf[8 : 8 + hlen]))
            body = bytes(self.buf[8 + hlen : 4 + total])
            del self.buf[: 4 + total]
            self.handle(header, body)
