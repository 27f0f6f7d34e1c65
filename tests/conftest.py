"""How `tests/run.py` spreads the checks over its pytest-xdist workers.

Run with `--dist loadgroup --no-loadscope-reorder`, xdist hands out work units
in collection order, one to each worker that runs dry. A Molecule scenario is a
unit of its own (minutes each, slowest first, see tests/molecule); the other
tests form one unit per module: an integration module starts its bench nodes
once for all its tests, under names that two workers must not both create.
The scenarios go first so that the last unit to finish is a short one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

MOLECULE = Path(__file__).resolve().parent / "molecule"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    scenarios = [item for item in items if item.path.parent == MOLECULE]
    others = [item for item in items if item.path.parent != MOLECULE]
    for item in others:
        item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    items[:] = scenarios + others
