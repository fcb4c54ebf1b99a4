"""``make chaos``: fault injection against the real local control plane, judged by an independent checker.

Why here (``bench/``): like ``bench.run`` and ``bench.differential`` it drives a real ``LocalCluster``
(etcd + kube-apiserver + kube-controller-manager + KWOK) and the daemon as a real ``pyscheduler run``
process for minutes, which is too slow for ``make test``; a short smoke of one scenario lives in
``tests/integration/test_chaos_smoke.py``.

- ``checker.py``: the invariant checker. Its own watches (plain ``urllib`` on the API server, never the
  scheduler's client, informers or cache) on pods, nodes and events, and its own bookkeeping: binds per
  pod uid, requests per node on every bind, taints/nodeSelector/required node affinity of every bind,
  pods that never get a scheduling attempt.
- ``workload.py``: the driver: Deployments scaled up and down, bare pods of mixed sizes and priorities
  (preemption), pods with required anti-affinity and topology spread, pods deleted while pending, nodes
  added, cordoned and deleted; for the soak, several driver threads and a cap on the pods alive
  (steady churn).
- ``proxy.py``: a TCP proxy (TLS passed through) that resets, refuses and slows connections.
- ``httpproxy.py``: a TLS-terminating HTTP proxy (a certificate from the cluster's own CA) that answers
  429 with Retry-After, 500, 503, loses answers after the API server acted, holds answers or requests
  back, ends every open watch on command (so re-connections meet a fault), and logs every request so
  the harness can read the client's retries and their spacing.
- ``extender.py``: a real extender process (filter, prioritize, bind) whose answers are made slow, 500,
  garbage or refused on command.
- ``prometheus.py``: a stand-in Prometheus process for the NetworkTraffic plugin, refused, a black hole,
  a trickle, 503 or garbage on command.
- ``procs.py``: those helper processes as the harness starts and commands them.
- ``common.py``: the scheduler's configuration, a scenario's context and the helpers faults share.
- ``faults.py``: the faults, one per scenario, each noting what it saw.
- ``probe.py``: the capacity probe after each scenario (a whole-node pod pinned to every node must
  bind: nothing leaked), with the daemon's own queue and cache sizes after it.
- ``figures.py``: retry and watch figures from the HTTP proxy's log; the daemon's process and gauges.
- ``soak.py``: the soak's per-minute figures.
- ``scenarios.py``: the scenario registry and ``run_scenario`` (one scenario, start to figures).
- ``__main__.py``: the command line and the report: a line per scenario and the one-line summary; exits
  1 when any pod was lost, any node overcommitted or leaked, or any pod bound twice or misplaced.
"""
