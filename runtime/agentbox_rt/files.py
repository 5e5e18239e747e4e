# File operations (op "file"): read, write, list, delete, mkdir, stat.
import errno
import os
import shutil  # noqa: F401 - preloaded for file deletes: lazily loading it later would show up as sandbox disk I/O
import stat
import time

from .state import HOME

# ---- files: done here so that every path resolves inside the sandbox's own view ----
#
# The supervisor runs inside the sandbox's mount namespace as the sandbox user, so `/etc/passwd`,
# `../../etc/shadow` or a symlink to `/etc` all land on the sandbox's own tiny /etc, never the
# host's. Two more rules protect the supervisor itself: only regular files are read or written
# (a FIFO or device could block it or, through /proc/self/fd, reach its link to the service), and
# nothing under /proc is touched (there /proc/self is the supervisor).

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class FileOpError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def resolve(path):
    if not path.startswith("/"):
        path = os.path.join(HOME, path)
    path = os.path.normpath(path)
    # POSIX keeps a leading "//"; the kernel does not care, users would.
    return "/" + path.lstrip("/")


def guard(path):
    if "\0" in path:
        raise FileOpError("invalid", "path contains a NUL byte")
    real = os.path.realpath(path)
    if real == "/proc" or real.startswith("/proc/"):
        raise FileOpError("invalid", "files under /proc cannot be used through the file API")


def open_regular(path, flags):
    """Opens `path` and returns the fd only if it is a regular file (checked on the open fd)."""
    fd = os.open(path, flags, 0o644)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise FileOpError("invalid", "%s is not a regular file" % path)
        os.set_blocking(fd, True)
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def iso(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + ".%03dZ" % int((ts % 1) * 1000)


def file_read(path, req):
    limit = int(req.get("limit", 100 << 20))
    fd, st = open_regular(path, READ_FLAGS)
    try:
        if st.st_size > limit:
            return {"status": "too_large", "path": path, "size": st.st_size}, b""
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        return {"status": "too_large", "path": path, "size": size}, b""
    return {"status": "ok", "path": path, "size": size}, b"".join(chunks)


def file_write(path, req, body):
    # Upload: a target that is an existing directory receives the file under its own name.
    name = req.get("default_name")
    if name and os.path.isdir(path):
        path = os.path.join(path, name)
        guard(path)
    parent = os.path.dirname(path) or "/"
    try:
        os.makedirs(parent, exist_ok=True)
    except FileExistsError:
        raise FileOpError("invalid", "%s is not a directory" % parent)
    fd, _ = open_regular(path, WRITE_FLAGS)
    try:
        view = memoryview(body)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)
    return {"status": "ok", "path": path, "size": len(body)}, b""


def file_list(path, req):
    limit = int(req.get("limit", 10000))
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise FileOpError("invalid", "%s is not a directory" % path)
    names = sorted(os.listdir(path))
    entries = []
    for name in names[:limit]:
        full = os.path.join(path, name)
        try:
            st = os.lstat(full)
        except OSError:
            continue
        entries.append(
            {
                "name": name,
                "path": full,
                "size": st.st_size,
                "is_dir": stat.S_ISDIR(st.st_mode),
                "modified_at": iso(st.st_mtime),
                "mode": stat.filemode(st.st_mode),
            }
        )
    return {"status": "ok", "path": path, "files": entries, "total": len(names)}, b""


def file_delete(path):
    if path in ("/", HOME, "/tmp"):
        raise FileOpError("invalid", "%s cannot be deleted" % path)
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        import shutil

        shutil.rmtree(path)
    else:
        os.unlink(path)
    return {"status": "ok", "path": path}, b""


def file_mkdir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise FileOpError("invalid", "%s exists and is not a directory" % path)
    return {"status": "ok", "path": path}, b""


def file_stat(path):
    try:
        st = os.stat(path)
    except OSError:
        return {"status": "ok", "path": path, "exists": False, "is_dir": False}, b""
    return {"status": "ok", "path": path, "exists": True, "is_dir": stat.S_ISDIR(st.st_mode), "size": st.st_size}, b""


def file_op(req, body):
    op = req.get("action")
    raw = req.get("path")
    if not isinstance(raw, str) or raw == "":
        return {"status": "invalid", "message": "path is required"}, b""
    path = resolve(raw)
    try:
        guard(path)
        if op == "read":
            return file_read(path, req)
        if op == "write":
            return file_write(path, req, body)
        if op == "list":
            return file_list(path, req)
        if op == "delete":
            return file_delete(path)
        if op == "mkdir":
            return file_mkdir(path)
        if op == "stat":
            return file_stat(path)
        return {"status": "invalid", "message": "unknown file action"}, b""
    except FileOpError as e:
        return {"status": e.status, "path": path, "message": e.message}, b""
    except (FileNotFoundError, NotADirectoryError):
        # A missing file, or a path through something that is not a directory.
        return {"status": "not_found", "path": path}, b""
    except IsADirectoryError:
        return {"status": "is_dir", "path": path}, b""
    except PermissionError:
        return {"status": "invalid", "path": path, "message": "permission denied: %s" % path}, b""
    except ValueError as e:
        return {"status": "invalid", "path": path, "message": str(e)}, b""
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return {"status": "no_space", "path": path}, b""
        if e.errno == errno.ENXIO:
            return {"status": "invalid", "path": path, "message": "%s is not a regular file" % path}, b""
        return {"status": "invalid", "path": path, "message": "%s: %s" % (os.strerror(e.errno or 0), path)}, b""
