"""Reflector: keep a handler in step with one API collection (list, then watch, forever).

Design
------
Modelled on client-go's reflector + informer, but delivering the scheduler's records instead of
API objects, with no intermediate DeltaFIFO:

- **Store.** key -> (resourceVersion, uid, record). Only parsed records are kept, never raw JSON.
- **List.** On start, after 410 Gone, and after any watch failure that is not a plain connection
  error, the collection is listed (consistent read, paginated) and diffed against the store:
  keys no longer listed -> ``on_delete`` (objects deleted while we were not watching; the store's
  last known record is passed), new keys -> ``on_add``, a changed resourceVersion -> ``on_update``,
  and a key whose uid changed (deleted and recreated under the same name) -> ``on_delete`` then
  ``on_add``. Deletes are delivered first, so a cache frees capacity before it is re-used.
- **Watch** from the list's resourceVersion, with bookmarks; every event and bookmark advances
  ``last_resource_version``. The server ends a watch after ``timeoutSeconds`` (random in
  [300, 600) by default, as client-go does, so reflectors do not reconnect in lock-step); the
  reflector re-watches from the last resourceVersion. A watch that ends within a second without
  an event counts as a failure (no hot loop against a misbehaving server).
- **Errors.** Connection errors (API server down or restarting) and 429 (throttled, or the watch
  cache is initializing) back off and re-watch from the last resourceVersion; 410 relists at once;
  other API errors back off and relist. The backoff is tenacity's ``wait_exponential_jitter`` (0.8 s
  doubling to ``backoff_max``, 30 s), reset by success, and it retries until ``stop()``. A 429 with
  ``Retry-After`` is retried after exactly that wait (capped at ``backoff_max``), without growing the
  backoff, up to ``THROTTLED_RETRIES`` times in a row, as client-go's request retries a watch before its
  reflector sees the error; past that, the longer of Retry-After and the backoff.
- **Malformed objects.** If ``parse`` raises (``MalformedObject``, or anything else), the raw object
  and the exception go to ``on_malformed`` and nothing is stored. A key that was stored keeps its
  last good record (so a cache does not forget resources it accounted for); its deletion is still
  delivered (looked up by ``raw_key``, which must agree with ``key``) and is not reported again.
- **Handlers** run on the reflector's own daemon thread, one event at a time, in order; an exception
  from a handler is logged and the loop goes on. Handlers of different reflectors run concurrently.
  ``on_delete`` is only called for keys previously given to ``on_add``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar, cast

import structlog
from tenacity import RetryCallState, wait_exponential_jitter

from pyscheduler.client.errors import ApiConnectionError, ApiError, GoneError
from pyscheduler.framework.types import JSON, identify

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

log = structlog.get_logger("pyscheduler.client")


class Handler(Protocol[T_contra]):
    def on_add(self, obj: T_contra) -> None: ...

    def on_update(self, old: T_contra, new: T_contra) -> None: ...

    def on_delete(self, obj: T_contra) -> None: ...


class WatchStream(Protocol):
    def __iter__(self) -> Iterator[tuple[str, JSON]]: ...

    def __next__(self) -> tuple[str, JSON]: ...

    def stop(self) -> None: ...


class ListWatcher(Protocol):
    """What a Reflector needs of ``Api`` (a fake in unit tests)."""

    def list(
        self,
        path: str,
        *,
        label_selector: str | None = ...,
        field_selector: str | None = ...,
        page_size: int = ...,
    ) -> tuple[list[JSON], str]: ...

    def watch(
        self,
        path: str,
        resource_version: str,
        *,
        field_selector: str | None = ...,
        label_selector: str | None = ...,
        timeout_seconds: int = ...,
    ) -> Any: ...


def default_raw_key(obj: JSON) -> str:
    """``namespace/name`` for namespaced objects, ``name`` otherwise (as client-go's MetaNamespaceKeyFunc)."""
    ns, name, _ = identify(obj)
    return f"{ns}/{name}" if ns else name


def _meta(obj: JSON) -> JSON:
    m = obj.get("metadata") if isinstance(obj, dict) else None
    return m if isinstance(m, dict) else {}


class _ShortWatch(ApiError):
    """A watch that ended within a second without an event."""


THROTTLED_RETRIES = 10  # client-go's default maxRetries for a request answered with Retry-After


class _Attempt:
    """Enough of tenacity's RetryCallState for its wait strategies."""

    def __init__(self, attempt_number: int) -> None:
        self.attempt_number = attempt_number


class Reflector(Generic[T]):
    """List+watch one collection into ``handler`` on a daemon thread; see the module docstring."""

    def __init__(
        self,
        api: ListWatcher,
        path: str,
        parse: Callable[[JSON], T],
        key: Callable[[T], str],
        handler: Handler[T],
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        name: str = "pods",
        page_size: int = 500,
        watch_timeout: float | None = None,
        on_malformed: Callable[[JSON, Exception], None] | None = None,
        raw_key: Callable[[JSON], str] = default_raw_key,
        backoff_max: float = 30.0,
        backoff_initial: float = 0.8,
    ) -> None:
        self.api = api
        self.path = path
        self.parse = parse
        self.key = key
        self.handler = handler
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.name = name
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.on_malformed = on_malformed
        self.raw_key = raw_key
        self._backoff = wait_exponential_jitter(
            multiplier=backoff_initial, max=backoff_max, jitter=backoff_initial
        )
        self._store: dict[str, tuple[str, str, T]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: WatchStream | None = None
        self._rv = ""
        self._log = log.bind(reflector=name, path=path)
        # counters (metrics, tests)
        self.lists = 0
        self.watches = 0
        self.events = 0
        self.errors = 0
        self.handler_errors = 0

    # ------------------------------------------------------------------------------ public
    def start(self) -> Reflector[T]:
        if self._thread is not None:
            raise RuntimeError(f"reflector {self.name} already started")
        self._thread = threading.Thread(target=self._run, name=f"reflector-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching and join the thread (handlers are not called after this returns, unless the
        join timed out in the middle of a handler)."""
        self._stop.set()
        w = self._watch
        if w is not None:
            w.stop()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until the first list has been delivered to the handler; False on timeout."""
        return self._synced.wait(timeout)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    @property
    def last_resource_version(self) -> str:
        return self._rv

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def get(self, key: str) -> T | None:
        with self._lock:
            e = self._store.get(key)
        return e[2] if e is not None else None

    def items(self) -> list[T]:
        with self._lock:
            return [e[2] for e in self._store.values()]

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._store)

    def __len__(self) -> int:
        return len(self._store)

    # ------------------------------------------------------------------------------ loop
    def _delay(self, attempt: int) -> float:
        return float(self._backoff(cast(RetryCallState, _Attempt(attempt))))

    def _run(self) -> None:
        attempt = 0
        throttled = 0  # 429s with Retry-After in a row, retried after Retry-After without backoff
        need_list = True
        while not self._stop.is_set():
            delay: float | None = None
            listing = need_list
            try:
                if need_list:
                    self._list()
                    need_list = listing = False
                    attempt = 0
                started, events = time.monotonic(), self.events
                self._watch_once()
                if self._stop.is_set():
                    break
                if self.events == events and time.monotonic() - started < 1.0:
                    raise _ShortWatch(0, "ShortWatch", "watch ended without events", "WATCH", self.path)
                attempt = throttled = 0
                continue
            except GoneError as e:
                self._log.info("resource version expired, relisting", error=str(e), resource_version=self._rv)
                need_list = True
                if not listing:
                    attempt = 0
                    continue
                self.errors += 1  # the list itself said 410: back off rather than spin
                attempt += 1
            except (ApiConnectionError, _ShortWatch) as e:
                # The server is unreachable (or misbehaving): keep the resourceVersion and re-watch.
                self.errors += 1
                attempt += 1
                self._log.warning("api server unreachable", error=str(e), attempt=attempt)
            except ApiError as e:
                self.errors += 1
                if e.status == 429 and e.retry_after is not None and throttled < THROTTLED_RETRIES:
                    # The server said when to come back: then, without growing the backoff.
                    throttled += 1
                    self._log.info(
                        "throttled, retrying after Retry-After", error=str(e), retry_after=e.retry_after
                    )
                    if self._stop.wait(min(e.retry_after, self._backoff.max)):
                        break
                    continue
                attempt += 1
                if e.status == 429:
                    # Throttled, or the watch cache is (re)initializing: retry the same call later.
                    delay = e.retry_after
                else:
                    # Anything else (e.g. a 500 "etcd event received with PrevKv=nil" for a watch from
                    # exactly the compaction revision) would recur on a re-watch: start over with a list.
                    need_list = True
                self._log.warning("list/watch failed", error=str(e), attempt=attempt, relist=need_list)
            except Exception as e:
                self.errors += 1
                attempt += 1
                need_list = True
                self._log.exception("reflector error", error=repr(e), attempt=attempt)
            wait = self._delay(attempt)
            if delay is not None:
                wait = max(wait, min(delay, self._backoff.max))
            if self._stop.wait(wait):
                break
        self._log.debug("reflector stopped")

    def _list(self) -> None:
        items, rv = self.api.list(
            self.path,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
        )
        self.lists += 1
        if self._stop.is_set():
            return
        self._replace(items)
        self._rv = rv
        first = not self._synced.is_set()
        self._synced.set()
        self._log.info("listed", items=len(items), resource_version=rv, initial=first)

    def _watch_once(self) -> None:
        timeout = self.watch_timeout if self.watch_timeout is not None else random.uniform(300.0, 600.0)
        w: WatchStream = self.api.watch(
            self.path,
            self._rv,
            field_selector=self.field_selector,
            label_selector=self.label_selector,
            timeout_seconds=max(1, int(timeout)),
        )
        self._watch = w
        self.watches += 1
        try:
            if self._stop.is_set():
                return
            for etype, obj in w:
                if self._stop.is_set():
                    return
                self.events += 1
                rv = _meta(obj).get("resourceVersion")
                if etype in ("ADDED", "MODIFIED"):
                    self._upsert(obj)
                elif etype == "DELETED":
                    self._deleted(obj)
                elif etype != "BOOKMARK":
                    self._log.warning("unknown watch event type", type=etype)
                if rv:
                    self._rv = str(rv)
        finally:
            self._watch = None
            w.stop()

    # ------------------------------------------------------------------------------ store + handlers
    def _parse(self, obj: JSON, *, report: bool = True) -> T | None:
        try:
            rec = self.parse(obj)
            # The store key is computed from the record later, outside this guard: a key that cannot be
            # computed or hashed (a uid that is a map, say) would raise there, abort the list and re-list
            # forever. Check it here, where the object is reported as malformed instead.
            hash(self.key(rec))
            return rec
        except Exception as e:
            if not report:
                return None
            ns, name, uid = identify(obj)
            self._log.warning("malformed object", namespace=ns, name=name, uid=uid, error=str(e))
            if self.on_malformed is not None:
                self._call(self.on_malformed, obj, e)
            return None

    def _call(self, fn: Callable[..., object], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as e:
            self.handler_errors += 1
            self._log.exception(
                "event handler failed", handler=getattr(fn, "__qualname__", repr(fn)), error=repr(e)
            )

    def _upsert(self, obj: JSON) -> None:
        rec = self._parse(obj)
        if rec is None:
            return
        meta = _meta(obj)
        k = self.key(rec)
        entry = (str(meta.get("resourceVersion") or ""), str(meta.get("uid") or ""), rec)
        with self._lock:
            old = self._store.get(k)
            self._store[k] = entry
        if old is None:
            self._call(self.handler.on_add, rec)
        elif old[1] and entry[1] and old[1] != entry[1]:
            self._call(self.handler.on_delete, old[2])
            self._call(self.handler.on_add, rec)
        else:
            self._call(self.handler.on_update, old[2], rec)

    def _deleted(self, obj: JSON) -> None:
        rec = self._parse(obj, report=False)  # a deleted object needs no report, malformed or not
        k = self.key(rec) if rec is not None else self.raw_key(obj)
        with self._lock:
            old = self._store.pop(k, None)
        if old is not None:
            self._call(self.handler.on_delete, rec if rec is not None else old[2])

    def _replace(self, items: list[JSON]) -> None:
        parsed: dict[str, tuple[str, str, T]] = {}
        malformed: set[str] = set()
        for obj in items:
            rec = self._parse(obj)
            if rec is None:
                malformed.add(self.raw_key(obj))
                continue
            meta = _meta(obj)
            parsed[self.key(rec)] = (str(meta.get("resourceVersion") or ""), str(meta.get("uid") or ""), rec)
        with self._lock:
            old_store = self._store
            new_store = dict(parsed)
            for k in malformed:  # keep the last good record of a key that became malformed
                if k in old_store and k not in new_store:
                    new_store[k] = old_store[k]
            self._store = new_store
        deleted = 0
        for k, (_, _, rec) in old_store.items():
            if k not in new_store:
                deleted += 1
                self._call(self.handler.on_delete, rec)
        for k, (rv, uid, rec) in parsed.items():
            old = old_store.get(k)
            if old is None:
                self._call(self.handler.on_add, rec)
            elif old[1] and uid and old[1] != uid:
                self._call(self.handler.on_delete, old[2])
                self._call(self.handler.on_add, rec)
            elif old[0] != rv:
                self._call(self.handler.on_update, old[2], rec)
        if deleted:
            self._log.info("objects deleted while not watching", count=deleted)
