"""The image, built from the Dockerfile without a Docker daemon, and run as the Deployment runs it.

``e2e/image/build.sh`` builds the Dockerfile with buildah (base assembled from Debian's archive where no
registry is reachable: see the script); podman then runs the image as manifests/deployment.yaml does: as
the image's user (not root), with a read-only root filesystem and no network. It must print its version,
list the default plugins, refuse to write to its root filesystem, and carry kube-scheduler's port.

Needs buildah, podman, runc and debootstrap (``apt-get install buildah podman runc debootstrap``); without
them the test is skipped and says so. The build takes minutes (the base once, ~4 min; the image ~4 min:
its pip install downloads every dependency).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pyscheduler import KUBERNETES_VERSION, __version__
from pyscheduler.testing.cluster import REPO_ROOT

# "cluster": not the control plane, but minutes of building: it runs with the integration suite
# (make test), not with make unit
pytestmark = [pytest.mark.slow, pytest.mark.cluster, pytest.mark.timeout(1800)]

TAG = "localhost/pyscheduler:test"
TOOLS = ("buildah", "podman", "runc", "debootstrap")


def _cache() -> Path:
    root = os.environ.get("PYSCHEDULER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pyscheduler"
    )
    return Path(root) / "image"


def podman(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    c = _cache()
    return subprocess.run(
        [
            "podman",
            "--root",
            str(c / "storage"),
            "--runroot",
            str(c / "run"),
            "--storage-driver",
            "vfs",
            # runc with cgroupfs: crun refuses this machine's hybrid cgroup hierarchy
            "--runtime",
            "runc",
            "--cgroup-manager",
            "cgroupfs",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_image(*argv: str, entrypoint: str | None = None) -> subprocess.CompletedProcess[str]:
    """As the Deployment runs it: the image's own user, read-only root, nothing but /tmp writable."""
    return podman(
        "run",
        "--rm",
        "--read-only",
        "--network=none",
        "--ulimit=nofile=1024:1024",
        "--ulimit=nproc=1024:1024",
        *([f"--entrypoint={entrypoint}"] if entrypoint else []),
        TAG,
        *argv,
    )


@pytest.fixture(scope="module")
def image() -> str:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (apt-get install buildah podman runc debootstrap)")
    out = subprocess.run(
        ["bash", str(REPO_ROOT / "e2e" / "image" / "build.sh"), TAG],
        capture_output=True,
        text=True,
        timeout=1700,
    )
    assert out.returncode == 0, out.stderr[-5000:]
    tag, seconds = out.stdout.split()[-2:]
    assert tag == TAG
    print(f"\nimage: {TAG} built in {seconds}s")
    return TAG


def test_the_image_runs_as_the_deployment_runs_it(image: str, capsys: pytest.CaptureFixture[str]) -> None:
    inspect = podman("image", "inspect", image)
    assert inspect.returncode == 0, inspect.stderr
    (meta,) = json.loads(inspect.stdout)
    config = meta["Config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["pyscheduler"] and config["Cmd"] == ["run"]
    assert "10259/tcp" in config.get("ExposedPorts", {})
    with capsys.disabled():
        print(f"\nimage: {image} is {meta['Size'] / 1e6:.0f} MB")

    version = run_image("--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"pyscheduler {__version__} (kube-scheduler {KUBERNETES_VERSION})"

    plugins = run_image("plugins")
    assert plugins.returncode == 0, plugins.stderr
    for name in ("NodeResourcesFit", "DefaultPreemption", "InterPodAffinity", "DefaultBinder"):
        assert name in plugins.stdout

    # not root, and the root filesystem refuses writes (the pod spec sets readOnlyRootFilesystem)
    probe = run_image(
        "-c",
        'id -u; touch "$(dirname "$(command -v pyscheduler)")/x" 2>&1 || echo refused; '
        "python -c 'import pyscheduler; print(pyscheduler.__file__)'",
        entrypoint="sh",
    )
    assert probe.returncode == 0, probe.stderr
    uid, *rest = probe.stdout.split("\n")
    assert uid == "65532"
    assert "Read-only file system" in probe.stdout and "refused" in rest
    # the package is the installed wheel, not a source tree
    assert rest[-2].endswith("site-packages/pyscheduler/__init__.py"), probe.stdout
