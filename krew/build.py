"""Build the kubectl-pyscheduler krew archive and its manifest.

    python krew/build.py --out dist/krew [--uri-base URL] [--wheel FILE]

writes ``kubectl-pyscheduler-v<version>.tar.gz`` (the launcher ``kubectl-pyscheduler`` and pyscheduler's
wheel, built with ``python -m build`` unless ``--wheel`` names one) and ``pyscheduler.yaml``: the template
``krew/pyscheduler.yaml`` with the version, the download URI (``--uri-base`` + the archive's name; by
default the project's GitHub release of that version) and the archive's sha256. The archive is
reproducible for a given wheel: fixed member order, owner and times.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RELEASES = "https://github.com/pyscheduler/pyscheduler/releases/download"


def version() -> str:
    for line in (REPO / "setup.cfg").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip()
    raise SystemExit("krew/build.py: no version in setup.cfg")


def build_wheel(outdir: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(outdir), str(REPO)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    (wheel,) = outdir.glob("pyscheduler-*.whl")
    return wheel


def _member(name: str, data: bytes, mode: int) -> tuple[tarfile.TarInfo, io.BytesIO]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info, io.BytesIO(data)


def build_archive(wheel: Path, out: Path, tag: str) -> Path:
    launcher = (HERE / "kubectl-pyscheduler").read_text().replace("@WHEEL@", wheel.name)
    license_text = f"pyscheduler {tag}: Apache License 2.0 (https://www.apache.org/licenses/LICENSE-2.0)\n"
    members = [
        _member("kubectl-pyscheduler", launcher.encode(), 0o755),
        _member(wheel.name, wheel.read_bytes(), 0o644),
        _member("LICENSE", license_text.encode(), 0o644),
    ]
    path = out / f"kubectl-pyscheduler-{tag}.tar.gz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, data)
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw.getvalue())
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python krew/build.py",
        description="Build the kubectl-pyscheduler krew archive and its manifest.",
    )
    p.add_argument("--out", type=Path, required=True, help="where to write the archive and the manifest")
    p.add_argument("--wheel", type=Path, help="pyscheduler's wheel (default: build one)")
    p.add_argument(
        "--uri-base",
        default="",
        help=f"where the archive will be downloaded from (default {RELEASES}/v<version>)",
    )
    args = p.parse_args(argv)
    tag = f"v{version()}"
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel or build_wheel(Path(tmp))
        archive = build_archive(wheel, args.out, tag)
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    uri = f"{(args.uri_base or f'{RELEASES}/{tag}').rstrip('/')}/{archive.name}"
    manifest = (HERE / "pyscheduler.yaml").read_text()
    manifest = manifest.replace("{{version}}", tag).replace("{{uri}}", uri).replace("{{sha256}}", sha)
    (args.out / "pyscheduler.yaml").write_text(manifest)
    print(f"{archive}\n{args.out / 'pyscheduler.yaml'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
