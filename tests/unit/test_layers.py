"""The import layers of docs/architecture.md, checked on every test run.

- framework imports only the standard library, NumPy (pure computation) and itself (no kubernetes, no
  I/O packages);
- a plugin imports only the framework, the standard library, NumPy and its own package;
- only pyscheduler.client imports the ``kubernetes`` package;
- framework, plugins and backend never import client, app, scheduler, engine or cli;
- engine (the in-process scheduler: app's wiring without the API server) does no I/O: it never imports
  client or kubernetes at module level (build_app only imports client when no recorder/writer is given).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "pyscheduler"
STDLIB = set(sys.stdlib_module_names)
# Plugins that are documented exceptions: they talk to something outside the cluster on purpose.
NETWORK_PLUGINS = {"network_traffic", "binding_notifier"}
# NumPy does no I/O: the batch Filter/Score paths (framework.node_table) compute with it.
PURE_THIRD_PARTY = {"numpy"}
# cel-expr-python evaluates CEL in memory (no I/O, no clock): DynamicResources compiles its device selectors with it.
THIRD_PARTY_ALLOWED_IN_PLUGINS = {"structlog", "cel_expr_python", *PURE_THIRD_PARTY}


# A plugin package's test support: the builders and fixtures its test_*.py modules share.
TEST_SUPPORT = {"_fixtures.py", "conftest.py"}


def modules() -> list[Path]:
    return [p for p in ROOT.rglob("*.py") if not p.name.startswith("test_") and p.name not in TEST_SUPPORT]


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT.parent))


@pytest.mark.parametrize("path", [p for p in modules() if "framework" in p.parts], ids=rel)
def test_framework_is_pure(path: Path) -> None:
    for mod in imports(path):
        top = mod.split(".")[0]
        assert top in STDLIB or top in PURE_THIRD_PARTY or mod.startswith("pyscheduler.framework"), (
            f"{rel(path)} imports {mod}"
        )


@pytest.mark.parametrize(
    "path", [p for p in modules() if "plugins" in p.parts and p.parent.name != "plugins"], ids=rel
)
def test_plugins_import_only_the_framework(path: Path) -> None:
    parts = path.relative_to(ROOT / "plugins").parts
    own = "pyscheduler.plugins." + ".".join(parts[:-1])
    for mod in imports(path):
        top = mod.split(".")[0]
        if top in STDLIB:
            network = mod in ("urllib.request", "http.client", "socket") or top == "http"
            if network and not NETWORK_PLUGINS.intersection(parts):
                pytest.fail(f"{rel(path)} does network I/O ({mod}) but is not a documented network plugin")
            continue
        if top in THIRD_PARTY_ALLOWED_IN_PLUGINS:
            continue
        assert mod.startswith(("pyscheduler.framework", own)), f"{rel(path)} imports {mod}"


@pytest.mark.parametrize("path", modules(), ids=rel)
def test_only_the_client_layer_imports_kubernetes(path: Path) -> None:
    if "client" in path.relative_to(ROOT).parts[:1]:
        return
    for mod in imports(path):
        assert mod.split(".")[0] != "kubernetes", f"{rel(path)} imports {mod}; only pyscheduler.client may"


@pytest.mark.parametrize(
    "path",
    [p for p in modules() if p.relative_to(ROOT).parts[0] in ("framework", "plugins", "backend")],
    ids=rel,
)
def test_core_does_not_import_outer_layers(path: Path) -> None:
    for mod in imports(path):
        assert not mod.startswith(
            (
                "pyscheduler.client",
                "pyscheduler.app",
                "pyscheduler.scheduler",
                "pyscheduler.engine",
                "pyscheduler.cli",
            )
        ), f"{rel(path)} imports {mod}"


def test_engine_does_no_io() -> None:
    for mod in imports(ROOT / "engine.py"):
        top = mod.split(".")[0]
        assert not mod.startswith("pyscheduler.client") and top not in ("kubernetes", "socket", "http"), (
            f"pyscheduler/engine.py imports {mod}"
        )
