"""The ``pyscheduler`` command.

    pyscheduler run [--config FILE] [--kubeconfig FILE]   schedule pods (in a pod: in-cluster config)
    pyscheduler plugins                                    list registered plugins and their extension points
    pyscheduler explain NS/POD [--config FILE]             why is this pod pending / on that node? (read-only)

``run`` and ``explain`` find the KubeSchedulerConfiguration the same way: ``--config FILE``, else the
file named by ``$PYSCHEDULER_CONFIG``, else the built-in default profile.
    pyscheduler dev-cluster up [--nodes N] [--with-controller-manager] | down | status
    pyscheduler demo [--nodes N]                           local cluster + scheduler + a demo workload
    pyscheduler snapshot --from-cluster -o FILE            save a cluster snapshot (list only, read-only)
    pyscheduler simulate --snapshot S [--add W.yaml ...]   what-if scheduling in process (docs/simulate.md)
    pyscheduler capacity --snapshot S POD.yaml             how many more copies of a pod fit, and why not more

A configuration error stops ``run`` before it touches the cluster, with the field's path in the message
and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

DEFAULT_PORT = 10259


def _registry() -> Any:
    from pyscheduler.plugins.registry import RegistryError, full_registry

    try:
        return full_registry()
    except RegistryError as e:
        print(f"pyscheduler: plugin registry: {e}", file=sys.stderr)
        raise SystemExit(2) from e


def _extension_points(registry: Any) -> Any:
    from pyscheduler.plugins.registry import plugin_extension_points

    def eps(name: str) -> set[str]:
        spec = registry.get(name)
        return plugin_extension_points(spec) if spec else set()

    return eps


CONFIG_ENV = "PYSCHEDULER_CONFIG"
CONFIG_HELP = (
    f"KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1); default: the file ${CONFIG_ENV} "
    "names, else the built-in default profile"
)


def config_path(arg: str | None) -> tuple[str | None, str]:
    """The configuration file ``run`` and ``explain`` use, and where it came from: ``--config``, else
    ``$PYSCHEDULER_CONFIG`` (when set and not empty), else (None, "") for the built-in default."""
    if arg:
        return arg, "--config"
    env = os.environ.get(CONFIG_ENV, "")
    if env:
        return env, f"${CONFIG_ENV}"
    return None, ""


def _duration(text: str) -> float:
    """``100ms``, ``0.5s``, ``0``: seconds, for duration flags (Go's units, as kube's flags take)."""
    t = text.strip()
    try:
        if t.endswith("ms"):
            v = float(t[:-2]) / 1000
        elif t.endswith("s"):
            v = float(t[:-1])
        elif float(t) == 0:
            v = 0.0
        else:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 100ms, 0.5s)") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration cannot be negative")
    return v


@contextlib.contextmanager
def _startup(what: str) -> Iterator[None]:
    """A start-up step: any failure is one line on stderr and exit code 1, never a traceback."""
    try:
        yield
    except Exception as e:  # every start-up failure ends the same way
        detail = " ".join(str(e).split()) or type(e).__name__
        print(f"pyscheduler: {what}: {detail}", file=sys.stderr)
        raise SystemExit(1) from None


def load_config_or_exit(path: str | None, registry: Any) -> Any:
    from pyscheduler.config.load import load_config
    from pyscheduler.framework.plugin_args import ArgsError

    try:
        return load_config(path, registry, _extension_points(registry))
    except (ArgsError, ValueError, OSError, RecursionError) as e:
        detail = " ".join(str(e).split())
        print(f"pyscheduler: invalid configuration{f' in {path}' if path else ''}: {detail}", file=sys.stderr)
        raise SystemExit(2) from e


def add_feature_gates_flag(p: argparse.ArgumentParser, what: str = "the start") -> None:
    """``--feature-gates`` as ``run`` takes it (``explain``, ``simulate`` and ``capacity`` take the same, so
    that they run the plugins and the pod group cycle the daemon runs)."""
    p.add_argument(
        "--feature-gates",
        default="",
        metavar="NAME=BOOL,...",
        help="kube-scheduler's feature gates, e.g. GenericWorkload=true,GangScheduling=true (kube 1.36 "
        f"defaults otherwise; an unknown or locked gate stops {what}, see docs/feature-gates.md)",
    )


def feature_gates_or_exit(text: str) -> Any:
    """Validate ``--feature-gates`` and make it the process's gates; a bad value exits 2, naming it."""
    from pyscheduler.config import feature_gates

    try:
        gates = feature_gates.parse(text or "")
    except feature_gates.FeatureGateError as e:
        print(f"pyscheduler: invalid --feature-gates {text!r}: {e}", file=sys.stderr)
        raise SystemExit(2) from e
    feature_gates.set_current(gates)
    return gates


