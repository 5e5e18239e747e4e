"""AgentBox Python SDK (standard library only): `AgentBox(api_key=..., base_url=...)`."""

from .client import AgentBox
from .errors import AgentBoxError
from .sandbox import RunEvent, RunResult, Sandbox

__all__ = ["AgentBox", "AgentBoxError", "RunEvent", "RunResult", "Sandbox"]
__version__ = "0.1.0"
