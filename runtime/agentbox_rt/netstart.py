# Op "net": starts the sandbox's network relay (netrelay.py) unless it runs already. Asked by the
# service when a sandbox gets egress or its first port connection; a sandbox that uses neither never
# has a relay.
import os

from .procs import spawn
from .programs import own_python
from .state import HOME, base_env, children

RELAY = "/opt/agentbox/agentbox_rt/netrelay.py"
relay = {"pid": None}
proxy_keys = set()  # the variables of base_env that are the service's proxy settings


class RelayChild:
    def __init__(self, pid):
        self.pid = pid

    def on_exit(self, _code):
        if relay["pid"] == self.pid:
            relay["pid"] = None


def start_relay(header):
    """Returns True when a new relay was started, False when one is running already. A header `env`
    (not null) replaces the proxy settings every later kernel and command starts with."""
    env = header.get("env")
    if env is not None:
        for key in proxy_keys:
            base_env.pop(key, None)
        proxy_keys.clear()
        base_env.update(env)
        proxy_keys.update(env)
    if relay["pid"] is not None:
        return False
    port = int(header.get("egress_port") or 0)
    null = os.open("/dev/null", os.O_WRONLY)
    try:
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        pid = spawn([*own_python(), "-I", "-S", RELAY, str(port)], HOME, env, null, null, {})
    finally:
        os.close(null)
    relay["pid"] = pid
    children[pid] = RelayChild(pid)
    return True
