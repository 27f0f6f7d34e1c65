"""Every Molecule scenario under molecule/, each a full `molecule test` run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "output"
# Slowest first (measured side by side on two workers, in s: 1947, 1331, 620,
# 506, 475, 444, 425, 412), so that tests/run.py's two workers finish together;
# a scenario not named here runs after these. nvidia_driver starts beside
# nvidia_driver_dkms_failure and builds the 535 driver minutes before the
# other's re-run builds the same: that one then comes from the bench's
# compiler cache (tests/bench/images/node.Containerfile).
SLOWEST_FIRST = [
    "nvidia_driver_dkms_failure",
    "nvidia_driver",
    "nccl_tests",
    "nvidia_driver_cuda_repo",
    "k8s_node",
    "rdma_fabric",
    "cuda_toolkit_cuda_repo",
    "cuda_toolkit",
]
SCENARIOS = sorted(
    (p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml")),
    key=lambda name: (SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST), name),
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
            env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "PY_COLORS": "0", "NO_COLOR": "1"},
            check=False,
        )
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-150:])
        pytest.fail(f"molecule test -s {scenario} failed (rc={proc.returncode}); full log: {log}\n{tail}")
