# Where the programs the supervisor starts are. In a default sandbox they are the system's own
# (/bin/bash, /usr/bin/node, /usr/bin/python3). In a sandbox of a custom template the system is
# the template's image: its programs are used where it has them, and the host's (bound read-only
# at AGENTBOX_HOST_USR, started through the host's own dynamic loader so they never load the
# image's libraries) where it does not, so that any image runs bash, node and python code.
import os
import sys

HOST_USR = os.environ.get("AGENTBOX_HOST_USR")
LOADER = os.environ.get("AGENTBOX_HOST_LOADER")
LIBS = os.environ.get("AGENTBOX_HOST_LIBS")


def _host(path):
    """The host's copy of a program of /usr (or /bin, which is /usr/bin on the host), loader first."""
    rel = path[len("/usr"):] if path.startswith("/usr/") else path
    return [LOADER, "--library-path", LIBS, HOST_USR + rel]


def program(path):
    """argv prefix that runs `path` (an absolute path of a default sandbox) here."""
    if not HOST_USR or not LOADER or os.path.exists(path):
        return [path]
    return _host(path)


def own_python():
    """argv prefix of the interpreter the supervisor runs on (the runtime's own tools need it)."""
    if HOST_USR and LOADER and sys.executable.startswith(HOST_USR + "/"):
        return [LOADER, "--library-path", LIBS, sys.executable]
    return [sys.executable or "/usr/bin/python3"]


def system_path(paths):
    """The entries of sys.path that are the interpreter's own (never the workspace's)."""
    own = tuple(p + "/" for p in {"/usr", sys.base_prefix, sys.prefix} if p)
    return [p for p in paths if p.startswith(own)]
