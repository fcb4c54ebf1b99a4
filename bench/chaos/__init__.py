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
  added, cordoned and deleted.
- ``__main__.py``: the scenarios (one fault each), the figures, and the one-line summary; exits 1 when
  any pod was lost, any node overcommitted or any pod bound twice.
"""
