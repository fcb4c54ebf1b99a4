"""CycleState.overlay: the clone the nominated-pods Filter pass uses, each value cloned when first read.
Whatever a plugin does through it, the overlay shows what a full clone would, and the state it came
from is left as it was."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pyscheduler.framework.cycle_state import CycleState


class Counter:
    """Mutable state data with a clone (as PreFilter states that AddPod/RemovePod change are)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def clone(self) -> Counter:
        return Counter(self.n)


def _view(state: CycleState, keys: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in keys:
        v = state.get(k, "absent")
        out[k] = v.n if isinstance(v, Counter) else v
    return out


KEYS = ["a", "b", "c", "d"]
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("bump"), st.sampled_from(KEYS)),
        st.tuples(st.just("write"), st.sampled_from(KEYS), st.integers(0, 9)),
        st.tuples(st.just("delete"), st.sampled_from(KEYS)),
        st.tuples(st.just("read"), st.sampled_from(KEYS)),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(initial=st.dictionaries(st.sampled_from(KEYS), st.integers(0, 9)), plain=st.booleans(), ops=_ops)
def test_overlay_behaves_as_a_clone(initial: dict[str, int], plain: bool, ops: list[tuple[Any, ...]]) -> None:
    parent = CycleState()
    for k, n in initial.items():
        # some values without clone(): shared by clone and overlay alike
        parent.write(k, n if plain and k == "d" else Counter(n))
    parent.skip_filter_plugins.add("X")
    before = _view(parent, KEYS)
    over, full = parent.overlay(), parent.clone()
    for op in ops:
        for s in (over, full):
            if op[0] == "bump":
                v = s.get(op[1])
                if isinstance(v, Counter):
                    v.n += 1
            elif op[0] == "write":
                s.write(op[1], Counter(op[2]))
            elif op[0] == "delete":
                s.delete(op[1])
            else:
                with contextlib.suppress(KeyError):
                    s.read(op[1])
        assert _view(over, KEYS) == _view(full, KEYS)
    assert _view(over.clone(), KEYS) == _view(full, KEYS)
    assert _view(over.overlay(), KEYS) == _view(full, KEYS)
    over.skip_filter_plugins.add("Y")
    assert _view(parent, KEYS) == before and parent.skip_filter_plugins == {"X"}
