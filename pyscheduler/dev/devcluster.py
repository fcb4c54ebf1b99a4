"""``pyscheduler dev-cluster up|down|status``: a local control plane that outlives the command.

``up`` starts a detached supervisor process (``python -m pyscheduler.dev.devcluster serve``) that
runs a ``LocalCluster`` in a state directory, creates the requested fake nodes and writes ``ready``;
``up`` returns once that file appears and prints ``export KUBECONFIG=...`` last. ``down`` sends the
supervisor SIGTERM; it stops every control-plane process (they also die with it if it is killed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _paths(d: str) -> tuple[Path, Path, Path, Path]:
    root = Path(d).resolve()
    return root, root / "supervisor.pid", root / "ready", root / "supervisor.log"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def up(d: str, nodes: int = 3, with_controller_manager: bool = False, timeout: float = 900.0) -> int:
    root, pidfile, ready, logf = _paths(d)
    if pidfile.exists() and _alive(int(pidfile.read_text())) and ready.exists():
        print(f"dev cluster already running (pid {pidfile.read_text().strip()})", file=sys.stderr)
        print(f"export KUBECONFIG={root / 'cluster' / 'kubeconfig'}")
        return 0
    root.mkdir(parents=True, exist_ok=True)
    ready.unlink(missing_ok=True)
    # Build the binaries in the foreground so the user sees progress of a cold build.
    from pyscheduler.testing.cluster import binaries_dir

    bins = binaries_dir()
    argv = [
        sys.executable,
        "-m",
        "pyscheduler.dev.devcluster",
        "serve",
        str(root),
        str(nodes),
        "1" if with_controller_manager else "0",
    ]
    with open(logf, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "PYSCHEDULER_CONTROLPLANE_BIN": str(bins)},
        )
    pidfile.write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready.exists():
            print(
                f"dev cluster up: {nodes} fake nodes; logs in {root}; stop with: pyscheduler dev-cluster down",
                file=sys.stderr,
            )
            print(f"export KUBECONFIG={root / 'cluster' / 'kubeconfig'}")
            return 0
        if proc.poll() is not None:
            print(
                f"dev cluster failed to start (exit {proc.returncode}); log:\n{logf.read_text()[-3000:]}",
                file=sys.stderr,
            )
            return 1
        time.sleep(0.2)
    print("dev cluster did not become ready in time", file=sys.stderr)
    return 1


def down(d: str, timeout: float = 30.0) -> int:
    _, pidfile, ready, _ = _paths(d)
    if not pidfile.exists():
        print("no dev cluster running", file=sys.stderr)
        return 0
    pid = int(pidfile.read_text())
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
    pidfile.unlink(missing_ok=True)
    ready.unlink(missing_ok=True)
    print("dev cluster stopped", file=sys.stderr)
    return 0


def status(d: str) -> int:
    root, pidfile, ready, _ = _paths(d)
    if pidfile.exists() and _alive(int(pidfile.read_text())) and ready.exists():
        print(
            f"running (pid {pidfile.read_text().strip()}); export KUBECONFIG={root / 'cluster' / 'kubeconfig'}"
        )
        return 0
    print("not running")
    return 1


def serve(root: str, nodes: int, with_cm: bool) -> int:
    from pyscheduler.testing.cluster import LocalCluster

    r = Path(root)
    cluster = LocalCluster(
        with_kwok=True, with_controller_manager=with_cm, state_dir=r / "cluster", keep_state=True, name="dev"
    )
    stopping = False

    def on_term(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    with contextlib.suppress(FileNotFoundError):
        import shutil

        shutil.rmtree(r / "cluster" / "etcd")
    cluster.start()
    try:
        if nodes:
            cluster.create_nodes(nodes, prefix="kwok-node", zones=["zone-a", "zone-b", "zone-c"])
        (r / "ready").write_text(cluster.server)
        print(f"ready: {cluster.server}", flush=True)
        while not stopping:
            time.sleep(0.2)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "serve":
        raise SystemExit(serve(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"))
    raise SystemExit("usage: python -m pyscheduler.dev.devcluster serve DIR NODES WITH_CM")
