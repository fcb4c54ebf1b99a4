"""The ``snapshot``, ``simulate`` and ``capacity`` commands (``pyscheduler.cli`` adds their parsers).

Exit status: 0 answered (unschedulable pods are an answer, not a failure); 1 a snapshot, workload, pod or
change that cannot be read or applied (one line on stderr saying which and why); 2 an invalid scheduler
configuration (as ``pyscheduler run``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from pyscheduler.whatif.changes import ChangeError, Changes
from pyscheduler.whatif.snapshot import ClusterSnapshot, SnapshotError
from pyscheduler.whatif.workloads import WorkloadError

EXIT_INPUT = 1
EXIT_CONFIG = 2


def _fail(cmd: str, message: str) -> int:
    print(f"pyscheduler {cmd}: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_INPUT


def _quiet_logs() -> None:
    from pyscheduler.logs import setup_logging

    setup_logging("console", "warning")  # the scheduler's per-pod lines would drown the answer


def _load_snapshot(args: argparse.Namespace) -> ClusterSnapshot:
    if args.snapshot:
        return ClusterSnapshot.load(args.snapshot)
    return ClusterSnapshot.from_cluster(args.kubeconfig, args.context)


def _changes(args: argparse.Namespace) -> Changes:
    return Changes(
        drain=args.drain or (),
        cordon=args.cordon or (),
        remove=args.remove_node or (),
        add_nodes=args.add_nodes or 0,
        like=args.like,
    )


def _gates(args: argparse.Namespace) -> None:
    """``--feature-gates``: the process's gates, before any configuration is loaded (gates add plugins
    to the default profile) and before the in-process engine is built (the pod group cycle)."""
    from pyscheduler.cli import feature_gates_or_exit

    feature_gates_or_exit(args.feature_gates)


def _check_config(path: str | None) -> None:
    """Validate with the daemon's loader; an invalid file exits 2 with the field's path."""
    from pyscheduler.cli import _registry, load_config_or_exit

    load_config_or_exit(path, _registry())


def _write(text: str, path: str | None) -> None:
    if path:
        Path(path).write_text(text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


# ------------------------------------------------------------------------------------------ snapshot


def cmd_snapshot(args: argparse.Namespace) -> int:
    _quiet_logs()
    try:
        snap = _load_snapshot(args)
        snap.save(args.output)
    except (SnapshotError, OSError) as e:
        return _fail("snapshot", str(e))
    except Exception as e:  # the API server or the kubeconfig: one line, no traceback
        return _fail("snapshot", f"{type(e).__name__}: {e}")
    print(f"{args.output}: {snap.summary()}", file=sys.stderr)
    for w in snap.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------------ simulate


def cmd_simulate(args: argparse.Namespace) -> int:
    from pyscheduler.cli import config_path
    from pyscheduler.whatif import workloads
    from pyscheduler.whatif.progress import ProgressBar
    from pyscheduler.whatif.render import render, render_comparison
    from pyscheduler.whatif.simulate import Comparison, simulate

    _quiet_logs()
    _gates(args)
    configs: list[str | None]
    if args.compare:
        configs = list(args.compare)
    else:
        configs = [config_path(args.config)[0]]
    for c in configs:
        _check_config(c)
    try:
        snap = _load_snapshot(args)
        added = workloads.load(args.add or (), snap.priority_classes())
    except (SnapshotError, WorkloadError) as e:
        return _fail("simulate", str(e))
    except Exception as e:
        return _fail("simulate", f"reading the cluster: {type(e).__name__}: {e}")
    common: dict[str, Any] = {
        "snapshot": snap,
        "workloads": added,
        "changes": _changes(args),
        "seed": args.seed,
        "schedule_all": args.schedule_all,
    }
    try:
        if args.compare:
            bars = [ProgressBar(f"simulating {name}") for name in ("A", "B")]
            a = simulate(
                config=configs[0],
                config_name=str(configs[0] or "default profile"),
                progress=bars[0],
                **common,
            )
            bars[0].close()
            b = simulate(
                config=configs[1],
                config_name=str(configs[1] or "default profile"),
                progress=bars[1],
                **common,
            )
            bars[1].close()
            comparison = Comparison(a, b)
            text = (
                orjson.dumps(comparison.to_dict(per_node=True), option=orjson.OPT_INDENT_2).decode()
                if args.output == "json"
                else render_comparison(comparison)
            )
            _write(text, None)
            if args.html:
                from pyscheduler.whatif.report import comparison_html

                Path(args.html).write_text(comparison_html(comparison))
            return 0
        bar = ProgressBar("simulating")
        result = simulate(
            config=configs[0], config_name=configs[0] or "default profile", progress=bar, **common
        )
        bar.close()
    except ChangeError as e:
        return _fail("simulate", str(e))
    except (WorkloadError, SnapshotError) as e:
        return _fail("simulate", str(e))
    if args.output == "json":
        _write(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2).decode(), None)
    else:
        _write(render(result, rows=args.rows), None)
    if args.html:
        from pyscheduler.whatif.report import simulation_html

        Path(args.html).write_text(simulation_html(result))
    return 0


# ------------------------------------------------------------------------------------------ capacity


def cmd_capacity(args: argparse.Namespace) -> int:
    from pyscheduler.cli import config_path
    from pyscheduler.whatif.capacity import capacity, template_pod
    from pyscheduler.whatif.progress import ProgressBar
    from pyscheduler.whatif.snapshot import _read_documents

    _quiet_logs()
    _gates(args)
    cfg = config_path(args.config)[0]
    _check_config(cfg)
    try:
        snap = _load_snapshot(args)
        docs = [d for d in _read_documents(Path(args.pod)) if d[1] is not None]
        if len(docs) != 1:
            raise WorkloadError(f"{args.pod}: expected one pod, found {len(docs)} documents")
        pod = template_pod(docs[0][1], snap, docs[0][0])
        bar = ProgressBar("placing copies")
        result = capacity(
            snap,
            pod,
            changes=_changes(args),
            config=cfg,
            seed=args.seed,
            max_replicas=args.max_replicas,
            progress=bar,
        )
        bar.close()
    except (SnapshotError, WorkloadError, ChangeError) as e:
        return _fail("capacity", str(e))
    except Exception as e:
        return _fail("capacity", f"{type(e).__name__}: {e}")
    if args.output == "json":
        _write(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2).decode(), None)
    else:
        _write(result.to_text(), None)
    return 0


# ------------------------------------------------------------------------------------------ parsers


def _source_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--snapshot",
        metavar="PATH",
        help="a snapshot file (pyscheduler snapshot) or kubectl -o yaml output: a file or a directory",
    )
    src.add_argument(
        "--from-cluster",
        action="store_true",
        help="read the cluster of --kubeconfig now (list only, never a write)",
    )
    p.add_argument("--kubeconfig", help="with --from-cluster (default: $KUBECONFIG, then ~/.kube/config)")
    p.add_argument("--context", help="with --from-cluster: the kubeconfig context")


def _change_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--drain", nargs="+", action="extend", metavar="NODE", help="cordon and evict the pods")
    p.add_argument("--cordon", nargs="+", action="extend", metavar="NODE", help="mark unschedulable")
    p.add_argument("--remove-node", nargs="+", action="extend", metavar="NODE", help="delete the node")
    p.add_argument("--add-nodes", type=int, metavar="N", help="add N copies of the --like node")
    p.add_argument("--like", metavar="NODE", help="the node --add-nodes copies")
    p.add_argument("--seed", type=int, default=0, help="seed of the tie-break among equal scores (default 0)")
    from pyscheduler.cli import add_feature_gates_flag

    add_feature_gates_flag(p, "the command")


def add_parsers(sub: Any, config_help: str) -> None:
    """Add ``snapshot``, ``simulate`` and ``capacity`` to the ``pyscheduler`` command's subparsers."""
    sn = sub.add_parser(
        "snapshot",
        help="save a cluster snapshot (read-only) for simulate and capacity",
        description="Lists nodes, pods and what scheduling reads (PVs, PVCs, StorageClasses, CSINodes, "
        "PDBs, PriorityClasses, DRA objects...) and saves them to one file (JSON, gzip with .gz). "
        "With --snapshot, converts kubectl -o yaml output instead.",
    )
    _source_args(sn)
    sn.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the snapshot")
    sn.set_defaults(fn=cmd_snapshot)

    sim = sub.add_parser(
        "simulate",
        help="what-if: schedule a snapshot's pending pods and added workloads in process",
        description="Schedules the snapshot's pending pods, the pods of the workloads given with --add "
        "and those displaced by --drain/--remove-node, with the real framework, plugins, configuration "
        "validation and preemption, in process: nothing is written to any cluster.",
        epilog="exit status: 0 answered; 1 unreadable snapshot, workload or change; 2 invalid configuration",
    )
    _source_args(sim)
    sim.add_argument("--config", help=config_help)
    sim.add_argument("--add", nargs="+", action="extend", metavar="WORKLOAD.yaml", help="workloads to add")
    _change_args(sim)
    sim.add_argument(
        "--compare", nargs=2, metavar=("CFG_A", "CFG_B"), help="run the same under two configurations"
    )
    sim.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sim.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    sim.add_argument("--rows", type=int, default=30, help="placements shown in text output (default 30)")
    sim.add_argument(
        "--schedule-all",
        action="store_true",
        help="also place pending pods for schedulers the configuration has no profile for",
    )
    sim.set_defaults(fn=cmd_simulate)

    cap = sub.add_parser(
        "capacity",
        help="how many more copies of a pod fit, and what stops the next one",
        description="Adds copies of the pod (preemptionPolicy Never) until one does not fit; prints the "
        "count and the reasons on the nodes that stop the next (-o json: replicas, stopped_by...).",
    )
    _source_args(cap)
    cap.add_argument("pod", metavar="POD.yaml", help="the pod (or a workload whose pod template to use)")
    cap.add_argument("--config", help=config_help)
    _change_args(cap)
    cap.add_argument("--max-replicas", type=int, default=100_000, help="stop counting here (default 100000)")
    cap.add_argument("-o", "--output", choices=("text", "json"), default="text")
    cap.set_defaults(fn=cmd_capacity)
