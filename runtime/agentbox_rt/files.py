# File operations: op "file" (list, delete, mkdir, stat) and the chunked transfers (open_read,
# read_chunk, open_write, write_chunk, commit, close).
import ctypes
import errno
import os
import secrets
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
# nothing on /proc is touched (there /proc/self is the supervisor).
#
# Both are checked on what was opened, never on a path that is opened again later: a path is
# opened once with openat2(RESOLVE_NO_MAGICLINKS) (no /proc/<pid>/fd-style jumps; ordinary
# symlinks are followed, they stay in the sandbox's view), or where openat2 is missing one
# component at a time with O_NOFOLLOW, reading each symlink as text. Then fstatfs refuses procfs
# and fstat refuses what is not a regular file (or a directory, where one is wanted).

PROC_SUPER_MAGIC = 0x9FA0
SYS_OPENAT2 = 437  # the same number on every architecture (new syscalls share one table)
RESOLVE_NO_MAGICLINKS = 0x02
AT_FDCWD = -100
MAX_LINKS = 40
MAX_HANDLES = 64

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC

libc = ctypes.CDLL(None, use_errno=True)


class OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


have_openat2 = [True]


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


def raise_errno(path):
    e = ctypes.get_errno()
    raise OSError(e, os.strerror(e), path)


