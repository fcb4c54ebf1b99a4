"""Helpers plugins share, in the framework layer (kube-scheduler's ``plugins/helper`` and the parts of
component-helpers the plugins use). Pure: no I/O, no clock. One copy of each, so plugins agree.

    normalize.py      DefaultNormalizeScore on score lists and on int64 arrays
    gomath.py         Go's integer division and math.Round
    gofmt.py          Go's %v of a string slice, as kube's messages print it
    names.py          apimachinery's name validation (qualified names, label values, DNS-1123
                      subdomains) with its exact messages; extended resource names
    node_affinity.py  node selector terms as component-helpers parses them; a pod's required node
                      affinity (nodeSelector AND required terms) as one matcher
    storage.py        PVC/PV/StorageClass JSON as component-helpers reads it; the claims a pod uses
    timefmt.py        RFC 3339 timestamps as the API server writes them
"""

from pyscheduler.framework.helpers.gomath import go_div
from pyscheduler.framework.helpers.normalize import default_normalize_score, default_normalize_values

__all__ = ["default_normalize_score", "default_normalize_values", "go_div"]
