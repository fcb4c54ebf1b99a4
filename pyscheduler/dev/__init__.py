"""Developer commands behind ``pyscheduler demo`` and ``pyscheduler dev-cluster``: a local control plane
with fake nodes for trying the scheduler by hand. They use ``pyscheduler.testing.cluster`` to start it;
they are commands, not test helpers, so they live here rather than in ``pyscheduler.testing``."""
