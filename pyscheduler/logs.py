"""Structured logging: readable lines on a terminal, one JSON object per line elsewhere (in-cluster)."""

from __future__ import annotations

import logging
import sys

import orjson
import structlog
from structlog.tracebacks import ExceptionDictTransformer


def _orjson_dumps(obj: object, default: object = None) -> str:
    return orjson.dumps(obj, default=str).decode()


def setup_logging(fmt: str = "auto", level: str = "info") -> None:
    """fmt: "auto" (console on a TTY, JSON otherwise), "console" or "json"."""
    lvl = getattr(logging, level.upper(), logging.INFO)
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if use_json:
        processors += [
            # never render a frame's local variables: a request's headers (a bearer token) can be one
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            structlog.processors.JSONRenderer(serializer=_orjson_dumps),
        ]
    else:
        # plain_traceback pinned: the default becomes rich's (locals shown) when rich is installed
        processors += [
            structlog.dev.ConsoleRenderer(
                colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
            )
        ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=max(lvl, logging.WARNING), stream=sys.stderr)
