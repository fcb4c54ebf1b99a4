"""``pyscheduler run --reload``: restart the scheduler when an installed plugin's source changes.

Design
------
The parent process does no scheduling: it finds the source directories of every out-of-tree plugin (the
top-level package of each ``pyscheduler.plugins`` entry point, which for ``pip install -e`` is the
author's working copy), and runs ``pyscheduler run`` (the same arguments, without ``--reload``) as a child
with ``watchfiles.run_process``. When a ``.py`` file there changes, watchfiles stops the child (SIGINT,
then SIGKILL after a grace period: the daemon's normal shutdown) and starts a new one, which imports the
new code. watchfiles uses the OS's file events (inotify) through a maintained Rust core, with debouncing
and process handling we would otherwise write and get wrong; it is a development tool only, so it is an
optional dependency (``pip install 'pyscheduler[dev]'``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("pyscheduler.reload")

GROUP = "pyscheduler.plugins"


def plugin_source_dirs() -> list[Path]:
    """The directories (or single module files) of the out-of-tree plugins' top-level packages."""
    out: dict[Path, None] = {}
    for ep in importlib.metadata.entry_points(group=GROUP):
        top = ep.module.split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            log.warning("plugin module not found; not watched", entry_point=ep.value, module=top)
            continue
        if spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                out[Path(loc)] = None
        elif spec.origin:
            out[Path(spec.origin)] = None
    return list(out)


def _python_only(change: object, path: str) -> bool:
    return path.endswith(".py")


def run_with_reload(run_argv: Sequence[str], paths: Sequence[Path] | None = None) -> int:
    """Run ``pyscheduler run *run_argv`` in a child process, restarted on every plugin source change."""
    try:
        import watchfiles
    except ImportError:
        print(
            "pyscheduler run --reload needs watchfiles: pip install 'pyscheduler[dev]' (or watchfiles)",
            file=sys.stderr,
        )
        return 2
    watched = list(paths) if paths is not None else plugin_source_dirs()
    if not watched:
        print(
            "pyscheduler run --reload: no out-of-tree plugin is installed (entry point group "
            f"{GROUP}); nothing to watch",
            file=sys.stderr,
        )
        return 2
    command = shlex.join([sys.executable, "-m", "pyscheduler.cli", "run", *run_argv])
    log.info("watching plugin sources; the scheduler restarts on change", paths=[str(p) for p in watched])

    def changed(changes: set[tuple[Any, str]]) -> None:
        log.info("plugin source changed; restarting the scheduler", files=sorted(p for _, p in changes))

    reloads = watchfiles.run_process(
        *watched,
        target=command,
        target_type="command",
        watch_filter=_python_only,
        callback=changed,
        debounce=300,
    )
    log.info("reload watcher stopped", restarts=reloads)
    return 0
