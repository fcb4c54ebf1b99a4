"""Out-of-tree plugins: what ``pip install`` of a plugin package does to pyscheduler, and the tutorial.

- The registry finds plugins through the ``pyscheduler.plugins`` entry-point group. Tests install fake
  distributions by replacing ``pyscheduler.plugins.registry.entry_points`` (the function the registry
  calls), so nothing is really installed and the real example package is loaded from its source tree.
- A name clash with a built-in plugin, or an entry point that cannot be loaded, is a RegistryError at
  start that says which plugin, which entry point and which distribution.
- The example package's own tests (examples/pyscheduler-plugin-zonequota/tests) run here too: they are
  imported and re-exported as ``test_zonequota_example__*``.
- docs/plugins.md cannot rot: every code block tagged with a file path equals that file, its
  KubeSchedulerConfiguration examples load, and its reference mentions every builder method, Handle
  method and extension point.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
import subprocess
import sys
import types
from collections.abc import Callable, Mapping
from importlib.metadata import Distribution, EntryPoints
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyscheduler import cli
from pyscheduler.config.load import parse_config
from pyscheduler.config.types import ConfigError
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import EXTENSION_POINTS
from pyscheduler.plugins import registry as registry_mod
from pyscheduler.plugins.registry import (
    ENTRY_POINT_GROUP,
    RegistryError,
    full_registry,
    in_tree,
    plugin_extension_points,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pyscheduler-plugin-zonequota"
EXAMPLE_PACKAGE = "pyscheduler_plugin_zonequota"
DOC = ROOT / "docs" / "plugins.md"


# ------------------------------------------------------------------------------ the example package


def _load(name: str, path: Path, package_dir: Path | None = None) -> types.ModuleType:
    """Import ``path`` as module ``name`` without putting its directory on sys.path (a directory on
    sys.path could also expose a stray *.egg-info, registering the plugin for every other test)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=[str(package_dir)] if package_dir else None
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


example = _load(EXAMPLE_PACKAGE, EXAMPLE / EXAMPLE_PACKAGE / "__init__.py", EXAMPLE / EXAMPLE_PACKAGE)
_example_tests = _load("zonequota_example_tests", EXAMPLE / "tests" / "test_zonequota.py")
for _name, _fn in vars(_example_tests).items():
    if _name.startswith("test_") and callable(_fn):
        globals()[f"test_zonequota_example__{_name[len('test_') :]}"] = _fn


def test_the_example_tests_are_collected_here() -> None:
    here = {n for n in globals() if n.startswith("test_zonequota_example__")}
    assert len(here) >= 10, here


# ------------------------------------------------------------------------------ fake installations


class FakeDistribution(Distribution):
    """What ``pip install`` leaves in site-packages, reduced to METADATA and entry_points.txt."""

    def __init__(self, name: str, entry_points: Mapping[str, str]) -> None:
        self._name = name
        self._entry_points = entry_points

    def read_text(self, filename: str) -> str | None:
        if filename == "METADATA":
            return f"Metadata-Version: 2.1\nName: {self._name}\nVersion: 1.0.0\n"
        if filename == "entry_points.txt":
            lines = "".join(f"{k} = {v}\n" for k, v in self._entry_points.items())
            return f"[{ENTRY_POINT_GROUP}]\n{lines}"
        return None

    def locate_file(self, path: Any) -> Path:
        return Path(str(path))


Install = Callable[[str, Mapping[str, str]], None]


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch) -> Install:
    """``install(distribution, {entry point name: "module:attr"})``, as pip would."""
    dists: list[FakeDistribution] = []

    def entry_points(*, group: str) -> EntryPoints:
        return EntryPoints(ep for d in dists for ep in d.entry_points if ep.group == group)

    monkeypatch.setattr(registry_mod, "entry_points", entry_points)
    return lambda name, eps: dists.append(FakeDistribution(name, eps))


@pytest.fixture
def fake_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """An importable module ``fake_plugins`` for entry points to point at."""
    module = types.ModuleType("fake_plugins")
    monkeypatch.setitem(sys.modules, "fake_plugins", module)
    return module


# ------------------------------------------------------------------------------ the registry


def test_an_installed_plugin_joins_the_built_ins(install: Install) -> None:
    install("pyscheduler-plugin-zonequota", {"ZoneQuota": f"{EXAMPLE_PACKAGE}:PLUGIN"})
    reg = full_registry()
    assert reg["ZoneQuota"] is example.PLUGIN
    assert set(reg) == set(in_tree()) | {"ZoneQuota"}
    assert plugin_extension_points(reg["ZoneQuota"]) == {"preFilter", "filter", "preScore", "score"}


def test_nothing_installed_means_only_the_built_ins(install: Install) -> None:
    assert set(full_registry()) == set(in_tree())


