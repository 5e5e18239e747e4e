"""One sandbox, as an object: run code (plain or streamed), commands, files, code contexts, metrics,
timeout and kill. Each method calls one route."""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Union

from ._http import HttpClient, multipart
from .errors import AgentBoxError


@dataclass
class RunResult:
    """The answer of a run: printed output, the error (None when the code succeeded), rich results."""
    stdout: str
    stderr: str
    error: Optional[str]
    execution_time_ms: int
    results: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> Optional[str]:
        """The text of the main result (the value of the last expression), if any."""
        main = [r for r in self.results if r.get("is_main_result")] or self.results
        return main[-1].get("text") if main else None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "RunResult":
        logs = d.get("logs") or {}
        return cls(logs.get("stdout", ""), logs.get("stderr", ""), d.get("error"), d.get("execution_time_ms", 0), d.get("results") or [])


@dataclass
class RunEvent:
    """What a streamed run yields: `stdout`/`stderr` (text), `result` (one rich result), `end` (the answer)."""
    type: str
    text: Optional[str] = None
    result: Any = None


def _path(sandbox_id: str, rest: str = "") -> str:
    return f"/v1/agents/sandboxes/{urllib.parse.quote(sandbox_id, safe='')}{rest}"


def _stream(http: HttpClient, path: str, body: Dict[str, Any], timeout: float, end_factory) -> Iterator[RunEvent]:
    for event, data in http.events("POST", path, json_body={**body, "stream": True}, timeout=timeout):
        payload = json.loads(data)
        if event in ("stdout", "stderr"):
            yield RunEvent(event, text=payload.get("text", ""))
        elif event == "result":
            yield RunEvent("result", result=payload)
        elif event == "end":
            err = payload.get("error")
            if isinstance(err, dict) and "code" in err:
                raise AgentBoxError(200, err["code"], err.get("message", err["code"]))
            yield RunEvent("end", result=end_factory(payload))
            return
    raise AgentBoxError(200, "connection_error", "The stream ended before the run did")


class Sandbox:
    def __init__(self, http: HttpClient, info: Dict[str, Any]) -> None:
        self._http = http
        self.info = info
        self.files = SandboxFiles(http, self.id)
        self.commands = SandboxCommands(http, self.id)
        self.contexts = SandboxContexts(http, self.id)
        self.network = SandboxNetwork(http, self.id)

    @property
    def id(self) -> str:
        return self.info["sandbox_id"]

    def run_code(self, code: str, language: str = "python", timeout: Optional[int] = None, stream: bool = False,
                 **extra: Any) -> Union[RunResult, Iterator[RunEvent]]:
        """Runs code in the sandbox's persistent kernel. With stream=True, a generator of RunEvents
        (leaving it early interrupts the run)."""
        body: Dict[str, Any] = {"code": code, "language": language, **extra}
        if timeout is not None:
            body["timeout"] = timeout
        wait = (timeout or 30) + 30
        if stream:
            return _stream(self._http, _path(self.id, "/code/run"), body, wait, RunResult.from_json)
        return RunResult.from_json(self._http.call("POST", _path(self.id, "/code/run"), json_body=body, timeout=wait))

    def refresh(self) -> Dict[str, Any]:
        self.info = self._http.call("GET", _path(self.id))
        return self.info

    def set_timeout(self, seconds: int) -> Dict[str, Any]:
        return self._http.call("POST", _path(self.id, "/timeout"), json_body={"timeout": seconds})

    def metrics(self) -> Dict[str, Any]:
        return self._http.call("GET", _path(self.id, "/metrics"))

    def pause(self) -> Dict[str, Any]:
        """Freezes every process (memory and kernel state kept, no CPU, the life clock stopped)."""
        return self._http.call("POST", _path(self.id, "/pause"))

    def resume(self) -> Dict[str, Any]:
        return self._http.call("POST", _path(self.id, "/resume"))

    def snapshot(self) -> Dict[str, Any]:
        """Saves /home/user and the settings; sandboxes.create(snapshot_id=...) restores them."""
        return self._http.call("POST", _path(self.id, "/snapshots"), timeout=600)

    def save_as_template(self, name: str, description: Optional[str] = None) -> Dict[str, Any]:
        """This running sandbox as a template of yours, ready at once: its root and what /home/user
        holds now; sandboxes.create(template=name) starts sandboxes from it."""
        body: Dict[str, Any] = {"name": name}
        if description is not None:
            body["description"] = description
        return self._http.call("POST", _path(self.id, "/template"), json_body=body, timeout=600)

    def fork(self, count: int = 1) -> List["Sandbox"]:
        """Copies of this sandbox's files and settings (kernel state is not copied)."""
        r = self._http.call("POST", _path(self.id, "/fork"), json_body={"count": count}, timeout=600)
        return [Sandbox(self._http, info) for info in r["sandboxes"]]

    def events(self) -> Any:
        return self._http.call("GET", _path(self.id, "/events"))

    def host_url(self, port: int) -> str:
        """The URL that reaches an HTTP server listening on `port` inside the sandbox."""
        return self._http.call("GET", _path(self.id, f"/host/{int(port)}"))["url"]

    def share_port(self, port: int, expires_in: int) -> Dict[str, Any]:
        """A signed URL to `port` that works without the key until it expires."""
        return self._http.call("POST", _path(self.id, f"/ports/{int(port)}/share"), json_body={"expires_in": expires_in})

    def kill(self) -> Dict[str, Any]:
        return self._http.call("DELETE", _path(self.id))


