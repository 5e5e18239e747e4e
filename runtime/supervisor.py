# The in-sandbox supervisor: runs inside a sandbox's namespaces as the sandbox user, owns every
# kernel and command process there, and talks to the service over its stdin/stdout (never shared
# with user code). Frames both ways: u32 total length, u32 header length, JSON header, raw body.
#
# Requests (header.op): run, exec, cancel (interrupt a run or command), start_kernel, kill_kernel,
# setenv, stats, ping, prewarm (start the data-stack pre-import kernel), file (list, delete, mkdir, stat), the chunked transfers open_read,
# read_chunk, open_write, write_chunk, commit, close, background processes bg_start, bg_list,
# bg_get, bg_watch, bg_unwatch, bg_stdin, bg_signal, and snapshot archives archive_create,
# archive_extract, archive_read, archive_write, archive_finish, archive_close. Every request
# carries an `id`; every answer carries the same `id`. Events: ready, out (output of runs, commands
# and watched background processes), result (a run's rich result), done (a run), exit (a command,
# or a watched background process), file, chunk, stats, bg (background process answers), archive
# (snapshot archives), ok, error. The service's side is
# src/sandbox/protocol.ts.
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
