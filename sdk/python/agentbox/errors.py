"""Errors of the SDK: every failed call raises AgentBoxError carrying the API's error envelope."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Optional


class AgentBoxError(Exception):
    """A failed call. `code` is the envelope's code (`sandbox_not_found`, `rate_limited`, ...), or
    `timeout` / `connection_error` when no answer came (then `status` is 0)."""

    def __init__(self, status: int, code: str, message: str, request_id: Optional[str] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(f"{code}: {message}" if status == 0 else f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.retry_after = retry_after


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """`Retry-After` as seconds: delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, at.timestamp() - time.time())


def error_from_answer(status: int, headers, body: bytes) -> AgentBoxError:
    code, message = f"http_{status}", f"HTTP {status}"
    try:
        err = json.loads(body.decode("utf-8")).get("error") or {}
        code = err.get("code") or code
        message = err.get("message") or message
    except (ValueError, AttributeError):
        if body:
            message = f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}"
    return AgentBoxError(status, code, message, headers.get("x-request-id"), parse_retry_after(headers.get("retry-after")))