class SandboxFiles:
    def __init__(self, http: HttpClient, sandbox_id: str) -> None:
        self._http, self._id = http, sandbox_id

    def read(self, path: str) -> str:
        return self._http.call("POST", _path(self._id, "/files/read"), json_body={"path": path})["content"]

    def write(self, path: str, content: str) -> Dict[str, Any]:
        return self._http.call("POST", _path(self._id, "/files/write"), json_body={"path": path, "content": content})

    def list(self, path: str = "/home/user") -> List[Dict[str, Any]]:
        return self._http.call("POST", _path(self._id, "/files/list"), json_body={"path": path})["files"]

    def remove(self, path: str) -> Dict[str, Any]:
        return self._http.call("POST", _path(self._id, "/files/delete"), json_body={"path": path})

    def mkdir(self, path: str) -> Dict[str, Any]:
        return self._http.call("POST", _path(self._id, "/files/mkdir"), json_body={"path": path})

    def upload(self, path: str, content: Union[bytes, str]) -> Dict[str, Any]:
        data = content.encode("utf-8") if isinstance(content, str) else content
        body, ctype = multipart({"path": path}, "file", path.rsplit("/", 1)[-1] or "file", data)
        return self._http.call("POST", _path(self._id, "/upload"), data=body, headers={"content-type": ctype})

    def import_file(self, file_id: str, path: str) -> Dict[str, Any]:
        """Copies a stored file (/v1/files) into the sandbox."""
        return self._http.call("POST", _path(self._id, "/files/import"), json_body={"file_id": file_id, "path": path}, timeout=3600)

    def export_file(self, path: str, purpose: str = "user_data") -> Dict[str, Any]:
        """Stores a sandbox file as a new stored file (/v1/files)."""
        return self._http.call("POST", _path(self._id, "/files/export"), json_body={"path": path, "purpose": purpose}, timeout=3600)

    def download(self, path: str) -> bytes:
        with self._http.open("GET", _path(self._id, "/download"), query={"path": path}) as res:
            return res.read()


class SandboxCommands:
    def __init__(self, http: HttpClient, sandbox_id: str) -> None:
        self._http, self._id = http, sandbox_id

    def run(self, command: str, stream: bool = False, **opts: Any) -> Union[Dict[str, Any], Iterator[RunEvent]]:
        """Runs a command to completion ({stdout, stderr, exit_code, ...}); `timeout` in milliseconds."""
        body = {"command": command, **opts}
        wait = (opts.get("timeout") or 30_000) / 1000 + 30
        if stream:
            return _stream(self._http, _path(self._id, "/commands/run"), body, wait, lambda d: d)
        return self._http.call("POST", _path(self._id, "/commands/run"), json_body=body, timeout=wait)

    def start(self, command: str, **opts: Any) -> Dict[str, Any]:
        """Starts a command in the background; answers {pid, ...} at once."""
        return self._http.call("POST", _path(self._id, "/commands/run"), json_body={"command": command, **opts, "background": True})

    def list(self) -> List[Dict[str, Any]]:
        return self._http.call("GET", _path(self._id, "/commands"))["commands"]

    def get(self, pid: int) -> Dict[str, Any]:
        return self._http.call("GET", _path(self._id, f"/commands/{int(pid)}"))

    def send_stdin(self, pid: int, data: str, eof: bool = False) -> Dict[str, Any]:
        return self._http.call("POST", _path(self._id, f"/commands/{int(pid)}/stdin"), json_body={"data": data, "eof": eof})

    def kill(self, pid: int, signal: str = "KILL") -> Dict[str, Any]:
        return self._http.call("DELETE", _path(self._id, f"/commands/{int(pid)}"), query={"signal": signal})


class SandboxNetwork:
    def __init__(self, http: HttpClient, sandbox_id: str) -> None:
        self._http, self._id = http, sandbox_id

    def get(self) -> Dict[str, Any]:
        return self._http.call("GET", _path(self._id, "/network"))

    def set(self, internet_access: Optional[bool] = None, allow_out: Optional[List[str]] = None,
            deny_out: Optional[List[str]] = None) -> Dict[str, Any]:
        body = {k: v for k, v in {"internet_access": internet_access, "allow_out": allow_out, "deny_out": deny_out}.items() if v is not None}
        return self._http.call("PUT", _path(self._id, "/network"), json_body=body)

    def log(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        return self._http.call("GET", _path(self._id, "/network/log"), query={"limit": limit})["entries"]


class SandboxContexts:
    def __init__(self, http: HttpClient, sandbox_id: str) -> None:
        self._http, self._id = http, sandbox_id

    def create(self, language: str = "python", cwd: Optional[str] = None) -> Dict[str, Any]:
        body = {"language": language, **({"cwd": cwd} if cwd else {})}
        return self._http.call("POST", _path(self._id, "/code/contexts"), json_body=body)

    def list(self) -> List[Dict[str, Any]]:
        return self._http.call("GET", _path(self._id, "/code/contexts"))["contexts"]

    def delete(self, context_id: str) -> Dict[str, Any]:
        return self._http.call("DELETE", _path(self._id, f"/code/contexts/{urllib.parse.quote(context_id, safe='')}"))
