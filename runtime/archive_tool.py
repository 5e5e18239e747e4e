# Snapshot archives of /home/user, made and unpacked INSIDE the sandbox as the sandbox user, so no
# path of the untrusted workspace is ever resolved on the host. Started by the supervisor
# (runtime/agentbox_rt/archive.py) as `python3 -I /opt/agentbox/archive_tool.py create|extract LIMIT`.
#
# create: writes a PAX tar of /home/user to stdout. Regular files, directories, symlinks (stored as
#   links, never followed) and hard links; FIFOs, sockets and devices are left out. The apparent
#   size of every regular file is summed first, so a huge sparse file is refused before a byte is
#   sent. A file that vanishes or changes size while it is copied fails the whole archive.
# extract: reads a tar from stdin into /home/user. Every member is checked before it is written:
#   a relative name without `..`, no member below a symlink of the archive, only the four kinds
#   above, hard links only to a file already extracted from the archive, no setuid/setgid bits.
#   Symlink targets are kept as they are (they resolve in the sandbox's own view).
# The last line on stderr is a JSON summary: {"files": N} or {"error": "...", "kind": "..."}.
import json
import os
import stat
import sys
import tarfile

HOME = "/home/user"
KINDS = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE)


class Refused(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def apparent_size(limit):
    total = 0
    for root, dirs, files in os.walk(HOME, followlinks=False):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
        if total > limit:
            raise Refused("too_large", "the workspace holds more than %d bytes of files, the snapshot limit" % limit)


def create(limit):
    apparent_size(limit)
    count = [0]

    def keep(info):
        if info.type not in KINDS:
            return None
        count[0] += 1
        return info

    out = os.fdopen(1, "wb", buffering=0)
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT, bufsize=1 << 20) as tar:
        for name in sorted(os.listdir(HOME)):
            tar.add(os.path.join(HOME, name), arcname=name, recursive=True, filter=keep)
    return count[0]


def check(member, links):
    name = member.name
    parts = name.split("/")
    if name.startswith("/") or ".." in parts or "\0" in name or not name.strip("/."):
        raise Refused("invalid", "archive member %r has an unsafe name" % name)
    if member.type not in KINDS:
        raise Refused("invalid", "archive member %r is not a file, directory or link" % name)
    for i in range(1, len(parts)):
        if "/".join(parts[:i]) in links:
            raise Refused("invalid", "archive member %r lies below a symlink" % name)
    if member.islnk():
        target = member.linkname
        tparts = target.split("/")
        below = any("/".join(tparts[:i]) in links for i in range(1, len(tparts)))
        if target.startswith("/") or ".." in tparts or below:
            raise Refused("invalid", "hard link %r points outside the archive" % name)
    member.mode &= 0o777 | stat.S_ISVTX
    member.uid = member.gid = 1000
    member.uname = member.gname = "user"


def extract():
    links = set()
    count = [0]

    def members(tar):
        for member in tar:
            check(member, links)
            if member.issym():
                links.add(member.name.rstrip("/"))
            count[0] += 1
            yield member

    inp = os.fdopen(0, "rb", buffering=0)
    with tarfile.open(fileobj=inp, mode="r|", bufsize=1 << 20) as tar:
        tar.extractall(HOME, members=members(tar))
    return count[0]


def main():
    mode, limit = sys.argv[1], int(sys.argv[2])
    try:
        files = create(limit) if mode == "create" else extract()
        summary = {"files": files}
        code = 0
    except Refused as e:
        summary, code = {"error": str(e), "kind": e.kind}, 1
    except FileNotFoundError as e:
        summary, code = {"error": "'%s' vanished while it was copied" % (e.filename or "a file"), "kind": "changed"}, 1
    except OSError as e:
        kind = "no_space" if e.errno == 28 else "changed" if "unexpected end of data" in str(e) else "error"
        summary, code = {"error": str(e), "kind": kind}, 1
    except (tarfile.TarError, ValueError) as e:
        summary, code = {"error": "the archive is damaged: %s" % e, "kind": "invalid"}, 1
    sys.stderr.write("\n" + json.dumps(summary) + "\n")
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
