# Output pipes of children (Stream) and what runs and commands have in common (Job).
import os
import selectors
import time

from .protocol import send
from .state import sel
from .stats import own_io


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
