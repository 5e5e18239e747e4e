# Commands (op "exec"): one `bash -c` per request, its output streamed back like a run's.
import os
import signal
import time

from .procs import signal_group, spawn
from .programs import program
from .protocol import send
from .state import children, env_for, runs
from .streams import Job, Stream


class Command(Job):
    """One `commands/run`: a fresh `bash -c` in its own process group. What it starts in the
    background stays alive after it exits (its output is then discarded); a timeout or an output
    overflow kills the whole group."""

    def __init__(self, req, cwd):
        super().__init__(req)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self.pid = spawn([*program("/bin/bash"), "--norc", "--noprofile", "-c", req["command"]], cwd, env_for(req.get("env")), out_w, err_w, {})
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
