"""The extension-point table is the one source the config layer and the runtime read: its rows must
agree with the Protocols plugins implement, and a plugin is recognised at a point by that point's method."""

from __future__ import annotations

import pytest

from pyscheduler.config.types import ResolvedPlugins
from pyscheduler.framework import extension_points
from pyscheduler.framework.runtime import extension_points_of


@pytest.mark.parametrize("point", extension_points.TABLE, ids=lambda p: p.name)
def test_each_row_names_a_method_its_protocol_declares(point: extension_points.ExtensionPoint) -> None:
    assert point.method in dir(point.protocol)
    assert point.field in {f for f in ResolvedPlugins.__dataclass_fields__}


def test_a_plugin_is_recognised_at_exactly_the_points_whose_methods_it_has() -> None:
    class SortAndScore:
        def less(self, a: object, b: object) -> bool:
            return False

        def score(self, *args: object) -> int:
            return 0

    assert extension_points_of(SortAndScore) == {"queueSort", "score"}
    assert extension_points_of(SortAndScore()) == {"queueSort", "score"}
