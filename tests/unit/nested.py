"""Test states as variations of one: a mapping with some nested values changed."""

from __future__ import annotations

import copy


def changed(state, **changes):
    """A deep copy of state with changes, a double underscore between levels: os__id="rocky" sets state["os"]["id"]."""
    result = copy.deepcopy(state)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = result
        for key in parents:
            target = target[key]
        target[last] = value
    return result
