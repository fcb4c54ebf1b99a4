"""``pyscheduler dev-cluster up|down|status``: a local control plane that outlives the command.

``up`` starts a detached supervisor process (``python -m pyscheduler.dev.devcluster serve``) that
runs a ``LocalCluster`` in a state directory, creates the requested fake nodes and writes ``ready``;
``up`` returns once that file appears and prints ``export KUBECONFIG=...`` last. ``down`` sends the
supervisor SIGTERM; it stops every control-plane process (they also die with it if it is killed).

While it waits, ``up`` shows what the supervisor is doing, read from its ``progress`` file (``control
plane`` or ``nodes DONE TOTAL``): on a terminal a bar (``creating fake nodes [####....] 1,800/5,000``),
elsewhere (CI, a pipe) one line per finished step.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from pyscheduler.progress import Progress


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
    watcher = _Watcher(root / "progress")
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            watcher.poll()
            if ready.exists():
                watcher.close()
                print(
                    f"dev cluster up: {nodes} fake nodes; logs in {root}; stop with: pyscheduler dev-cluster down",
                    file=sys.stderr,
                )
                print(f"export KUBECONFIG={root / 'cluster' / 'kubeconfig'}")
                return 0
            if proc.poll() is not None:
                watcher.abandon()
                print(
                    f"dev cluster failed to start (exit {proc.returncode}); log:\n{logf.read_text()[-3000:]}",
                    file=sys.stderr,
                )
                return 1
            time.sleep(0.2)
    except BaseException:
        watcher.abandon()
        raise
    watcher.abandon()
    print("dev cluster did not become ready in time", file=sys.stderr)
    return 1


class _Watcher:
    """Renders the supervisor's progress file (see the module docstring) as ``Progress`` steps."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.phase = ""
        self.bar: Progress | None = None

    def poll(self) -> None:
        try:
            words = self.path.read_text().split()
        except FileNotFoundError:
            words = []
        phase = words[0] if words else ""
        if phase and phase != self.phase:
            self.close()
            self.phase = phase
            if phase == "nodes":
                self.bar = Progress(int(words[2]), "creating fake nodes", unit="nodes")
            else:
                self.bar = Progress(None, "starting etcd, kube-apiserver and KWOK")
        if self.bar is None:
            return
        if phase == "nodes" and len(words) == 3:
            self.bar.update(int(words[1]))
        else:
            self.bar.tick()

    def close(self) -> None:
        if self.bar is not None:
            if self.phase == "nodes":
                elapsed = time.monotonic() - self.bar.start
                self.bar.finish(f"created {self.bar.total:,} fake nodes in {elapsed:.1f}s")
            else:
                self.bar.finish(f"control plane started in {time.monotonic() - self.bar.start:.1f}s")
            self.bar = None

    def abandon(self) -> None:
        if self.bar is not None and self.bar.live:
            sys.stderr.write("\n")
        self.bar = None


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
    progress = r / "progress"
    _write(progress, "control-plane")
    cluster.start()
    try:
        if nodes:
            _write(progress, f"nodes 0 {nodes}")
            last = [0.0]

            def created(done: int) -> None:  # from the creating threads; a few writes a second at most
                now = time.monotonic()
                if done == nodes or now - last[0] >= 0.2:
                    last[0] = now
                    _write(progress, f"nodes {done} {nodes}")

            cluster.create_nodes(
                nodes, prefix="kwok-node", zones=["zone-a", "zone-b", "zone-c"], on_progress=created
            )
        (r / "ready").write_text(cluster.server)
        print(f"ready: {cluster.server}", flush=True)
        while not stopping:
            time.sleep(0.2)
    finally:
        cluster.stop()
    return 0


def _write(path: Path, text: str) -> None:
    """Replace the file at once (the reader never sees half a line)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "serve":
        raise SystemExit(serve(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"))
    raise SystemExit("usage: python -m pyscheduler.dev.devcluster serve DIR NODES WITH_CM")
