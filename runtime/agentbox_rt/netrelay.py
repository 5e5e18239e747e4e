# The sandbox's network relay (a process of its own, started by the supervisor on op "net"): the
# sandbox's only ways to and from the outside, both through unix sockets the service listens on in
# /run/agentbox (read-only here, so code in the sandbox can neither replace nor add a socket):
#   egress  127.0.0.1:EGRESS_PORT in the sandbox's own network namespace -> egress.sock, byte for
#           byte. The service's proxy there decides what each connection may reach.
#   ports   a control connection to ports.sock; the service writes "OPEN <id> <port>\n", the relay
#           connects to 127.0.0.1:<port> here and opens a new connection to ports.sock that starts
#           with "DATA <id>\n" (or answers "FAIL <id> <reason>\n" on the control connection).
# The relay only ever connects out to the service; it holds nothing the sandbox's own code could
# not do itself. It exits when the control connection ends (the service is gone).
import errno
import os
import selectors
import socket
import sys

NET_DIR = "/run/agentbox"
EGRESS_SOCK = NET_DIR + "/egress.sock"
PORTS_SOCK = NET_DIR + "/ports.sock"
CHUNK = 256 * 1024

sel = selectors.DefaultSelector()


class Pipe:
    """Both directions between two sockets; a side is read only while the other has nothing pending."""

    def __init__(self, a, b, first=b""):
        self.socks = (a, b)
        self.pending = {a: b"", b: first}  # bytes waiting to be written to that socket
        self.eof = {a: False, b: False}  # that socket's peer sent EOF (read returned nothing)
        self.closed = False
        self.registered = set()
        for s in self.socks:
            s.setblocking(False)
        self.update()

    def other(self, s):
        return self.socks[1] if s is self.socks[0] else self.socks[0]

    def want(self, s):
        ev = 0
        if not self.eof[s] and not self.pending[self.other(s)]:
            ev |= selectors.EVENT_READ
        if self.pending[s]:
            ev |= selectors.EVENT_WRITE
        return ev

    def update(self):
        if self.closed:
            return
        done = all(self.eof.values()) and not any(self.pending.values())
        if done:
            return self.close()
        for s in self.socks:
            ev = self.want(s)
            if ev and s in self.registered:
                sel.modify(s, ev, self)
            elif ev:
                sel.register(s, ev, self)
                self.registered.add(s)
            elif s in self.registered:
                sel.unregister(s)
                self.registered.discard(s)

    def on_event(self, s, mask):
        o = self.other(s)
        try:
            if mask & selectors.EVENT_WRITE and self.pending[s]:
                n = s.send(self.pending[s])
                self.pending[s] = self.pending[s][n:]
                if not self.pending[s] and self.eof[o]:
                    s.shutdown(socket.SHUT_WR)
            if mask & selectors.EVENT_READ:
                data = s.recv(CHUNK)
                if data:
                    self.pending[o] += data
                else:
                    self.eof[s] = True
                    if not self.pending[o]:
                        o.shutdown(socket.SHUT_WR)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return self.close()
        self.update()

    def close(self):
        self.closed = True
        for s in self.socks:
            if s in self.registered:
                sel.unregister(s)
            s.close()
        self.registered.clear()


class Listener:
    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(128)
        self.sock.setblocking(False)
        sel.register(self.sock, selectors.EVENT_READ, self)

    def on_event(self, _s, _mask):
        try:
            client, _ = self.sock.accept()
        except OSError:
            return
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            up.connect(EGRESS_SOCK)
        except OSError:
            # No proxy for this sandbox now (egress is off): the client sees the connection closed.
            up.close()
            client.close()
            return
        Pipe(client, up)


class Control:
    def __init__(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(PORTS_SOCK)
        self.sock.sendall(b"CTRL\n")
        self.buf = b""
        sel.register(self.sock, selectors.EVENT_READ, self)

    def on_event(self, _s, _mask):
        try:
            data = self.sock.recv(4096)
        except OSError:
            data = b""
        if not data:
            sys.exit(0)
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            parts = line.decode("ascii", "replace").split()
            if len(parts) == 3 and parts[0] == "OPEN" and parts[2].isdigit():
                self.open(parts[1], int(parts[2]))
        if len(self.buf) > 4096:
            sys.exit(0)

    def open(self, conn_id, port):
        target = None
        reason = "nothing is listening on port %d in the sandbox" % port
        for family, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            s = socket.socket(family, socket.SOCK_STREAM)
            s.settimeout(2)
            try:
                s.connect((addr, port))
                target = s
                break
            except OSError as e:
                s.close()
                if e.errno not in (errno.ECONNREFUSED, errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                    reason = "could not connect to port %d in the sandbox: %s" % (port, os.strerror(e.errno or 0))
        if target is None:
            self.sock.sendall(("FAIL %s %s\n" % (conn_id, reason)).encode())
            return
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            up.connect(PORTS_SOCK)
            up.sendall(("DATA %s\n" % conn_id).encode())
        except OSError:
            up.close()
            target.close()
            return
        Pipe(target, up)


def main():
    egress_port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    if egress_port:
        try:
            Listener(egress_port)
        except OSError:
            pass  # the sandbox's own code holds the port: no egress, ports still work
    Control()
    while True:
        for key, mask in sel.select():
            if not getattr(key.data, "closed", False):
                key.data.on_event(key.fileobj, mask)


if __name__ == "__main__":
    main()
