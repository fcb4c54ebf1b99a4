"""What a failed API call raises, and how a caller asks what kind of failure it was.

``ApiError`` carries the HTTP status (0 when no response came: connection refused or reset, TLS failure,
timeout; see ``ApiConnectionError``), the API Status's ``reason`` and the server's message verbatim; its
``str`` names the method, path, status, reason and message, e.g. ``POST /api/v1/namespaces/ns/pods/x/
binding: HTTP 403 Forbidden: pods "x" is forbidden: User "..." cannot create resource "pods/binding"``.

``is_retryable`` is the line the transport's retries follow (connection errors, timeouts, 429 and 5xx but
501); every other 4xx is final at once. ``error_from_response`` builds the error from a response body
(normally a v1 Status) and its ``Retry-After`` header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson


class ApiError(Exception):
    """A failed API call. ``status`` is the HTTP status (0: no response: connection error or timeout),
    ``reason`` the API Status's reason (``Conflict``, ``NotFound``, ``Forbidden``, ``Expired``, ...) or
    the HTTP reason phrase, ``message`` the API server's message verbatim."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        method: str,
        path: str,
        *,
        retry_after: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.method = method
        self.path = path
        self.retry_after = retry_after
        self.details: Mapping[str, Any] = details or {}
        self.attempts = (
            1  # how many times the request was sent (set by Transport.request on the final failure)
        )
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.status:
            return f"{self.method} {self.path}: HTTP {self.status} {self.reason}: {self.message}"
        return f"{self.method} {self.path}: {self.reason}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.status, self.reason, self.message, self.method, self.path))

    def is_conflict(self) -> bool:
        return self.status == 409

    def is_not_found(self) -> bool:
        return self.status == 404

    def is_gone(self) -> bool:
        return self.status == 410

    def is_forbidden(self) -> bool:
        return self.status == 403

    def is_already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    def is_retryable(self) -> bool:
        """Connection errors, timeouts, 429 and 5xx (except 501 Not Implemented)."""
        return self.status == 0 or self.status == 429 or (self.status >= 500 and self.status != 501)


class GoneError(ApiError):
    """410: the resourceVersion (of a watch or a continue token) is older than etcd keeps. Relist."""


class ApiConnectionError(ApiError):
    """No HTTP response: connection refused or reset, TLS failure, timeout."""


class FencedError(ApiError):
    """A Binding not sent because ``Api.bind_fence`` said no (this replica no longer holds its lease).
    Final: retrying cannot make us leader again."""

    def is_retryable(self) -> bool:
        return False


def is_conflict(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_conflict()


def is_not_found(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_not_found()


def is_gone(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_gone()


def is_forbidden(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_forbidden()


def is_retryable(e: BaseException | None) -> bool:
    return isinstance(e, ApiError) and e.is_retryable()


def error_from_response(
    status: int, body: bytes, method: str, path: str, *, http_reason: str = "", retry_after: str | None = None
) -> ApiError:
    """An ApiError from an error response; the body is normally a v1 Status."""
    reason, message, details = http_reason or "Error", "", None
    parsed: Any = None
    if body:
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            message = body.decode("utf-8", "replace").strip()
    if isinstance(parsed, dict):
        reason = str(parsed.get("reason") or reason)
        message = str(parsed.get("message") or "")
        d = parsed.get("details")
        details = d if isinstance(d, dict) else None
    if not message:
        message = http_reason or f"HTTP {status}"
    ra = _parse_retry_after(retry_after)
    if details and ra is None and isinstance(details.get("retryAfterSeconds"), int):
        ra = float(details["retryAfterSeconds"])
    cls = GoneError if status == 410 else ApiError
    return cls(status, reason, message, method, path, retry_after=ra, details=details)


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
