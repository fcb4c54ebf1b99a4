"""Where the API server is and how to authenticate to it: a ``kubernetes.client.Configuration``.

Design
------
``load_configuration`` follows kube-scheduler's (client-go's) order:

1. an explicit kubeconfig path (``--kubeconfig``), with an optional context;
2. in-cluster: ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT`` from the environment, the
   ServiceAccount token and CA from ``in_cluster_dir`` (default
   ``/var/run/secrets/kubernetes.io/serviceaccount``). The kubernetes package's
   ``InClusterConfigLoader`` installs a ``refresh_api_key_hook`` that re-reads the token file once a
   minute, so a projected (rotating) token keeps working; ``Api`` reads the header through that hook;
3. ``$KUBECONFIG`` (``:``-separated list, merged) or ``~/.kube/config``.

Only the configuration is built here; ``api.Api`` builds the connection pool from it. When nothing
can be found the error names every place that was tried.
"""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader

DEFAULT_IN_CLUSTER_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"


class ConfigurationError(RuntimeError):
    """No usable API server configuration: the message says what was tried and what is missing."""


def load_configuration(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    in_cluster_dir: str | None = None,
) -> k8s_client.Configuration:
    """A Configuration for the API server (see the module docstring for the order of sources)."""
    if kubeconfig:
        return _from_kubeconfig(kubeconfig, context, explicit=True)

    tried: list[str] = []
    host = os.environ.get(SERVICE_HOST_ENV, "")
    port = os.environ.get(SERVICE_PORT_ENV, "")
    if host and port and context is None:
        return _in_cluster(in_cluster_dir or DEFAULT_IN_CLUSTER_DIR)
    if host or port:
        missing = SERVICE_PORT_ENV if host else SERVICE_HOST_ENV
        tried.append(f"in-cluster: {missing} is not set")
    elif context is not None:
        tried.append("in-cluster: skipped because a context was given")
    else:
        tried.append(f"in-cluster: {SERVICE_HOST_ENV} and {SERVICE_PORT_ENV} are not set")

    env = os.environ.get("KUBECONFIG", "")
    if env:
        paths = [p for p in env.split(os.pathsep) if p]
        if any(Path(p).expanduser().is_file() for p in paths):
            return _from_kubeconfig(env, context, explicit=False)
        tried.append(f"$KUBECONFIG={env}: no such file")
    else:
        default = Path("~/.kube/config").expanduser()
        if default.is_file():
            return _from_kubeconfig(str(default), context, explicit=False)
        tried.append(f"{default}: no such file ($KUBECONFIG is not set)")
    raise ConfigurationError(
        "no Kubernetes API configuration found; pass --kubeconfig, or run in a pod. Tried: "
        + "; ".join(tried)
    )


def context_namespace(kubeconfig: str | None = None, context: str | None = None) -> str | None:
    """The namespace the kubeconfig's context names (kubectl's default for ``-n``), or None: no
    kubeconfig, no such context, or the context names none."""
    path = kubeconfig or os.environ.get("KUBECONFIG", "") or str(Path("~/.kube/config").expanduser())
    files = [p for p in path.split(os.pathsep) if p and Path(p).expanduser().is_file()]
    if not files:
        return None
    try:
        contexts, active = k8s_config.list_kube_config_contexts(config_file=files[0])  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, ValueError):
        return None
    chosen = active if context is None else next((c for c in contexts if c.get("name") == context), None)
    ns = ((chosen or {}).get("context") or {}).get("namespace")
    return str(ns) if ns else None


def _from_kubeconfig(path: str, context: str | None, *, explicit: bool) -> k8s_client.Configuration:
    paths = [p for p in path.split(os.pathsep) if p]
    if explicit:
        missing = [p for p in paths if not Path(p).expanduser().is_file()]
        if missing:
            raise ConfigurationError(f"kubeconfig {', '.join(missing)}: no such file")
    cfg = k8s_client.Configuration()
    try:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
    except ConfigException as e:
        where = f"kubeconfig {path}" + (f" (context {context!r})" if context else "")
        raise ConfigurationError(f"{where}: {e}") from e
    except (OSError, ValueError) as e:
        raise ConfigurationError(f"kubeconfig {path}: {e}") from e
    return cfg


def _in_cluster(directory: str) -> k8s_client.Configuration:
    d = Path(directory)
    token, ca = d / "token", d / "ca.crt"
    missing = [str(p) for p in (token, ca) if not p.is_file()]
    if missing:
        raise ConfigurationError(
            f"in-cluster configuration ({SERVICE_HOST_ENV} is set) but {', '.join(missing)} "
            "not found; is a ServiceAccount token mounted?"
        )
    cfg = k8s_client.Configuration()
    loader = InClusterConfigLoader(  # type: ignore[no-untyped-call]
        token_filename=str(token), cert_filename=str(ca), try_refresh_token=True
    )
    try:
        loader.load_and_set(cfg)  # type: ignore[no-untyped-call]
    except ConfigException as e:
        raise ConfigurationError(f"in-cluster configuration from {directory}: {e}") from e
    return cfg