def test_an_entry_point_may_name_a_factory(install: Install, fake_module: types.ModuleType) -> None:
    @dataclasses.dataclass(frozen=True)
    class Args:
        limit: int = 1

    class Noop:
        name = "Noop"

        def filter(self, state: Any, pod: Any, node_info: Any) -> None:
            return None

    def new_noop(args: Args, handle: Handle) -> Noop:
        return Noop()

    new_noop.args_type = Args  # type: ignore[attr-defined]
    fake_module.new_noop = new_noop  # type: ignore[attr-defined]
    install("noop-plugin", {"Noop": "fake_plugins:new_noop"})
    spec = full_registry()["Noop"]
    assert (spec.name, spec.factory, spec.args_type) == ("Noop", new_noop, Args)
    assert spec.decode({"limit": 3}, "args") == Args(3)


def test_a_name_clash_with_a_built_in_is_an_error_naming_both(install: Install) -> None:
    # The clash is found before the entry point is loaded: the module need not even exist.
    install("evil-scheduling-plugins", {"NodeName": "evil_plugins.node_name:PLUGIN"})
    with pytest.raises(RegistryError) as e:
        full_registry()
    msg = str(e.value)
    assert "'NodeName'" in msg
    assert "evil_plugins.node_name:PLUGIN" in msg and "evil-scheduling-plugins" in msg  # the out-of-tree one
    assert "built-in plugin" in msg  # ... and the in-tree one


def test_two_distributions_declaring_the_same_plugin_is_an_error(install: Install) -> None:
    install("pyscheduler-plugin-zonequota", {"ZoneQuota": f"{EXAMPLE_PACKAGE}:PLUGIN"})
    install("zonequota-fork", {"ZoneQuota": f"{EXAMPLE_PACKAGE}:PLUGIN"})
    with pytest.raises(RegistryError, match=r"pyscheduler-plugin-zonequota.*zonequota-fork"):
        full_registry()


def test_a_broken_plugin_stops_the_cli_with_a_message_and_exit_code_2(
    install: Install, capsys: pytest.CaptureFixture[str]
) -> None:
    install("evil-scheduling-plugins", {"NodeName": "evil_plugins:PLUGIN"})
    with pytest.raises(SystemExit) as e:
        cli.main(["plugins"])
    assert e.value.code == 2
    assert "'NodeName'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("entry_point", "setup", "error"),
    [
        pytest.param(
            "no_such_module:PLUGIN",
            None,
            "loading out-of-tree plugin 'Broken' from no_such_module:PLUGIN: No module named 'no_such_module'",
            id="module not installed",
        ),
        pytest.param(
            "fake_plugins:PLUGIN",
            None,
            "loading out-of-tree plugin 'Broken' from fake_plugins:PLUGIN: module 'fake_plugins' has no "
            "attribute 'PLUGIN'",
            id="attribute missing",
        ),
        pytest.param(
            "fake_plugins:PLUGIN",
            42,
            "entry point 'Broken' is neither a PluginSpec nor a factory",
            id="not a plugin",
        ),
        pytest.param(
            "fake_plugins:PLUGIN",
            PluginSpec("ZoneQuota", lambda a, h: None),
            "entry point 'Broken' names a PluginSpec called 'ZoneQuota'",
            id="spec under another name",
        ),
    ],
)
def test_a_bad_entry_point_is_a_clear_error(
    install: Install, fake_module: types.ModuleType, entry_point: str, setup: Any, error: str
) -> None:
    if setup is not None:
        fake_module.PLUGIN = setup  # type: ignore[attr-defined]
    install("broken-plugin", {"Broken": entry_point})
    with pytest.raises(RegistryError) as e:
        full_registry()
    assert str(e.value) == error


