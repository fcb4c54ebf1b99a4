"""BindingNotifier: tells a webhook about every pod the profile binds.

Behaviour
---------
PostBind (after the binding succeeded) puts one notification on a bounded in-memory queue and returns at
once; a single background thread POSTs each as JSON to ``webhookURL``::

    {"pod": "web-1", "namespace": "shop", "node": "node-3", "uid": "…", "scheduler": "py-scheduler",
     "time": "2025-01-31T12:00:00Z"}

``time`` is when PostBind ran (the framework clock's wall time, UTC). The POST has a ``timeoutSeconds``
timeout; a failure (refused, timeout, non-2xx answer) is logged as a warning — at most one per
``WARN_INTERVAL`` seconds, with the number of failures since the last one — and the notification is
dropped: no retries, and never an effect on scheduling. When the queue is full (the webhook is slower
than the binding rate) new notifications are dropped the same way. Notifications still queued when the
process exits are lost. Like NetworkTraffic, this plugin does network I/O, off the scheduling path.

Args (``pluginConfig[].args``)::

    webhookURL: http://binding-log.example.svc:8080/bindings   # required, http or https
    timeoutSeconds: 2                                            # per POST, > 0
    queueSize: 1000                                              # notifications waiting at most

Extension point: PostBind.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import ClusterEventWithHint
from pyscheduler.framework.helpers.timefmt import rfc3339
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.types import Pod

NAME = "BindingNotifier"
WARN_INTERVAL = 30.0
USER_AGENT = "pyscheduler-binding-notifier"

log = structlog.get_logger("pyscheduler.plugins.binding_notifier")

Poster = Callable[[str, bytes, float], None]


@dataclass(frozen=True)
class BindingNotifierArgs:
    webhookURL: str = ""  # noqa: N815 (camelCase: the config key users write is "webhookURL")
    timeout_seconds: float = 2.0
    queue_size: int = 1000

    def validate(self, path: str) -> None:
        if not self.webhookURL:
            raise ArgsError(f"{path}.webhookURL", "required")
        u = urllib.parse.urlsplit(self.webhookURL)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ArgsError(f"{path}.webhookURL", f"must be an http or https URL, got {self.webhookURL!r}")
        if self.timeout_seconds <= 0:
            raise ArgsError(f"{path}.timeoutSeconds", f"must be greater than 0, got {self.timeout_seconds:g}")
        if self.queue_size < 1:
            raise ArgsError(f"{path}.queueSize", f"must be at least 1, got {self.queue_size}")


def http_post(url: str, body: bytes, timeout: float) -> None:
    """POST ``body`` as JSON; raises on a connection error, a timeout or a non-2xx answer."""
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("User-Agent", USER_AGENT)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        r.read()


class BindingNotifier:
    name = NAME

    def __init__(
        self,
        args: BindingNotifierArgs,
        handle: Handle,
        *,
        post: Poster = http_post,
        wall: Callable[[], float] | None = None,
    ) -> None:
        self.args = args
        self._handle = handle
        self._post = post
        self.log: Any = log
        clock = getattr(handle, "clock", None)  # FrameworkHandle's Clock: wall time for the payload
        self._wall: Callable[[], float] = wall or getattr(clock, "wall", None) or time.time
        self._queue: queue.Queue[dict[str, str] | None] = queue.Queue(maxsize=args.queue_size)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._failures = 0  # since the last warning
        self._last_warning: float | None = None
        self.sent = 0
        self.dropped = 0

    # ------------------------------------------------------------------------------- PostBind
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        payload = {
            "pod": pod.name,
            "namespace": pod.namespace,
            "node": node_name,
            "uid": pod.uid,
            "scheduler": pod.scheduler_name,
            "time": rfc3339(self._wall()),
        }
        self._ensure_thread()
        try:
            self._queue.put_nowait(payload)
        except queue.Full:
            self._failed(f"queue full ({self.args.queue_size} notifications waiting)", payload)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return []  # never rejects a pod

    # ------------------------------------------------------------------------------- sender
    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="binding-notifier", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            payload = self._queue.get()
            try:
                if payload is None:
                    return
                self._send(payload)
            finally:
                self._queue.task_done()

    def _send(self, payload: dict[str, str]) -> None:
        body = json.dumps(payload).encode()
        try:
            self._post(self.args.webhookURL, body, self.args.timeout_seconds)
        except Exception as e:  # refused, timeout, HTTP error: log and drop
            self._failed(_describe(e), payload)
            return
        with self._lock:
            self.sent += 1

    def _failed(self, error: str, payload: dict[str, str]) -> None:
        now = self._handle.now()
        with self._lock:
            self.dropped += 1
            self._failures += 1
            if self._last_warning is not None and now - self._last_warning < WARN_INTERVAL:
                return
            failures, self._failures = self._failures, 0
            self._last_warning = now
        self.log.warning(
            "binding notification not delivered",
            webhook=self.args.webhookURL,
            error=error,
            pod=f"{payload['namespace']}/{payload['pod']}",
            failures=failures,
        )

    # ------------------------------------------------------------------------------- lifecycle
    def flush(self, timeout: float) -> bool:
        """Wait until every queued notification was sent or dropped; False if ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        """Stop the sender after what is queued (tests; the daemon thread dies with the process)."""
        with self._lock:
            t = self._thread
        if t is not None and t.is_alive():
            self._queue.put(None)
            t.join(self.args.timeout_seconds + 1)


def _describe(e: BaseException) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, urllib.error.URLError):
        return str(e.reason)
    return str(e) or type(e).__name__


def new(args: BindingNotifierArgs | None, handle: Handle) -> BindingNotifier:
    if args is None:
        raise ValueError("BindingNotifier needs args with a webhookURL")
    return BindingNotifier(args, handle)


PLUGIN = PluginSpec(
    NAME, new, BindingNotifierArgs, "POSTs every binding to a webhook, off the scheduling path"
)
