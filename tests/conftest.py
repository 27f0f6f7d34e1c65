"""How `tests/run.py` spreads the checks over its pytest-xdist workers.

xdist hands out work units in collection order (`--no-loadscope-reorder`): two
to each worker at the start, then one to each worker that runs dry. A Molecule
scenario is a unit of its own (minutes each, slowest first, see
tests/molecule); any other test module is one unit: an integration module
starts its bench nodes once for all its tests, under names that two workers
must not both create. The scenarios go first, then the longest modules
(LONGEST), so that the last unit to finish is a short one.

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
# After the scenarios, the modules that take longest (minutes of bench nodes, package installs and playbook runs;
# measured in a fresh-clone .ci/run), longest first; every other module after them in collection order. In plain
# collection order test_nvidia_driver_rhel (about four minutes) started among the last, and one worker ran alone for
# the last minute and a half of the run (vmstat: half the CPU idle).
LONGEST = [
    "tests/integration/test_cuda_toolkit_rhel.py",
    "tests/integration/test_nvidia_driver_rhel.py",
    "tests/lint/test_lint.py",
    "tests/integration/test_fault_recovery.py",
    "tests/integration/test_nvidia_driver_os_matrix.py",
    "tests/integration/test_cuda_toolkit_bad_input.py",
    "tests/integration/test_nvidia_driver_bad_input.py",
    "tests/integration/test_cuda_toolkit_os_matrix.py",
    "tests/integration/test_variable_grammar.py",
    "tests/integration/test_nccl_tests_os_matrix.py",
]


def _order(item: pytest.Item) -> tuple[int, int]:
    if item.nodeid.startswith(MOLECULE_TESTS):
        return (0, 0)
    module = item.nodeid.split("::", 1)[0]
    return (1, LONGEST.index(module)) if module in LONGEST else (2, 0)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A stable sort: the scenarios keep their order (tests/molecule), the others theirs within each rank.
    items.sort(key=_order)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling

    class OneScenarioOrModulePerUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith(MOLECULE_TESTS) else nodeid.split("::", 1)[0]

    return OneScenarioOrModulePerUnit(config, log)
