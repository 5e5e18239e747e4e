# State shared by the supervisor's modules: the one selector of the main loop, the environment
# every kernel and command starts from, and the tables of live children, kernels and jobs.
import os
import selectors

HOME = "/home/user"
# Where commands and kernels start by default: a template's WORKDIR (set by the service), else HOME.
WORKDIR = os.environ.get("AGENTBOX_WORKDIR") or HOME

sel = selectors.DefaultSelector()
base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "LANG": "C.UTF-8", "TMPDIR": "/tmp", "USER": "user"}
user_env = {}
children = {}  # pid -> Child
kernels = {}  # kernel key -> Kernel
runs = {}  # request id -> Run


def env_for(extra=None):
    env = dict(base_env)
    env.update(user_env)
    if extra:
        env.update(extra)
    return env