# ----------------------------------------------------------------------------------------- run


def cmd_run(args: argparse.Namespace) -> int:
    from pyscheduler.logs import setup_logging

    setup_logging(args.log_format, args.log_level)
    import structlog

    log = structlog.get_logger("pyscheduler")
    gates = feature_gates_or_exit(args.feature_gates)
    if gates.explicit:
        log.info("feature gates", feature_gates=gates.describe())
    from pyscheduler import heap_profile  # opt-in (PYSCHEDULER_TRACEMALLOC), off in normal runs

    with _startup("cannot start the heap profile"):
        heap_profile.from_env()
    registry = _registry()
    config = load_config_or_exit(config_path(args.config)[0], registry)
    for warning in config.warnings:
        field, _, detail = warning.partition(": ")
        log.warning("configuration field not acted on", field=field, detail=detail)

    from pyscheduler.client.api import Api
    from pyscheduler.client.connection import load_configuration

    kubeconfig = args.kubeconfig or (config.client_connection.kubeconfig or None)
    with _startup("cannot load the kubeconfig" + (f" {kubeconfig}" if kubeconfig else "")):
        conf = load_configuration(kubeconfig, in_cluster_dir=args.in_cluster_dir)
    with _startup("cannot create the API client"):
        api = Api(
            conf,
            qps=config.client_connection.qps,
            burst=config.client_connection.burst,
            http_worker=args.http_worker,
        )
    if api.http_worker_pid is not None:
        log.info("sending API writes from a worker process", pid=api.http_worker_pid)

    from pyscheduler.app import build_app

    elector: Any = None
    leader = threading.Event()
    le = config.leader_election
    leader_elect = le.leader_elect if args.leader_elect is None else args.leader_elect

    def can_bind() -> bool:
        # Leader election on: bind only while the lease is ours and freshly renewed.
        return (not leader_elect) or (leader.is_set() and elector is not None and elector.is_leader())

    extenders = _extenders(config)
    with _startup("cannot build the scheduler"):  # e.g. a plugin's constructor refusing its args
        app = build_app(
            config,
            registry,
            api,
            can_bind=can_bind,
            extenders=extenders,
            slow_plugin_threshold=args.slow_plugin_threshold,
        )
    server = None
    if args.port:
        from pyscheduler.server import HealthServer

        with _startup(f"cannot serve health and metrics on {args.address}:{args.port}"):
            server = HealthServer(
                app,
                port=args.port,
                address=args.address,
                cert_file=args.tls_cert_file,
                key_file=args.tls_private_key_file,
            )
            server.start()

    stop = threading.Event()

    def on_signal(signum: int, _: Any) -> None:
        log.info("signal received, shutting down", signal=signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    app.start_informers()
    if leader_elect:
        from pyscheduler.client.leader import LeaderElector

        def started() -> None:
            leader.set()
            app.metrics.leader.labels(le.resource_name).set(1)
            app.start_scheduling()

        def stopped() -> None:
            leader.clear()
            app.metrics.leader.labels(le.resource_name).set(0)
            log.error("lost the lease: stopping")
            stop.set()

        elector = LeaderElector(
            api,
            namespace=le.resource_namespace,
            name=le.resource_name,
            lease_duration=le.lease_duration,
            renew_deadline=le.renew_deadline,
            retry_period=le.retry_period,
            on_started_leading=started,
            on_stopped_leading=stopped,
        )
        app.metrics.leader.labels(le.resource_name).set(0)  # a standby reports 0 from the start
        elector.start()
    else:
        app.start_scheduling()
    log.info("pyscheduler running", profiles=sorted(app.profiles), leader_election=leader_elect)
    stop.wait()
    leader_lost = leader_elect and not leader.is_set() and app.scheduling.is_set()
    leader.clear()
    app.stop(drain_seconds=10.0)
    if elector is not None:
        leader.clear()
        elector.stop(release=True)
    if server is not None:
        server.stop()
    api.close()
    log.info("pyscheduler stopped")
    return 1 if leader_lost else 0


def _extenders(config: Any) -> list[Any]:
    if not getattr(config, "extenders", None):
        return []
    from pyscheduler.extender import ExtenderConfigError, build_extenders

    try:
        return list(build_extenders(config.extenders))
    except ExtenderConfigError as e:
        print(f"pyscheduler: invalid configuration: {e}", file=sys.stderr)
        raise SystemExit(2) from e


# ----------------------------------------------------------------------------------------- plugins


def cmd_plugins(args: argparse.Namespace) -> int:
    from pyscheduler.plugins.registry import plugin_extension_points

    registry = _registry()
    defaults: set[str] = set()
    try:
        from pyscheduler.config.defaults import DEFAULT_MULTI_POINT

        defaults = {ref.name for ref in DEFAULT_MULTI_POINT}
    except Exception:
        defaults = set()
    rows = []
    for name in sorted(registry):
        spec = registry[name]
        eps = sorted(plugin_extension_points(spec))
        rows.append((name, "default" if name in defaults else "", ", ".join(eps), spec.description))
    w = max(len(r[0]) for r in rows)
    print(f"{'PLUGIN':<{w}}  {'PROFILE':<7}  EXTENSION POINTS")
    for name, d, eps_s, _desc in rows:
        print(f"{name:<{w}}  {d:<7}  {eps_s}")
    return 0


# ----------------------------------------------------------------------------------------- explain


def cmd_explain(args: argparse.Namespace) -> int:
    from pyscheduler.client.api import Api
    from pyscheduler.client.connection import ConfigurationError, context_namespace, load_configuration
    from pyscheduler.explain import EXIT_PLUGIN_ERROR, explain, read_cluster
    from pyscheduler.plugin_log import format_traceback

    gates = feature_gates_or_exit(args.feature_gates)  # before the configuration: gates add plugins
    registry = _registry()
    path, source = config_path(args.config)
    config = load_config_or_exit(path, registry)
    if "/" in args.pod:
        namespace, name = args.pod.split("/", 1)
    else:
        namespace = args.namespace or context_namespace(args.kubeconfig, args.context) or "default"
        name = args.pod
    try:
        api = Api(load_configuration(args.kubeconfig, args.context), qps=100, burst=200)
    except ConfigurationError as e:  # no or a broken kubeconfig, an unknown context: one line, no traceback
        print(f"pyscheduler explain: {e}", file=sys.stderr)
        return 1
    try:
        pod, nodes, pods, objects = read_cluster(api, namespace, name, gates)
    except Exception as e:
        print(f"pyscheduler explain: {e}", file=sys.stderr)
        return 1
    try:
        ex = explain(
            pod, nodes, pods, objects, config, registry, config_file=path, config_from=source, gates=gates
        )
    except ValueError as e:
        print(f"pyscheduler explain: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a plugin's factory raised: its author needs the traceback, not silence
        print(f"pyscheduler explain: building the profile: {type(e).__name__}: {e}", file=sys.stderr)
        print(format_traceback(e), file=sys.stderr)
        return EXIT_PLUGIN_ERROR
    print(ex.render(top=args.top))
    return EXIT_PLUGIN_ERROR if ex.failed else 0


# ----------------------------------------------------------------------------------------- dev cluster


def cmd_dev_cluster(args: argparse.Namespace) -> int:
    from pyscheduler.dev import devcluster

    if args.action == "up":
        return devcluster.up(args.dir, nodes=args.nodes, with_controller_manager=args.with_controller_manager)
    if args.action == "down":
        return devcluster.down(args.dir)
    return devcluster.status(args.dir)


def cmd_demo(args: argparse.Namespace) -> int:
    from pyscheduler.dev import demo

    return demo.main(nodes=args.nodes, once=args.once, config=args.config)


# ----------------------------------------------------------------------------------------- new-plugin


def cmd_new_plugin(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pyscheduler.scaffold import ScaffoldError, _snake, write

    dest = Path(args.dir or f"pyscheduler-plugin-{_snake(args.name).replace('_', '-')}")
    try:
        written = write(args.name, args.points.split(","), dest)
    except ScaffoldError as e:
        print(f"pyscheduler new-plugin: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print(f"\nnext: cd {dest} && pip install -e '.[test]' && pytest -q && pyscheduler plugins")
    return 0


def _add_new_plugin_parser(sub: Any) -> None:
    from pyscheduler.scaffold import POINTS

    npl = sub.add_parser("new-plugin", help="write a new plugin package (code, args, tests, config, README)")
    npl.add_argument("name", help="the plugin's name, CamelCase (e.g. NodeLabelGate)")
    npl.add_argument(
        "--points", required=True, help=f"comma-separated extension points, of: {','.join(POINTS)}"
    )
    npl.add_argument("--dir", help="where to write it (default: ./pyscheduler-plugin-<name>); must not exist")
    npl.set_defaults(fn=cmd_new_plugin)


# ----------------------------------------------------------------------------------------- run --reload


def _add_reload_flag(run_parser: argparse.ArgumentParser) -> None:
    run_parser.add_argument(
        "--reload",
        action="store_true",
        help="development: restart the scheduler when an installed plugin's source changes "
        "(needs watchfiles: pip install 'pyscheduler[dev]')",
    )


def _run_with_reload(argv: Sequence[str]) -> int:
    from pyscheduler.reload import run_with_reload

    run_argv = [a for a in list(argv)[1:] if a != "--reload"]
    return run_with_reload(run_argv)


# ----------------------------------------------------------------------------------------- main


def version_line() -> str:
    """``pyscheduler 0.1.0 (kube-scheduler v1.36.3)``: the installed distribution's version and the
    kube-scheduler release whose behaviour it follows."""
    from importlib.metadata import PackageNotFoundError, version

    from pyscheduler import KUBERNETES_VERSION, __version__

    try:
        installed = version("pyscheduler")
    except PackageNotFoundError:  # run from a source tree that is not installed
        installed = __version__
    return f"pyscheduler {installed} (kube-scheduler {KUBERNETES_VERSION})"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pyscheduler", description="A Kubernetes scheduler in Python.")
    p.add_argument("--version", action="version", version=version_line())
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run the scheduler")
    r.add_argument("--config", help=CONFIG_HELP)
    r.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG)")
    r.add_argument(
        "--in-cluster-dir",
        help="directory with the service-account token and ca.crt "
        "(default /var/run/secrets/kubernetes.io/serviceaccount)",
    )
    r.add_argument("--leader-elect", dest="leader_elect", action="store_true", default=None)
    r.add_argument("--no-leader-elect", dest="leader_elect", action="store_false")
    r.add_argument("--port", type=int, default=DEFAULT_PORT, help="health and metrics port (0: off)")
    r.add_argument("--address", default="0.0.0.0", help="health and metrics bind address")
    r.add_argument("--tls-cert-file", help="serve HTTPS with this certificate")
    r.add_argument("--tls-private-key-file", help="key for --tls-cert-file")
    r.add_argument("--log-format", choices=("auto", "console", "json"), default="auto")
    r.add_argument("--log-level", default=os.environ.get("PYSCHEDULER_LOG_LEVEL", "info"))
    r.add_argument(
        "--http-worker",
        action=argparse.BooleanOptionalAction,
        default=os.environ.get("PYSCHEDULER_HTTP_WORKER", "0") in ("1", "true", "yes"),
        help="send Bindings, Events and status patches from a second process (default: off; env "
        "PYSCHEDULER_HTTP_WORKER=1 turns it on). Since writes are framed by client/http1.py, the pipe "
        "round trip costs more CPU than the GIL time it saves (docs/benchmark.md, session 16)",
    )
    r.add_argument(
        "--slow-plugin-threshold",
        type=_duration,
        default=0.1,
        metavar="DURATION",
        help="log a warning (at most once a minute per plugin and extension point) when one plugin call "
        "takes this long or longer (default 100ms; kube-scheduler has no such setting)",
    )
    add_feature_gates_flag(r)
    r.set_defaults(fn=cmd_run)
    _add_reload_flag(r)

    ex = sub.add_parser(
        "explain",
        help="why is this pod pending (or on that node)? a read-only scheduling cycle",
        description="Runs the pod's scheduling cycle read-only, with the configuration the scheduler runs "
        "with, and says which nodes reject it and why, how the others score, per plugin, and how long "
        "each plugin took. A bound pod is replayed as if pending: where it would go now and how its "
        "node ranks. A gated pod is reported with its gates.",
        epilog=f"exit status: 0 answered; 1 the pod or cluster could not be read; 2 invalid configuration; "
        f"3 a plugin raised (the traceback is printed). Without --config and ${CONFIG_ENV} the built-in "
        "default profile is used, with a warning: plugins your configuration adds are then missing.",
    )
    ex.add_argument("pod", help="NAMESPACE/NAME (or NAME with -n)")
    ex.add_argument(
        "-n", "--namespace", default=None, help="the pod's namespace (default: the context's, else default)"
    )
    ex.add_argument("--context", help="the kubeconfig context to use (default: the current one)")
    ex.add_argument(
        "--config",
        help=f"the configuration the scheduler runs with; {CONFIG_HELP[CONFIG_HELP.index('default') :]}",
    )
    ex.add_argument("--kubeconfig")
    ex.add_argument("--top", type=int, default=5, help="how many best-scoring nodes to show")
    add_feature_gates_flag(ex, "the command")
    ex.set_defaults(fn=cmd_explain)

    pl = sub.add_parser("plugins", help="list registered plugins and their extension points")
    pl.set_defaults(fn=cmd_plugins)

    dc = sub.add_parser(
        "dev-cluster", help="a local control plane (etcd, kube-apiserver, KWOK) for development"
    )
    dc.add_argument(
        "action",
        choices=("up", "down", "status"),
        help="up: start it in the background and print the KUBECONFIG export; down: stop it; status: is it up",
    )
    dc.add_argument("--nodes", type=int, default=3, help="how many KWOK fake nodes (default: 3)")
    dc.add_argument(
        "--with-controller-manager",
        action="store_true",
        help="also run kube-controller-manager, so Deployments, ReplicaSets and Jobs create their pods",
    )
    dc.add_argument(
        "--dir",
        default=os.environ.get("PYSCHEDULER_DEV_CLUSTER_DIR", ".dev-cluster"),
        help="where its state, kubeconfig and logs live (default: ./.dev-cluster, or $PYSCHEDULER_DEV_CLUSTER_DIR)",
    )
    dc.set_defaults(fn=cmd_dev_cluster)

    d = sub.add_parser("demo", help="start a local cluster, the scheduler and a demo workload")
    d.add_argument("--nodes", type=int, default=4)
    d.add_argument("--config")
    d.add_argument("--once", action="store_true", help="exit once the demo pods are placed")
    d.set_defaults(fn=cmd_demo)

    _add_new_plugin_parser(sub)
    from pyscheduler.whatif.commands import add_parsers as add_whatif_parsers

    add_whatif_parsers(sub, CONFIG_HELP)  # snapshot, simulate, capacity (issue #17)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run" and getattr(args, "reload", False):
        return _run_with_reload(sys.argv[1:] if argv is None else argv)
    try:
        rc: int = args.fn(args)
    except BrokenPipeError:
        # ``pyscheduler explain ... | head``: the reader went away; say nothing more, as Unix tools do
        # (stdout is pointed at /dev/null so the interpreter's final flush cannot raise again).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return rc


# The read-only commands, for ``kubectl pyscheduler ...`` (kubectl runs ``kubectl-pyscheduler`` from PATH).
KUBECTL_COMMANDS = ("explain", "plugins")


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """The kubectl plugin (console script ``kubectl-pyscheduler``): ``kubectl pyscheduler explain POD
    -n NS --context C``. Only the read-only commands; ``run`` and the dev commands stay ``pyscheduler``'s."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(
            f"usage: kubectl pyscheduler {{{','.join(KUBECTL_COMMANDS)}}} ...\n\n"
            "  explain POD [-n NAMESPACE] [--context CONTEXT] [--kubeconfig FILE] [--config FILE]\n"
            "      why the pod is pending, or why it is on its node\n"
            "  plugins\n      the registered plugins and their extension points"
        )
        return 0
    if args[0] not in KUBECTL_COMMANDS:
        print(
            f"kubectl pyscheduler: unknown command {args[0]!r} (have: {', '.join(KUBECTL_COMMANDS)})",
            file=sys.stderr,
        )
        return 2
    return main(args)


if __name__ == "__main__":
    raise SystemExit(main())
