"""The allocator's errors: a claim that cannot be allocated anywhere, on this node only, or in time."""

from __future__ import annotations


class AllocationError(Exception):
    """The claims cannot be allocated anywhere for a reason that is not about this node's devices."""


class NodeAllocationError(AllocationError):
    """Allocation failed on this node only (kube's ErrFailedAllocationOnNode): other nodes may still do."""


class AllocationTimeout(Exception):
    """The search ran past the filter timeout (DynamicResourcesArgs.filterTimeout)."""