def openat2(dirfd, path, flags, mode=0):
    how = OpenHow(flags, mode, RESOLVE_NO_MAGICLINKS)
    fd = libc.syscall(ctypes.c_long(SYS_OPENAT2), ctypes.c_int(dirfd), os.fsencode(path), ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd < 0:
        raise_errno(path)
    return fd


def walk_open(dirfd, path, flags, mode=0):
    """openat2's job by hand: every component opened with O_NOFOLLOW, symlinks read as text and
    their targets walked the same way, so no link is ever followed by the kernel."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    stack = [os.open("/" if path.startswith("/") or dirfd == AT_FDCWD else ".", DIR_FLAGS, dir_fd=None if dirfd == AT_FDCWD else dirfd)]
    links = 0
    try:
        while parts:
            name = parts.pop(0)
            if name == "..":
                if len(stack) > 1:
                    os.close(stack.pop())
                continue
            last = not parts
            try:
                target = os.readlink(name, dir_fd=stack[-1])
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.ENOENT) or (e.errno == errno.ENOENT and not last):
                    raise
                target = None
            if target is not None and not (last and flags & os.O_NOFOLLOW):
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop())
                    os.close(stack.pop())
                    stack.append(os.open("/", DIR_FLAGS))
                parts[:0] = [p for p in target.split("/") if p not in ("", ".")]
                continue
            if last:
                return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=stack[-1])
            stack.append(os.open(name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=stack[-1]))
        return os.open(".", flags, mode, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def open_at(dirfd, path, flags, mode=0):
    """Opens `path` (relative to dirfd, or absolute) without magic links, and never on procfs."""
    # openat2 is strict: O_PATH takes no other flags than O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC.
    flags |= os.O_CLOEXEC if flags & os.O_PATH else os.O_CLOEXEC | os.O_NOCTTY
    fd = -1
    if have_openat2[0]:
        try:
            fd = openat2(dirfd, path, flags, mode)
        except OSError as e:
            if e.errno not in (errno.ENOSYS, errno.EPERM):
                raise
            have_openat2[0] = False
    if fd < 0:
        fd = walk_open(dirfd, path, flags, mode)
    try:
        refuse_procfs(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_procfs(fd):
    buf = ctypes.create_string_buffer(256)
    if libc.fstatfs(fd, buf) != 0:
        raise_errno("fstatfs")
    if int.from_bytes(buf.raw[: ctypes.sizeof(ctypes.c_long)], "little", signed=True) == PROC_SUPER_MAGIC:
        raise FileOpError("invalid", "files under /proc cannot be used through the file API")


def iso(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + ".%03dZ" % int((ts % 1) * 1000)


def split(path):
    parent, name = os.path.split(path)
    return parent or "/", name


def make_dirs(path):
    """An O_PATH fd of directory `path`, created with its parents as needed (each one opened safely)."""
    try:
        return open_at(AT_FDCWD, path, DIR_FLAGS)
    except FileNotFoundError:
        pass
    except NotADirectoryError:
        raise FileOpError("invalid", "%s is not a directory" % path)
    parent, name = split(path)
    if not name:
        raise FileOpError("invalid", "%s is not a directory" % path)
    pfd = make_dirs(parent)
    try:
        try:
            os.mkdir(name, 0o755, dir_fd=pfd)
        except FileExistsError:
            pass
        try:
            return open_at(pfd, name, DIR_FLAGS)
        except NotADirectoryError:
            raise FileOpError("invalid", "%s exists and is not a directory" % path)
    finally:
        os.close(pfd)


# ---- whole operations (op "file") ----


def file_list(path, req):
    limit = int(req.get("limit", 10000))
    pfd = open_at(AT_FDCWD, path, os.O_PATH)
    try:
        if not stat.S_ISDIR(os.fstat(pfd).st_mode):
            raise FileOpError("invalid", "%s is not a directory" % path)
        dfd = open_at(pfd, ".", os.O_RDONLY | os.O_DIRECTORY)
    finally:
        os.close(pfd)
    try:
        names = sorted(os.listdir(dfd))
        entries = []
        for name in names[:limit]:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            entries.append(
                {
                    "name": name,
                    "path": os.path.join(path, name),
                    "size": st.st_size,
                    "is_dir": stat.S_ISDIR(st.st_mode),
                    "modified_at": iso(st.st_mtime),
                    "mode": stat.filemode(st.st_mode),
                }
            )
    finally:
        os.close(dfd)
    return {"status": "ok", "path": path, "files": entries, "total": len(names)}


def file_delete(path):
    if path in ("/", HOME, "/tmp"):
        raise FileOpError("invalid", "%s cannot be deleted" % path)
    parent, name = split(path)
    pfd = open_at(AT_FDCWD, parent, DIR_FLAGS)
    try:
        st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=pfd)
        else:
            os.unlink(name, dir_fd=pfd)
    finally:
        os.close(pfd)
    return {"status": "ok", "path": path}


def file_mkdir(path):
    os.close(make_dirs(path))
    return {"status": "ok", "path": path}


def file_stat(path):
    try:
        fd = open_at(AT_FDCWD, path, os.O_PATH)
    except FileOpError:
        raise
    except OSError:
        return {"status": "ok", "path": path, "exists": False, "is_dir": False}
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return {"status": "ok", "path": path, "exists": True, "is_dir": stat.S_ISDIR(st.st_mode), "size": st.st_size}


# ---- transfers: a handle per open file, chunks in and out ----

handles = {}  # handle -> Transfer
next_handle = [1]


class Transfer:
    def __init__(self, fd, path, dirfd=-1, temp=None):
        self.fd = fd
        self.path = path
        self.dirfd = dirfd  # uploads: the directory of the temporary file
        self.temp = temp  # uploads: its name there
        self.size = 0

    def close(self):
        os.close(self.fd)
        if self.temp is not None:
            try:
                os.unlink(self.temp, dir_fd=self.dirfd)
            except OSError:
                pass
            self.temp = None
        if self.dirfd >= 0:
            os.close(self.dirfd)
            self.dirfd = -1


def add_handle(transfer):
    if len(handles) >= MAX_HANDLES:
        transfer.close()
        raise FileOpError("invalid", "too many file transfers open in this sandbox")
    h = next_handle[0]
    next_handle[0] += 1
    handles[h] = transfer
    return h


def get_handle(req):
    t = handles.get(req.get("handle"))
    if t is None:
        raise FileOpError("invalid", "no such transfer")
    return t


def open_read(path, req):
    limit = int(req.get("limit", 100 << 20))
    fd = open_at(AT_FDCWD, path, READ_FLAGS)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise FileOpError("invalid", "%s is not a regular file" % path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    if st.st_size > limit:
        os.close(fd)
        return {"status": "too_large", "path": path, "size": st.st_size}
    return {"status": "ok", "path": path, "size": st.st_size, "handle": add_handle(Transfer(fd, path))}


def read_chunk(req):
    t = get_handle(req)
    want = max(0, min(int(req.get("max", 1 << 20)), 8 << 20))
    parts = []
    got = 0
    while got < want:
        data = os.read(t.fd, want - got)
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def open_write(req):
    """A temporary file for an upload: next to its target when that directory exists and is
    writable (the commit is then a rename), else in /home/user, else /tmp."""
    hint = req.get("path")
    dirs = []
    if isinstance(hint, str) and hint:
        dirs.append(split(resolve(hint))[0])
    dirs += [HOME, "/tmp"]
    last = None
    for d in dirs:
        try:
            dfd = open_at(AT_FDCWD, d, DIR_FLAGS)
        except (OSError, FileOpError) as e:
            last = e
            continue
        temp = ".upload-%s.part" % secrets.token_hex(8)
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dfd)
        except OSError as e:
            os.close(dfd)
            last = e
            continue
        return {"status": "ok", "handle": add_handle(Transfer(fd, d, dfd, temp))}
    raise last


def write_chunk(req, body):
    t = get_handle(req)
    view = memoryview(body)
    while view:
        n = os.write(t.fd, view)
        view = view[n:]
    t.size += len(body)


def commit(req):
    """Moves a finished upload to its target: into it under `default_name` when the target is a
    directory; through symlinks that stay in the sandbox (each hop opened like any path); never
    over something that is not a regular file. A target on another filesystem gets a copy."""
    t = get_handle(req)
    raw = req.get("path")
    if not isinstance(raw, str) or raw == "":
        raise FileOpError("invalid", "path is required")
    target = resolve(raw)
    name = req.get("default_name")
    if name:
        try:
            fd = open_at(AT_FDCWD, target, DIR_FLAGS)
            os.close(fd)
            target = os.path.join(target, name)
        except (OSError, FileOpError):
            pass
    path = target
    for _ in range(MAX_LINKS):
        parent, base = split(path)
        if not base:
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        pfd = make_dirs(parent)
        try:
            link = os.readlink(base, dir_fd=pfd)
        except OSError:
            link = None
        if link is not None:
            os.close(pfd)
            path = resolve(link if link.startswith("/") else os.path.join(parent, link))
            continue
        try:
            place(t, pfd, base, path)
        finally:
            os.close(pfd)
        handles.pop(req.get("handle"), None)
        t.close()
        return {"status": "ok", "path": target, "size": t.size}
    raise OSError(errno.ELOOP, "too many levels of symbolic links", target)


def place(t, pfd, base, path):
    try:
        st = os.stat(base, dir_fd=pfd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise FileOpError("invalid", "%s is not a regular file" % path)
        os.fchmod(t.fd, stat.S_IMODE(st.st_mode))
    try:
        os.rename(t.temp, base, src_dir_fd=t.dirfd, dst_dir_fd=pfd)
        t.temp = None
        return
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
    out = open_at(pfd, base, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(out).st_mode):
            raise FileOpError("invalid", "%s is not a regular file" % path)
        os.ftruncate(out, 0)
        offset = 0
        while offset < t.size:
            n = os.copy_file_range(t.fd, out, t.size - offset, offset, offset)
            if n == 0:
                break
            offset += n
    finally:
        os.close(out)


def close_handle(req):
    t = handles.pop(req.get("handle"), None)
    if t is not None:
        t.close()


# ---- dispatch ----


def file_op(op, req, body):
    """One file request: (reply header without ev/id, body). Refusals are replies, not exceptions."""
    path = None
    try:
        if op in ("file", "open_read"):
            raw = req.get("path")
            if not isinstance(raw, str) or raw == "":
                return {"status": "invalid", "message": "path is required"}, b""
            if "\0" in raw:
                return {"status": "invalid", "message": "path contains a NUL byte"}, b""
            path = resolve(raw)
        if op == "open_read":
            return open_read(path, req), b""
        if op == "read_chunk":
            return None, read_chunk(req)
        if op == "open_write":
            return open_write(req), b""
        if op == "write_chunk":
            write_chunk(req, body)
            return None, b""
        if op == "commit":
            return commit(req), b""
        if op == "close":
            close_handle(req)
            return None, b""
        action = req.get("action")
        if action == "list":
            return file_list(path, req), b""
        if action == "delete":
            return file_delete(path), b""
        if action == "mkdir":
            return file_mkdir(path), b""
        if action == "stat":
            return file_stat(path), b""
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
        if e.errno == errno.ELOOP:
            return {"status": "invalid", "path": path, "message": "%s: a link that cannot be followed here (e.g. into /proc)" % path}, b""
        return {"status": "invalid", "path": path, "message": "%s: %s" % (os.strerror(e.errno or 0), path)}, b""
