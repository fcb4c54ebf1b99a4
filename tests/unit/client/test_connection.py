"""load_configuration: kubeconfig, in-cluster (with token rotation), $KUBECONFIG, and clear errors."""

from __future__ import annotations

import datetime
import json
import types
from pathlib import Path
from typing import Any

import pytest
from kubernetes.config import incluster_config

from pyscheduler.client.api import Api
from pyscheduler.client.connection import ConfigurationError, load_configuration


def write_kubeconfig(path: Path, server: str = "https://10.0.0.1:6443", token: str = "tok") -> Path:
    ca = path.parent / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c1", "cluster": {"server": server, "certificate-authority": str(ca)}},
            {"name": "c2", "cluster": {"server": "https://other:6443", "insecure-skip-tls-verify": True}},
        ],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [
            {"name": "one", "context": {"cluster": "c1", "user": "u"}},
            {"name": "two", "context": {"cluster": "c2", "user": "u"}},
        ],
        "current-context": "one",
    }
    path.write_text(json.dumps(cfg))
    return path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBECONFIG"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_explicit_kubeconfig_and_context(clean_env: Path) -> None:
    kc = write_kubeconfig(clean_env / "kc")
    cfg = load_configuration(str(kc))
    assert cfg.host == "https://10.0.0.1:6443"
    assert cfg.api_key["BearerToken"] == "Bearer tok"
    assert cfg.ssl_ca_cert == str(clean_env / "ca.crt")
    other = load_configuration(str(kc), "two")
    assert other.host == "https://other:6443" and other.verify_ssl is False


def test_explicit_kubeconfig_errors_name_the_problem(clean_env: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such file"):
        load_configuration(str(clean_env / "missing"))
    kc = write_kubeconfig(clean_env / "kc")
    with pytest.raises(ConfigurationError, match="three"):
        load_configuration(str(kc), "three")


def test_kubeconfig_env_and_home(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kc = write_kubeconfig(clean_env / "env-kc", server="https://from-env:6443")
    monkeypatch.setenv("KUBECONFIG", str(kc))
    assert load_configuration().host == "https://from-env:6443"
    monkeypatch.delenv("KUBECONFIG")
    home = clean_env / "home" / ".kube"
    home.mkdir(parents=True)
    write_kubeconfig(home / "config", server="https://from-home:6443")
    assert load_configuration().host == "https://from-home:6443"


def test_nothing_found_says_what_was_tried(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError) as ei:
        load_configuration()
    msg = str(ei.value)
    assert "KUBERNETES_SERVICE_HOST" in msg and ".kube/config" in msg and "--kubeconfig" in msg
    monkeypatch.setenv("KUBECONFIG", str(clean_env / "nope"))
    with pytest.raises(ConfigurationError, match=r"\$KUBECONFIG=.*nope: no such file"):
        load_configuration()


def in_cluster_dir(tmp: Path, token: str = "tok-1") -> Path:
    d = tmp / "sa"
    d.mkdir(exist_ok=True)
    (d / "token").write_text(token)
    (d / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    return d


def test_in_cluster(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    d = in_cluster_dir(clean_env)
    cfg = load_configuration(in_cluster_dir=str(d))
    assert cfg.host == "https://10.96.0.1:443" and cfg.ssl_ca_cert == str(d / "ca.crt")
    # an explicit kubeconfig wins over in-cluster
    kc = write_kubeconfig(clean_env / "kc")
    assert load_configuration(str(kc)).host == "https://10.0.0.1:6443"


def test_in_cluster_missing_token_is_named(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    d = in_cluster_dir(clean_env)
    (d / "token").unlink()
    with pytest.raises(ConfigurationError, match=r"sa/token"):
        load_configuration(in_cluster_dir=str(d))


def test_in_cluster_token_rotation_is_picked_up(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    d = in_cluster_dir(clean_env, "tok-1")
    cfg = load_configuration(in_cluster_dir=str(d))
    seen: list[str] = []

    class Pool:
        def request(self, method: str, url: str, **kw: Any) -> Any:
            seen.append(kw["headers"]["Authorization"])
            return types.SimpleNamespace(status=200, data=b"{}", headers={}, reason="OK")

    api = Api(cfg, pool=Pool(), auth_refresh_seconds=0)
    api.request("GET", "/version")
    (d / "token").write_text("tok-2")  # the kubelet rotated the projected token
    real = datetime.datetime

    class Later(real):  # type: ignore[misc, valid-type]
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return real.now(tz) + datetime.timedelta(minutes=2)

    monkeypatch.setattr(
        incluster_config, "datetime", types.SimpleNamespace(datetime=Later, timedelta=datetime.timedelta)
    )
    api.request("GET", "/version")
    assert [s.lower() for s in seen] == ["bearer tok-1", "bearer tok-2"]
