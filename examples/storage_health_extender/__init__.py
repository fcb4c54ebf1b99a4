"""storage-health: an example kube-scheduler HTTP extender (see README.md)."""
