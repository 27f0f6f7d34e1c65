"""How `tests/run.py` spreads the checks over its pytest-xdist workers.

xdist hands out work units in collection order (`--no-loadscope-reorder`): two
to each worker at the start, then one to each worker that runs dry. A Molecule
scenario is a unit of its own (minutes each, slowest first, see
tests/molecule); any other test module is one unit: an integration module
starts its bench nodes once for all its tests, under names that two workers
must not both create. The scenarios go first so that the last unit to finish is
a short one.

(xdist's own `--dist loadgroup` would do this with marks, but it renames the
test ids through an attribute pytest 9 no longer reads.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Helpers every test directory shares (signing.py) import by their module name.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Tests read what ansible-playbook prints; colour codes would split the words they look for. `make` forces colour
# for people (ANSIBLE_FORCE_COLOR=1), which no per-command ANSIBLE_NOCOLOR overrides, so every test runs without.
os.environ["ANSIBLE_FORCE_COLOR"] = "0"
os.environ["ANSIBLE_NOCOLOR"] = "1"

# Test ids are relative to the rootdir that tests/run.py names.
MOLECULE_TESTS = "tests/molecule/"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(MOLECULE_TESTS))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling

    class OneScenarioOrModulePerUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith(MOLECULE_TESTS) else nodeid.split("::", 1)[0]

    return OneScenarioOrModulePerUnit(config, log)
