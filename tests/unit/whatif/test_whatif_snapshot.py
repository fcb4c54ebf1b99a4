"""ClusterSnapshot: kubectl output and saved files in, the same records out; bad input named clearly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pyscheduler.testing import make_node, make_pod
from pyscheduler.whatif.snapshot import ClusterSnapshot, SnapshotError


def kubectl_list(*items: dict[str, Any]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(items)})


def objects() -> list[dict[str, Any]]:
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods=110).json()
    node["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    running = make_pod("web").req(cpu="1").node("n1").phase("Running").json()
    done = make_pod("job-done").node("n1").phase("Succeeded").json()
    pending = make_pod("queued").req(cpu="1").json()
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "a"},
    }
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "a"}}
    return [node, running, done, pending, pvc, deploy]


def test_kubectl_list_output_loads_what_scheduling_reads(tmp_path: Path) -> None:
    f = tmp_path / "cluster.yaml"
    f.write_text(kubectl_list(*objects()))
    snap = ClusterSnapshot.load(f)
    assert snap.node_names() == ["n1"]
    # a finished pod is not part of the cluster's load, as the daemon's watch drops it
    assert sorted(p["metadata"]["name"] for p in snap.pods) == ["queued", "web"]
    assert [o["metadata"]["name"] for o in snap.objects["PersistentVolumeClaim"]] == ["data"]
    assert "managedFields" not in snap.nodes[0]["metadata"]
    assert snap.warnings == ["1 Deployment object(s) ignored: scheduling does not read that kind"]
    assert snap.summary() == "1 nodes, 1 bound pods, 1 pending pods, 1 other objects"


def test_a_directory_of_files_and_multi_document_yaml(tmp_path: Path) -> None:
    node, running, _, pending, pvc, _ = objects()
    (tmp_path / "nodes.yaml").write_text(kubectl_list(node))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([running, pending]))
    (tmp_path / "pvc.json").write_text(__import__("json").dumps(pvc))
    (tmp_path / "notes.txt").write_text("not read")
    snap = ClusterSnapshot.load(tmp_path)
    assert len(snap.nodes) == 1 and len(snap.pods) == 2 and len(snap.objects["PersistentVolumeClaim"]) == 1


@pytest.mark.parametrize("name", ["snap.json", "snap.json.gz"])
def test_save_and_load_give_back_the_same_snapshot(tmp_path: Path, name: str) -> None:
    snap = ClusterSnapshot.from_objects(objects(), "test")
    snap.save(tmp_path / name)
    again = ClusterSnapshot.load(tmp_path / name)
    assert (again.nodes, again.pods, again.objects) == (snap.nodes, snap.pods, snap.objects)
    assert again.source == "test" and again.warnings == snap.warnings
    if name.endswith(".gz"):
        assert (tmp_path / name).read_bytes()[:2] == b"\x1f\x8b"
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("items: [\n  - {a: 1\n", "bad.yaml:2: invalid YAML", id="syntax"),
        pytest.param("metadata: {name: x}\n", "bad.yaml: document 1: object without a kind", id="no-kind"),
        pytest.param(
            "kind: Node\nmetadata: {}\n", "bad.yaml: document 1: Node without metadata.name", id="no-name"
        ),
        pytest.param("- 1\n- 2\n", "bad.yaml: document 1: expected an object, got list", id="not-an-object"),
    ],
)
def test_bad_input_names_the_file_and_what_is_wrong(tmp_path: Path, text: str, expected: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(SnapshotError) as e:
        ClusterSnapshot.load(f)
    assert str(e.value).startswith(str(tmp_path / expected.split(":")[0]))
    assert expected.split(":", 1)[1] in str(e.value)


def test_missing_paths_and_empty_directories(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="no such file or directory"):
        ClusterSnapshot.load(tmp_path / "absent.yaml")
    with pytest.raises(SnapshotError, match=r"no \.yaml, \.yml or \.json files"):
        ClusterSnapshot.load(tmp_path)


def test_a_saved_snapshot_of_another_format_version_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "old.json"
    f.write_text('{"apiVersion": "whatif.pyscheduler.io/v0", "kind": "ClusterSnapshot"}')
    with pytest.raises(SnapshotError, match=r"is not 'whatif\.pyscheduler\.io/v1alpha1'"):
        ClusterSnapshot.load(f)


def test_only_the_snapshot_reads_the_cluster_and_only_by_listing() -> None:
    """whatif never writes to a cluster: the client is imported in one function, which calls ``list``."""
    import ast

    root = Path(__file__).resolve().parents[3] / "pyscheduler" / "whatif"
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyscheduler.client"):
                assert path.name == "snapshot.py", f"{path.name} imports {node.module}"
        if path.name == "snapshot.py":
            calls = {
                n.func.attr
                for n in ast.walk(tree)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "api"
            }
            assert calls <= {"list", "url", "close"}, calls
