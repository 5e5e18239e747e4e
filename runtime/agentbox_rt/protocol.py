# The link to the service: the supervisor's stdin/stdout (never shared with user code). Frames
# both ways: u32 total length, u32 header length, JSON header, raw body.
import json
import os
import select  # noqa: F401 - preloaded: lazily loading it later would show up as sandbox disk I/O
import signal
import struct

from .procs import signal_group
from .state import children
from .stats import own_io

link_in = os.fdopen(0, "rb", buffering=0)
link_out_fd = 1


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


class LinkReader:
    def __init__(self, handle):
        self.buf = bytearray()
        self.handle = handle  # main.handle(header, body), for every complete frame

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
            self.handle(header, body)
