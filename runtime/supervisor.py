# The in-sandbox supervisor: runs inside a sandbox's namespaces as the sandbox user, owns every
# kernel and command process there, and talks to the service over its stdin/stdout (never shared
# with user code). Frames both ways: u32 total length, u32 header length, JSON header, raw body.
#
# Requests (header.op): run, exec, kill_kernel, file, stats, setenv. Every request carries an `id`;
# every answer carries the same `id`. Output of runs and commands streams back as `out` frames.
#
# This file is only the entry point; the code is the package agentbox_rt next to it. It is started
# as `python3 -I /opt/agentbox/supervisor.py`: -I leaves the script's own directory off sys.path,
# hence the explicit insert. The files are read-only in the sandbox, so no bytecode is written.
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, "/opt/agentbox")

from agentbox_rt.main import main  # noqa: E402 - needs the sys.path entry above

if __name__ == "__main__":
    main()
