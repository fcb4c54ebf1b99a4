"""``pyscheduler new-plugin NAME --points filter,score``: a plugin package that installs and tests green.

Design
------
``render`` returns the files of a new package as {relative path: text}; ``write`` puts them under a
directory that must not exist yet (nothing is overwritten). The package is the tutorial's shape
(docs/plugins.md): a pyproject with the ``pyscheduler.plugins`` entry point, the plugin class with the
chosen extension points and their exact signatures, a frozen args dataclass with ``validate``, a table
test that runs the whole default profile plus the plugin in process (``pyscheduler.testing.schedule``),
a sample KubeSchedulerConfiguration the test loads, and a README.

The plugin does something small and real, so that its tests can fail: with ``requiredLabel`` set, Filter
rejects nodes without that label and Score prefers nodes with it. Every other chosen point is a
pass-through with its signature and a comment saying what to return.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["POINTS", "ScaffoldError", "render", "write"]

# Extension points a new plugin may start with (camelCase, as in profiles[].plugins). queueSort (one per
# profile), postFilter and bind replace kube's own plugins and are left to the reference docs.
POINTS = (
    "preEnqueue",
    "preFilter",
    "filter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "postBind",
)
_NAME = re.compile(r"^[A-Z][A-Za-z0-9]{1,62}$")


class ScaffoldError(ValueError):
    """Bad input to new-plugin; the message says what to change."""


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def parse_points(text: str | Iterable[str]) -> tuple[str, ...]:
    items = text.split(",") if isinstance(text, str) else list(text)
    by_lower = {p.lower(): p for p in POINTS}
    out: list[str] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        point = by_lower.get(item.replace("-", "").replace("_", "").lower())
        if point is None:
            raise ScaffoldError(f"unknown extension point {item!r}; choose from {', '.join(POINTS)}")
        if point not in out:
            out.append(point)
    if not out:
        raise ScaffoldError(f"--points needs at least one of {', '.join(POINTS)}")
    return tuple(p for p in POINTS if p in out)


def _check_name(name: str) -> None:
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise ScaffoldError(
            f"plugin name {name!r} must be CamelCase letters and digits starting with a capital "
            "(2 to 63 characters), like NodeLabelGate"
        )


_METHODS = {
    "preEnqueue": '''
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Before the pod enters the active queue: None lets it in; UNSCHEDULABLE_AND_UNRESOLVABLE keeps it
        out until a registered event lets it in again."""
        return None
''',
    "preFilter": '''
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Once per cycle before Filter: compute what Filter reads (keep it in ``state``); a
        PreFilterResult may narrow the nodes; Status.skip() skips this plugin's Filter."""
        return None, None

    def pre_filter_extensions(self) -> None:
        return None
''',
    "filter": '''
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Can the pod run on this node? None (success) or Status.unschedulable(reason); the reason is
        counted into the FailedScheduling message ("3 node(s) lacked label ...")."""
        label = self.args.required_label
        if label and label not in _labels(node_info):
            return Status.unschedulable(f"node(s) lacked label {label}", plugin=NAME)
        return None
''',
    "preScore": '''
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Once per cycle before Score, with the feasible nodes."""
        return None
''',
    "score": '''
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        """0..100 for this node (MAX_NODE_SCORE is the best); the profile multiplies it by the weight."""
        label = self.args.required_label
        return (MAX_NODE_SCORE if label and label in _labels(node_info) else 0), None

    def score_extensions(self) -> None:
        return None
''',
    "reserve": '''
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """The pod is assumed on ``node_name``: claim what your plugin accounts for. A failure unreserves."""
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Undo ``reserve`` (the pod will not be bound there)."""
        return None
''',
    "permit": '''
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Success, a rejection, or Status.wait(...) with a timeout in seconds (the pod then waits until a
        plugin allows it through the Handle's waiting pods, or the timeout rejects it)."""
        return None, 0.0
