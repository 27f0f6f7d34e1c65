"""What the report's tests and benchmark build results directories from, as the acceptance stage writes them: the
golden node documents of real captures (tests/unit/plugins/module_utils/golden/acceptance), the nccl_tests stage's
kept measurement of the real 8x H100 all_reduce_perf run and the 8x H100 node's nvidia-smi -q -x."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpuops.bringup.plugins.module_utils import nccl_tests  # noqa: E402

GOLDEN = ROOT / "tests" / "unit" / "plugins" / "module_utils" / "golden" / "acceptance"
NCCL = ROOT / "tests" / "fixtures" / "nccl" / "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt"
SMI = ROOT / "tests" / "fixtures" / "nvidia_smi" / "h100-sxm-x8-565.derived.xml"


def golden(name):
    return json.loads((GOLDEN / f"{name}.json").read_text())


def node_read():
    """acceptance_read's evidence of an 8x H100 node: its nvidia-smi -q -x (the 565 driver's report) and its copy of
    the nccl_tests stage's results.json holding the 8x H100 run's measurement."""
    kept = {"node/all_reduce_perf": {"measurement": {"results": nccl_tests.parse(NCCL.read_text())["results"]}}}
    return {"evidence": {"nccl-tests-results.json": {"path": "/var/lib/gpuops/nccl_tests/results.json",
                                                     "stdout": json.dumps(kept)},
                         "nvidia-smi-query.xml": {"cmd": ["nvidia-smi", "-q", "-x"], "rc": 0,
                                                  "stdout": SMI.read_text()}}}  # fmt: skip
