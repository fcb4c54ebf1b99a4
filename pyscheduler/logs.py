"""Structured logging: readable lines on a terminal, one JSON object per line elsewhere (in-cluster)."""

from __future__ import annotations

import logging
import sys

import orjson
import structlog


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
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(serializer=_orjson_dumps),
        ]
    else:
        processors += [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=max(lvl, logging.WARNING), stream=sys.stderr)
