"""Upstream's scheduler benchmark course (scheduler_perf), run on our control plane for both schedulers.

Kubernetes measures kube-scheduler with ``test/integration/scheduler_perf``: test cases in
``*/performance-config.yaml`` of ``k8s.io/kubernetes`` (the version ``e2e/controlplane/go.mod`` pins),
each a list of operations (createNodes, createPods, barrier, ...) with parameters filled in per workload
(5Nodes, 500Nodes, 5000Nodes_...), some with a throughput ``threshold`` upstream CI enforces. This package
reads those files **from the module cache on disk** (nothing of them is copied here), turns each operation
into API calls on the local control plane, and runs each selected workload with kube-scheduler and with
pyscheduler, one after the other on the same cluster, as ``bench.run`` does for our own workloads.

    course.py      find the pinned module, load its test cases, fill in a workload's parameters, select
    gotemplate.py  the few Go text/template forms the templates use ({{.Index}}, Mod, DivideInt, ...)
    ops.py         the operations, as API calls, and the throughput collector upstream's threshold reads
    dra.py         createResourceDriver and allocResourceClaims, done by the harness (no kubelet, no driver)
    report.py      the course table as Markdown (``--markdown``), from a run, a listing, or saved runs
    __main__.py    ``python -m bench.upstream``: select, run, report

A workload's feature gates go to both schedulers' ``--feature-gates``. What cannot run is skipped with its
reason, never silently: an operation we do not translate, gates kube-scheduler 1.36 would refuse
(SchedulerQueueingHints=false is locked), something only a kubelet would do.
"""