''',
    "preBind": '''
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Before binding, off the scheduling thread (provision or attach what the pod needs)."""
        return None
''',
    "postBind": '''
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """After a successful bind (informational)."""
        return None
''',
}


def render(name: str, points: Iterable[str]) -> dict[str, str]:
    """The new package's files, by path relative to its directory."""
    _check_name(name)
    pts = parse_points(list(points))
    snake = _snake(name)
    module = f"pyscheduler_plugin_{snake}"
    dist = f"pyscheduler-plugin-{snake.replace('_', '-')}"
    label = f"example.com/{snake.replace('_', '-')}"
    files: dict[str, str] = {}

    files["pyproject.toml"] = f"""[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "{name}: a pyscheduler plugin"
requires-python = ">=3.11"
dependencies = ["pyscheduler>=0.1"]

[project.optional-dependencies]
test = ["pytest>=8", "pyyaml>=6"]

# The line that makes it a plugin: pyscheduler loads every entry point of this group at start.
[project.entry-points."pyscheduler.plugins"]
{name} = "{module}:PLUGIN"

[tool.setuptools]
packages = ["{module}"]

[tool.pytest.ini_options]
testpaths = ["tests"]

[tool.ruff]
line-length = 110
target-version = "py311"

[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP", "SIM", "RUF"]
isort.known-first-party = ["{module}"]
isort.known-third-party = ["pyscheduler"]
"""

    files[
        f"{module}/args.py"
    ] = f'''"""{name}'s arguments: what users write under ``pluginConfig[].args`` (camelCase keys)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyscheduler.framework.plugin_args import ArgsError

_LABEL = re.compile(r"^([a-z0-9.-]+/)?[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


@dataclass(frozen=True)
class {name}Args:
    # Nodes without this label are filtered out / scored 0; empty turns the plugin into a no-op.
    required_label: str = ""

    def validate(self, path: str) -> None:
        if self.required_label and not _LABEL.match(self.required_label):
            raise ArgsError(f"{{path}}.requiredLabel", f"not a label key: {{self.required_label!r}}")
'''

    imports = ["from pyscheduler.framework.cycle_state import CycleState"]
    iface = []
    if "preFilter" in pts:
        iface.append("PreFilterResult")
    if "score" in pts:
        iface.append("MAX_NODE_SCORE")
    iface.append("Handle")
    # isort's order: constants, then classes
    iface.sort(key=lambda n: (not n.isupper(), n))
    imports.append(f"from pyscheduler.framework.interfaces import {', '.join(iface)}")
    imports.append("from pyscheduler.framework.status import Status")
    imports.append("from pyscheduler.framework.types import NodeInfo, Pod")
    uses_seq = "preFilter" in pts or "preScore" in pts
    body = "".join(_METHODS[p] for p in pts)
    files[f"{module}/plugin.py"] = f'''"""{name}: {", ".join(pts)}."""

from __future__ import annotations

{"from collections.abc import Sequence" + chr(10) + chr(10) if uses_seq else ""}{chr(10).join(imports)}

from .args import {name}Args

NAME = "{name}"


def _labels(node_info: NodeInfo) -> dict[str, str]:
    return dict(node_info.node.labels) if node_info.node is not None else {{}}


class {name}:
    name = NAME

    def __init__(self, args: {name}Args, handle: Handle) -> None:
        self.args = args
        self.handle = handle
{body}'''

    files[
        f"{module}/__init__.py"
    ] = f'''"""{dist}: the {name} scheduler plugin. Installing it registers ``PLUGIN`` under the
``pyscheduler.plugins`` entry-point group (pyproject.toml); a profile enables it by name."""

from __future__ import annotations

from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec

from .args import {name}Args
from .plugin import NAME, {name}

__all__ = ["NAME", "PLUGIN", "{name}", "{name}Args", "new"]


def new(args: {name}Args, handle: Handle) -> {name}:
    """The factory: called once per profile that enables {name}, with the decoded args."""
    return {name}(args, handle)


PLUGIN = PluginSpec(
    NAME,
    new,
    {name}Args,
    "{name}: {", ".join(pts)}",
)
'''

    weight = "\n        weight: 10" if "score" in pts else ""
    files["scheduler.yaml"] = f"""# pyscheduler run --config scheduler.yaml
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: py-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: {name}{weight}
  pluginConfig:
  - name: {name}
    args:
      requiredLabel: {label}
"""

    cases = []
    if "filter" in pts:
        cases.append(
            """    # Filter: only the labelled node is feasible; with none labelled the pod stays pending.
    ("only-labelled-node-fits", ["other", "labelled"], "labelled", None),
    ("no-labelled-node", ["a", "b"], None, "2 node(s) lacked label " + LABEL),"""
        )
    if "score" in pts:
        cases.append(
            """    # Score (weight 10): the labelled node wins over an equal unlabelled one.
    ("labelled-node-preferred", ["plain", "labelled"], "labelled", None),"""
        )
    if not cases:
        cases.append(
            """    # Your points pass everything through: the pod is scheduled as kube's profile alone would.
    ("scheduled", ["only"], "only", None),"""
        )
    files[
        "tests/test_plugin.py"
    ] = f'''"""{name}: a table of whole scheduling decisions, made in process by the real default profile plus
{name} (pyscheduler.testing.schedule: no cluster), with the sample scheduler.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.plugins.registry import full_registry
from pyscheduler.testing import make_node, make_pod, schedule

from {module} import PLUGIN, {name}Args

CONFIG = Path(__file__).resolve().parents[1] / "scheduler.yaml"
LABEL = yaml.safe_load(CONFIG.read_text())["profiles"][0]["pluginConfig"][0]["args"]["requiredLabel"]

# (case, nodes (a node named "labelled" carries LABEL), expected node or None, expected message part)
CASES = [
{chr(10).join(cases)}
]


@pytest.mark.parametrize(("case", "nodes", "want_node", "want_message"), CASES, ids=[c[0] for c in CASES])
def test_{snake}(case: str, nodes: list[str], want_node: str | None, want_message: str | None) -> None:
    built = []
    for n in nodes:
        node = make_node(n).capacity(cpu="4", memory="8Gi", pods=110)
        built.append(node.label(LABEL, "true") if n == "labelled" else node)
    registry = {{**full_registry(), PLUGIN.name: PLUGIN}}  # works before the package is installed too
    result = schedule(built, [make_pod("p").req(cpu="1")], config=CONFIG, registry=registry)["default/p"]
    assert result.node == want_node, result.message
    if want_message is not None:
        assert result.message is not None and want_message in result.message


def test_args_validate() -> None:
    {name}Args(required_label=LABEL).validate("args")
    with pytest.raises(ArgsError, match="requiredLabel"):
        {name}Args(required_label="not a label").validate("args")
'''

    files["README.md"] = f"""# {dist}

{name}, a pyscheduler plugin ({", ".join(pts)}), made with
`pyscheduler new-plugin {name} --points {",".join(pts)}`.

In the environment pyscheduler runs from (activated):

    pip install -e '.[test]'
    pytest -q                              # the table test runs the whole profile in process
    pyscheduler plugins | grep {name}      # found through its entry point

On a local cluster (`scheduler.yaml` enables the plugin for pods with `schedulerName: py-scheduler`):

    pyscheduler dev-cluster up --nodes 4 --with-controller-manager
    export KUBECONFIG=$PWD/.dev-cluster/cluster/kubeconfig
    pyscheduler run --config scheduler.yaml --no-leader-elect &
    kubectl label node kwok-node-0 {label}=yes     # the node Filter lets through
    kubectl run demo --image=demo --overrides='{{"spec": {{"schedulerName": "py-scheduler"}}}}'
    pyscheduler explain default/demo --config scheduler.yaml   # per node: who rejected it, the scores
    pyscheduler dev-cluster down

`pyscheduler run --reload --config scheduler.yaml` restarts the scheduler when a `.py` file of the plugin
changes (needs `pip install watchfiles`, or pyscheduler's `dev` extra).

Edit `{module}/plugin.py` (the methods of your extension points) and `args.py` (what users may set under
`pluginConfig[].args`), then add rows to `CASES` in `tests/test_plugin.py`.
"""
    return files


def write(name: str, points: Iterable[str], dest: Path) -> list[Path]:
    """Write the package into ``dest`` (which must not exist); the paths written."""
    files = render(name, points)
    if dest.exists():
        raise ScaffoldError(f"{dest} already exists; choose another --dir or remove it")
    written = []
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