def test_a_plugin_whose_import_fails_names_the_cause(
    install: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = types.ModuleType("exploding_plugin")
    monkeypatch.setitem(sys.modules, "exploding_plugin", module)

    def boom(name: str) -> Any:
        raise ImportError("needs libfoo >= 2")

    module.__getattr__ = boom  # type: ignore[method-assign]
    install("exploding-plugin", {"Exploding": "exploding_plugin:PLUGIN"})
    with pytest.raises(RegistryError, match=r"^loading out-of-tree plugin 'Exploding' .*needs libfoo >= 2"):
        full_registry()


# ------------------------------------------------------------------------------ CLI and configuration


def test_pyscheduler_plugins_lists_an_installed_plugin(
    install: Install, capsys: pytest.CaptureFixture[str]
) -> None:
    install("pyscheduler-plugin-zonequota", {"ZoneQuota": f"{EXAMPLE_PACKAGE}:PLUGIN"})
    assert cli.main(["plugins"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["ZoneQuota"].split(None, 1)[1] == "filter, preFilter, preScore, score"
    assert "NodeResourcesFit" in lines


def _config(plugins: Mapping[str, Any], args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": "py-scheduler", "plugins": dict(plugins)}
    if args is not None:
        profile["pluginConfig"] = [{"name": "ZoneQuota", "args": dict(args)}]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


def _parse(data: Mapping[str, Any]) -> Any:
    reg = full_registry()
    return parse_config(data, reg, lambda name: plugin_extension_points(reg[name]) if name in reg else set())


MULTI_POINT = {"multiPoint": {"enabled": [{"name": "ZoneQuota", "weight": 3}]}}


def test_multipoint_enables_every_extension_point_with_typed_args(install: Install) -> None:
    install("pyscheduler-plugin-zonequota", {"ZoneQuota": f"{EXAMPLE_PACKAGE}:PLUGIN"})
    profile = _parse(_config(MULTI_POINT, {"maxPodsPerZone": 2, "namespaces": ["team-a"]})).profiles[0]
    for point in ("preFilter", "filter", "preScore", "score"):
        assert profile.plugins.at(point)[-1] == "ZoneQuota", point
    assert "ZoneQuota" not in profile.plugins.at("reserve")
    assert profile.plugins.score_weights["ZoneQuota"] == 3
    assert profile.plugin_args["ZoneQuota"] == example.ZoneQuotaArgs(
        max_pods_per_zone=2, namespaces=("team-a",)
    )


def test_a_plugin_enabled_without_plugin_config_gets_default_args(install: Install) -> None:
    install("pyscheduler-plugin-zonequota", {"ZoneQuota": f"{EXAMPLE_PACKAGE}:PLUGIN"})
    profile = _parse(_config({"filter": {"enabled": [{"name": "ZoneQuota"}]}})).profiles[0]
    assert profile.plugins.filter[-1] == "ZoneQuota" and "ZoneQuota" not in profile.plugins.pre_filter
    assert profile.plugin_args["ZoneQuota"] == example.ZoneQuotaArgs()


def test_bad_args_stop_the_config_at_the_field(install: Install) -> None:
    install("pyscheduler-plugin-zonequota", {"ZoneQuota": f"{EXAMPLE_PACKAGE}:PLUGIN"})
    with pytest.raises(ConfigError) as e:
        _parse(_config(MULTI_POINT, {"maxPodsPerZone": 0}))
    assert str(e.value) == "profiles[0].pluginConfig[0].args.maxPodsPerZone: must be at least 1, got 0"


def test_a_plugin_that_is_not_installed_is_an_unknown_plugin(install: Install) -> None:
    with pytest.raises(ConfigError) as e:
        _parse(_config(MULTI_POINT))
    assert str(e.value).startswith(
        'profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin "ZoneQuota"'
    )


# ------------------------------------------------------------------------------ pyscheduler.testing


def test_pyscheduler_testing_imports_nothing_until_used() -> None:
    code = (
        "import sys, pyscheduler.testing as t\n"
        "heavy = [m for m in sys.modules if m.startswith(('pyscheduler.testing.', 'pyscheduler.backend',"
        " 'kubernetes', 'pyscheduler.client'))]\n"
        "assert not heavy, heavy\n"
        "t.make_pod\n"
        "assert 'pyscheduler.testing.builders' in sys.modules\n"
        "assert 'pyscheduler.testing.cluster' not in sys.modules and 'kubernetes' not in sys.modules\n"
        "from pyscheduler.testing import clock\n"  # submodules still import by name
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_pyscheduler_testing_exports() -> None:
    import pyscheduler.testing as t
    from pyscheduler.backend.snapshot import Snapshot
    from pyscheduler.testing.builders import make_pod
    from pyscheduler.testing.clock import FakeClock

    assert (t.Snapshot, t.make_pod, t.FakeClock) == (Snapshot, make_pod, FakeClock)
    for name in t.__all__:
        assert getattr(t, name) is not None
    with pytest.raises(AttributeError):
        t.no_such_helper  # noqa: B018


def test_make_handle_serves_what_a_plugin_reads() -> None:
    from pyscheduler.testing import FakeClock, Snapshot, make_handle, make_node, make_pod

    snapshot = Snapshot.from_nodes([make_node("n1").obj()], [make_pod("p", "ns").node("n1").obj()])
    claim = {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns"}}
    clock = FakeClock(start=5.0)
    handle = make_handle(
        snapshot, objects=[claim], nominated={"n1": [make_pod("q", "ns").obj()]}, clock=clock
    )
    assert [ni.name for ni in handle.snapshot.list()] == ["n1"]
    assert handle.objects.get("PersistentVolumeClaim", "ns", "data") == claim
    assert [pi.pod.name for pi in handle.nominated_pods_for_node("n1")] == ["q"]
    assert handle.nominated_pods_for_node("n2") == []
    clock.advance(2)
    assert handle.now() == 7.0
    assert list(handle.iterate_waiting_pods()) == [] and handle.client is None
    assert list(make_handle().snapshot.list()) == []


def test_plain_snapshot_lists_the_node_infos_given_without_a_table() -> None:
    from pyscheduler.framework.node_rows import snapshot_table
    from pyscheduler.framework.types import ContainerImage, Node
    from pyscheduler.testing import make_node_info, make_pod, plain_snapshot

    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]}}
    b = make_node_info(
        Node(name="b", images=(ContainerImage(("img:1",)),)), make_pod("x").node("b").affinity(anti).obj()
    )
    a = make_node_info(Node(name="a", images=(ContainerImage(("img:1", "img:2")),)))
    snap = plain_snapshot([b, a])
    assert list(snap.list()) == [b, a] and snap.get("a") is a and snap.get("c") is None
    assert list(snap.have_pods_with_affinity_list()) == [b]
    assert list(snap.have_pods_with_required_anti_affinity_list()) == [b]
    assert (snap.num_nodes_with_image("img:1"), snap.num_nodes_with_image("img:2")) == (2, 1)
    assert snapshot_table(snap) is None  # plugins read it node by node


# ------------------------------------------------------------------------------ docs/plugins.md


def _blocks() -> list[tuple[str, str, int]]:
    """(language, body, line number) of every fenced block of the tutorial."""
    out = []
    text = DOC.read_text()
    for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M):
        out.append((m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1))
    return out


def _tagged() -> list[tuple[str, str, int]]:
    """(path, content, line) of blocks whose first line is a ``# examples/...`` comment."""
    out = []
    for _, body, line in _blocks():
        first, _, rest = body.partition("\n")
        m = re.fullmatch(r"# (examples/\S+)", first.strip())
        if m:
            out.append((m.group(1), rest, line))
    return out


def test_every_tagged_code_block_is_the_file_it_names() -> None:
    tagged = _tagged()
    assert tagged, "docs/plugins.md has no tagged code blocks"
    for path, content, line in tagged:
        target = ROOT / path
        assert target.is_file(), f"docs/plugins.md:{line} names {path}, which does not exist"
        assert content == target.read_text(), (
            f"docs/plugins.md:{line}: the block differs from {path}; copy the file into the tutorial again"
        )


def test_the_tutorial_shows_every_file_of_the_example() -> None:
    shown = {path for path, _, _ in _tagged()}
    files = {
        str(p.relative_to(ROOT))
        for p in EXAMPLE.rglob("*")
        if p.suffix in (".py", ".toml")
        and not any(
            part.startswith(".") or part.endswith(".egg-info") for part in p.relative_to(EXAMPLE).parts
        )
        and not {"__pycache__", "build", "dist"} & set(p.relative_to(EXAMPLE).parts)
    }
    assert files - shown == set(), "files of the example the tutorial does not show"


def test_the_tutorial_configurations_load(install: Install) -> None:
    install("pyscheduler-plugin-zonequota", {"ZoneQuota": f"{EXAMPLE_PACKAGE}:PLUGIN"})
    configs = [
        (yaml.safe_load(body), line)
        for lang, body, line in _blocks()
        if lang == "yaml" and "kind: KubeSchedulerConfiguration" in body
    ]
    assert len(configs) >= 2
    for data, line in configs:
        profiles = _parse(data).profiles
        assert any("ZoneQuota" in p.plugins.instantiated for p in profiles), f"docs/plugins.md:{line}"


def test_the_reference_covers_the_api() -> None:
    from pyscheduler.framework.interfaces import Handle as HandleProtocol
    from pyscheduler.testing.builders import NodeBuilder, PodBuilder
    from pyscheduler.testing.clock import FakeClock

    doc = DOC.read_text()
    missing = []
    for cls in (PodBuilder, NodeBuilder, FakeClock):
        for name, _ in inspect.getmembers(cls, callable):
            if not name.startswith("_") and f".{name}(" not in doc:
                missing.append(f"{cls.__name__}.{name}")
    for name in vars(HandleProtocol):
        if not name.startswith("_") and f"`{name}" not in doc and f".{name}" not in doc:
            missing.append(f"Handle.{name}")
    for point in EXTENSION_POINTS:
        if not re.search(rf"^#{{3,4}} {point}\b", doc, re.M | re.I):
            missing.append(f"extension point {point}")
    for helper in ("make_node_info(", "make_cycle_state(", "Snapshot.from_nodes(", "make_handle("):
        if helper not in doc:
            missing.append(helper)
    assert not missing, f"docs/plugins.md's reference does not mention: {', '.join(missing)}"
