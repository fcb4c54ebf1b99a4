"""pyscheduler: a Kubernetes scheduler in Python with kube-scheduler's framework and decisions."""

__version__ = "0.1.0"
