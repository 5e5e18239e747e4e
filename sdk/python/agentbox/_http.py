"""The SDK's HTTP core on the standard library: one `call` for every route, retries that honour
Retry-After, timeouts, server-sent events, multipart uploads."""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Dict, Iterator, Optional, Tuple

from .errors import AgentBoxError, error_from_answer

IDEMPOTENT = {"GET", "PUT", "DELETE"}


class HttpClient:
    def __init__(self, api_key: Optional[str] = None, base_url: Optional[str] = None, timeout: float = 60.0,
                 max_retries: int = 3, max_retry_wait: float = 30.0) -> None:
        api_key = api_key or os.environ.get("AGENTBOX_API_KEY")
        if not api_key:
            raise AgentBoxError(0, "unauthorized", "No API key: pass api_key or set AGENTBOX_API_KEY")
        self.api_key = api_key
        self.base_url = (base_url or os.environ.get("AGENTBOX_URL") or "http://127.0.0.1:8080").rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait

    def url(self, path: str, query: Optional[Dict[str, Any]] = None) -> str:
        q = {k: v for k, v in (query or {}).items() if v is not None}
        return self.base_url + path + (("?" + urllib.parse.urlencode(q)) if q else "")

    def open(self, method: str, path: str, *, json_body: Any = None, query: Optional[Dict[str, Any]] = None,
             data: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None, timeout: Optional[float] = None):
        """Sends one request and answers the open response (2xx); raises AgentBoxError otherwise."""
        hdrs = {"authorization": f"Bearer {self.api_key}", **(headers or {})}
        if json_body is not None:
            data = json.dumps(json_body).encode("utf-8")
            hdrs["content-type"] = "application/json"
        attempt = 0
        while True:
            req = urllib.request.Request(self.url(path, query), data=data, method=method, headers=hdrs)
            try:
                return urllib.request.urlopen(req, timeout=timeout or self.timeout)
            except urllib.error.HTTPError as e:
                err = error_from_answer(e.code, e.headers, e.read())
                e.close()
                refused = e.code == 429 or (e.code == 503 and err.code == "at_capacity")
                if refused and attempt < self.max_retries:
                    time.sleep(min(self.max_retry_wait, err.retry_after if err.retry_after is not None else 2 ** attempt))
                    attempt += 1
                    continue
                raise err from None
            except (socket.timeout, TimeoutError) as e:
                raise AgentBoxError(0, "timeout", "No answer within the timeout") from e
            except (urllib.error.URLError, ConnectionError) as e:
                reason = getattr(e, "reason", e)
                if isinstance(reason, (socket.timeout, TimeoutError)):
                    raise AgentBoxError(0, "timeout", "No answer within the timeout") from e
                if method in IDEMPOTENT and attempt < self.max_retries:
                    time.sleep(min(self.max_retry_wait, 0.25 * 2 ** attempt))
                    attempt += 1
                    continue
                raise AgentBoxError(0, "connection_error", f"Could not reach the service: {reason}") from e

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """Calls one route and answers its parsed JSON."""
        with self.open(method, path, **kwargs) as res:
            body = res.read()
        try:
            return json.loads(body) if body else None
        except ValueError as e:
            raise AgentBoxError(res.status, "invalid_response", "The answer is not JSON") from e

    def events(self, method: str, path: str, **kwargs: Any) -> Iterator[Tuple[str, str]]:
        """Calls a streaming route and yields (event, data) pairs as they arrive."""
        res = self.open(method, path, headers={"accept": "text/event-stream"}, **kwargs)
        try:
            event, data = "message", []
            for raw in res:
                line = raw.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if data:
                        yield event, "\n".join(data)
                    event, data = "message", []
                elif not line.startswith(":"):
                    field, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if field == "event":
                        event = value
                    elif field == "data":
                        data.append(value)
            if data:
                yield event, "\n".join(data)
        finally:
            # Closing early (leaving the for loop) closes the connection, which interrupts a run.
            res.close()


def multipart(fields: Dict[str, str], file_field: str, filename: str, content: bytes) -> Tuple[bytes, str]:
    """A multipart/form-data body (the standard library has no encoder for one)."""
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode("utf-8"))
    safe = filename.replace('"', "_").replace("\r", "_").replace("\n", "_")
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{safe}"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n".encode("utf-8"))
    parts.append(content)
    parts.append(f"\r\n--{boundary}--\r\n".encode("utf-8"))
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"
