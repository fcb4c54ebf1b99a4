"""Example plugins shipped with pyscheduler: off by default, enabled by configuration.

Each is a package here with its unit tests beside it, written the way an out-of-tree plugin would be
(a module docstring, ``NAME``, reason constants, a typed args dataclass, ``new(args, handle)`` and
``PLUGIN = PluginSpec(...)``). They are registered in ``pyscheduler.plugins.registry.EXAMPLE_MODULES``
so a profile can name them like any kube plugin:

============== =========================================== ==============================================
plugin          extension points                            what it does
============== =========================================== ==============================================
LabelMatch      Filter, PostFilter                          a labelled pod only fits nodes with the same
                                                            label and value
NetworkTraffic  PreScore, Score (+NormalizeScore)           prefers nodes with little network traffic,
                                                            as measured by Prometheus (network I/O!)
Coscheduling    QueueSort, PreFilter, Reserve, Permit,      gang scheduling: a pod group binds only when
                PostBind                                    ``min-available`` members fit
BindingNotifier PostBind                                    POSTs each binding to a webhook, off-thread
VolumeReady     PreBind                                     holds a pod until all its PVCs are Bound
============== =========================================== ==============================================

Enabling one, e.g. in a second profile::

    profiles:
      - schedulerName: py-scheduler
      - schedulerName: py-scheduler-label-match
        plugins:
          multiPoint:
            enabled: [{name: LabelMatch}]
        pluginConfig:
          - name: LabelMatch
            args: {label: example.com/pool}
"""
