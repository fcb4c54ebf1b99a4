"""What-if scheduling on a cluster snapshot, in process: ``pyscheduler simulate``, ``capacity`` and
``snapshot`` (docs/simulate.md).

One concern per module:

    snapshot    ClusterSnapshot: read once from a cluster (list only) or kubectl YAML files; save, load
    workloads   Deployments, StatefulSets, Jobs, ReplicaSets, pods -> the pods their controllers make
    changes     --drain, --cordon, --remove-node, --add-nodes N --like NODE applied to a snapshot
    simulate    the run through the real core (pyscheduler.engine); SimulationResult; compare
    capacity    how many more copies of a pod fit, and what stops the next one
    usage       utilisation per node and zone, fragmentation
    reasons     a FailedScheduling text back into {reason: node count}
    render      text output; report: the self-contained HTML report; progress: the stderr bar
    commands    the CLI subcommands (pyscheduler.cli adds their parsers)

Nothing here writes to a cluster: the only API calls are the LISTs of ``ClusterSnapshot.from_cluster``.
"""
