"""Every Molecule scenario under molecule/, each a full `molecule test` run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "output"
# The order in which tests/run.py's two workers take the scenarios: the slowest
# first, so that both finish together (a scenario not named here runs after
# these). xdist starts each worker with two units, the first and third of this
# list on one, the second and fourth on the other; nvidia_driver, with its real
# DKMS build of Debian's 535, is the longest scenario.
FIRST = [
    "nvidia_driver",
    "rdma_fabric",
    "nccl_tests",
    "nvidia_driver_cuda_repo",
    "k8s_node",
    "cuda_toolkit",
    "site",
]
SCENARIOS = sorted(
    (p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml")),
    key=lambda name: (FIRST.index(name) if name in FIRST else len(FIRST), name),
)


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
            env={**os.environ, "PY_COLORS": "0", "NO_COLOR": "1"},
            check=False,
        )
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-150:])
        pytest.fail(f"molecule test -s {scenario} failed (rc={proc.returncode}); full log: {log}\n{tail}")
