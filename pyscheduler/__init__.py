"""pyscheduler: a Kubernetes scheduler in Python with kube-scheduler's framework and decisions."""

__version__ = "0.1.0"

# The kube-scheduler whose decisions, messages and configuration this release follows (the version
# e2e/controlplane/go.mod pins and the differential test compares against; a unit test holds them equal).
KUBERNETES_VERSION = "v1.36.3"
