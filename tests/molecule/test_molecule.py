"""Every Molecule scenario under molecule/, each a full `molecule test` run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "output"
SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(scenario: str) -> None:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    log = OUTPUT / f"molecule-{scenario}.log"
    with log.open("w") as handle:
        proc = subprocess.run(
            ["molecule", "test", "--scenario-name", scenario],
            cwd=ROOT,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "PY_COLORS": "0", "NO_COLOR": "1"},
            check=False,
        )
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-150:])
        pytest.fail(f"molecule test -s {scenario} failed (rc={proc.returncode}); full log: {log}\n{tail}")
