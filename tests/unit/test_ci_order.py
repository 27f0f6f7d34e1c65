"""The order tests/run.py hands out work: every module and scenario it names exists (a renamed one would silently
fall back to the end of the run, where a long unit leaves the other worker idle)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load(path: Path):
    # By path: "conftest" and "molecule" are also the names of other modules (tests/unit's, Molecule's package).
    spec = importlib.util.spec_from_file_location(f"gpuops_ci_order_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_longest_module_exists():
    longest = load(ROOT / "tests" / "conftest.py").LONGEST
    assert longest and [name for name in longest if not (ROOT / name).is_file()] == []


def test_every_first_scenario_exists():
    first = load(ROOT / "tests" / "molecule" / "test_molecule.py").FIRST
    assert first and [name for name in first if not (ROOT / "molecule" / name / "molecule.yml").is_file()] == []
