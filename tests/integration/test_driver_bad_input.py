"""nvidia_driver's bad input fails in preflight, before any change, with a message naming the variable, the value and
the fix.

Variable-only cases run against the machine running the tests (it has no NVIDIA GPU and no NVSwitch). Cases that
need GPUs, an OS or package sources run against bench nodes: simulated hardware profiles (tests/sim) give
pci_facts an HGX H100 with NVSwitches, a 4x L40S, 2x V100S (pre-Turing) and an HGX B200 (Blackwell) to read;
their preflight reads the node and checks, in check mode, and changes nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = Path(__file__).with_name("driver_preflight.yml")
BENCH = ROOT / "tests" / "bench" / "bench.py"
GROUP = "driver-preflight"
MIRROR = "http://gpuops-mirror:8080"

LOCAL_CASES = {
    "version_pin_without_branch": (
        {"nvidia_driver_version": "535.274.02"},
        [
            'nvidia_driver_version is "535.274.02" but nvidia_driver_branch is empty: a version pin needs its branch',
            'Fix: nvidia_driver_branch: "535" with nvidia_driver_version: "535.274.02".',
        ],
    ),
    "version_not_of_the_branch": (
        {"nvidia_driver_branch": "535", "nvidia_driver_version": "550.163.01"},
        [
            'nvidia_driver_version 550.163.01 is not of branch 535 (nvidia_driver_branch: "535").',
            'Fix: nvidia_driver_branch: "550" for that version, or a 535 version',
        ],
    ),
    "version_malformed": (
        {"nvidia_driver_branch": "535", "nvidia_driver_version": "latest"},
        ['nvidia_driver_version is "latest", not an NVIDIA driver version. Fix: the full version'],
    ),
    "branch_malformed": (
        {"nvidia_driver_branch": "R535"},
        ['nvidia_driver_branch is "R535", not a driver branch. Fix: the branch number as a string, e.g.'],
    ),
    "branch_the_source_does_not_carry": (
        {"nvidia_driver_branch": "470"},
        [
            'nvidia_driver_branch is "470", which Debian',
            "own packages (nvidia_driver_source: distribution) do not carry: they carry branch",
            "or nvidia_driver_source: cuda_repo for NVIDIA's other branches",
        ],
    ),
    "fabric_manager_forced_without_nvswitch": (
        {"nvidia_driver_fabricmanager": True},
        [
            "nvidia_driver_fabricmanager is true but localhost has no NVSwitch: none on its PCI bus",
            "Fix: nvidia_driver_fabricmanager: auto (or false).",
        ],
    ),
    "source_not_there_yet": (
        {"nvidia_driver_source": "cuda_repo"},
        ["value of nvidia_driver_source must be one of: distribution, got: cuda_repo"],
    ),
    "flavor_unknown": (
        {"nvidia_driver_flavor": "nouveau"},
        ["value of nvidia_driver_flavor must be one of: auto, open, proprietary, got: nouveau"],
    ),
}

# node -> (image, simulated hardware profile); each case names its node.
NODES = {
    "l40s": ("debian13", "pcie_l40s_4gpu"),
    "v100s": ("debian13", "pcie_v100s_2gpu"),
    "b200": ("debian13", "hgx_b200_8gpu"),
    "h100": ("debian12", "hgx_h100_8gpu"),
    "bare": ("debian13", ""),
    "ubuntu": ("debian12", ""),
}

NODE_CASES = {
    "open_modules_on_pre_turing_gpus": (
        "v100s",
        {"nvidia_driver_branch": "550", "nvidia_driver_flavor": "open"},
        [
            "v100s: nvidia_driver_flavor is open but 2x Tesla V100S-PCIE-32GB (volta) at 0000:5e:00.0, 0000:d8:00.0 "
            "cannot use NVIDIA's open kernel modules",
            "Fix: nvidia_driver_flavor: proprietary (or auto, which picks it).",
        ],
    ),
    "blackwell_needs_open_modules_the_branch_lacks": (
        "b200",
        {},
        [
            "b200: nvidia_driver_flavor is auto and picks the open kernel modules (8x NVIDIA B200 (blackwell) at "
            "0000:1b:00.0,",
            "run only on the open kernel modules), but Debian 13's own packages have no open kernel modules for "
            'branch 535 (nvidia_driver_branch: "535" offers proprietary).',
            'Fix: nvidia_driver_branch: "550" (which has them), or nvidia_driver_source: cuda_repo',
        ],
    ),
    "open_modules_the_branch_lacks": (
        "l40s",
        {"nvidia_driver_flavor": "open"},
        [
            "l40s: nvidia_driver_flavor is open but Debian 13's own packages have no open kernel modules for branch "
            "535",
            "or nvidia_driver_flavor: auto.",
        ],
    ),
    "fabric_manager_needed_from_a_source_without_it": (
        "h100",
        {},
        [
            "h100 needs fabric manager (nvidia_driver_fabricmanager: auto; 4 NVSwitch(es) on the PCI bus), at exactly "
            "the driver's version",
            "nvidia_driver_source is distribution, and Debian carries no nvidia-fabricmanager package.",
            "Fix: nvidia_driver_source: cuda_repo (NVIDIA's CUDA repository carries fabric manager for every driver "
            "version; the collection's next release), or nvidia_driver_fabricmanager: false",
        ],
    ),
    "fabric_manager_forced_on_a_pcie_node": (
        "l40s",
        {"nvidia_driver_fabricmanager": True},
        [
            "nvidia_driver_fabricmanager is true but l40s has no NVSwitch: none on its PCI bus (4 NVIDIA GPU(s): "
            "NVIDIA L40S)",
        ],
    ),
    "unsupported_os": (
        "ubuntu",
        {},
        [
            "nvidia_driver_source is distribution (the OS's own packages), which this collection supports on Debian "
            "12 and 13 (their non-free NVIDIA packages); ubuntu runs Ubuntu 24.04",
            "Fix: a supported release, or nvidia_driver_source: cuda_repo",
        ],
    ),
    "sources_without_non_free": (
        "bare",
        {},
        [
            "bare: Debian 13's own packages carry no version of nvidia-tesla-535-kernel-dkms (nor of 5 more packages "
            "of the set) (branch 535, proprietary kernel modules): the OS sources lack Debian's contrib, non-free and "
            "non-free-firmware components",
        ],
    ),
    "version_the_source_does_not_carry": (
        "l40s",
        {"nvidia_driver_branch": "535", "nvidia_driver_version": "535.54.03"},
        [
            "l40s: nvidia_driver_version is 535.54.03, which Debian 13's own packages do not carry for branch 535 "
            "with the proprietary kernel modules (they carry 535.",
            'or nvidia_driver_version: "" for the newest.',
        ],
    ),
}


def unfold(text: str) -> str:
    """Messages are folded in the output, with YAML's doubled quotes: compare them unfolded."""
    return re.sub(r"\s+", " ", text).replace("''", "'")


def run_preflight(tmp_path: Path, inventory: list[str], variables: dict, limit: str | None = None):
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps(variables))
    argv = ["ansible-playbook", *inventory, "--check", "--tags", "nvidia_driver_preflight", "--extra-vars",
            f"@{extra}", str(PLAYBOOK)]  # fmt: skip
    if limit:
        argv[1:1] = ["--limit", limit]
    return subprocess.run(
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )


def localhost(tmp_path: Path, variables: dict):
    # Modules run with the tests' own Python: interpreter discovery on a developer machine may find shims.
    return run_preflight(
        tmp_path,
        ["--inventory", "localhost,", "--connection", "local"],
        {**variables, "ansible_python_interpreter": sys.executable},
    )


def assert_fails_with(proc, host, expected):
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode != 0, output[-3000:]
    for text in expected:
        assert unfold(text) in output, f"{text!r} not in:\n{output[-3000:]}"
    assert re.search(rf"{host}\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", proc.stdout), proc.stdout[-2000:]


@pytest.mark.parametrize("case", sorted(LOCAL_CASES))
def test_bad_input_fails_in_preflight(tmp_path: Path, case: str) -> None:
    variables, expected = LOCAL_CASES[case]
    assert_fails_with(localhost(tmp_path, variables), "localhost", expected)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """Bench nodes for the cases that need GPUs, an OS or package sources; yields the inventory file."""
    tmp = tmp_path_factory.mktemp("driver-preflight")
    inventory = tmp / "hosts.json"
    specs = [{"name": name, "image": image, "hardware": hardware} for name, (image, hardware) in NODES.items()]
    started = subprocess.run(
        [sys.executable, str(BENCH), "nodes", "up", "--prefix", GROUP, json.dumps(specs), "--inventory",
         str(inventory)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    try:
        containers = {node["instance"]: node["container"] for node in json.loads(started.stdout)}

        def on(node, *argv):
            subprocess.run(["podman", "exec", containers[node], *argv], check=True, capture_output=True)

        # What stage 1 leaves behind on l40s: Debian's archive with the components NVIDIA's packages are in,
        # through the bench's mirror (a cache). bare keeps the image's main-only sources.
        on("l40s", "sh", "-c", f"echo 'deb {MIRROR}/deb.debian.org/debian trixie main contrib non-free "
           f"non-free-firmware' > /etc/apt/sources.list")  # fmt: skip
        # A real Ubuntu 24.04 os-release (tests/fixtures/os-release, public) on ubuntu.
        on("ubuntu", "rm", "-f", "/etc/os-release")
        subprocess.run(
            ["podman", "cp", str(ROOT / "tests" / "fixtures" / "os-release" / "ubuntu-24.04"),
             f"{containers['ubuntu']}:/etc/os-release"],
            check=True,
        )  # fmt: skip
        yield inventory
    finally:
        subprocess.run([sys.executable, str(BENCH), "nodes", "down", GROUP], check=True)


@pytest.mark.parametrize("case", sorted(NODE_CASES))
def test_bad_input_on_a_node_fails_in_preflight(tmp_path: Path, nodes: Path, case: str) -> None:
    node, variables, expected = NODE_CASES[case]
    assert_fails_with(run_preflight(tmp_path, ["--inventory", str(nodes)], variables, limit=node), node, expected)


def test_valid_input_passes_preflight_and_changes_nothing(tmp_path: Path, nodes: Path) -> None:
    """The control: the defaults on the L40S node pass, so the failures above come from the input."""
    proc = run_preflight(tmp_path, ["--inventory", str(nodes)], {}, limit="l40s")
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode == 0, output[-3000:]
    assert "l40s: NVIDIA driver 535." in output
    assert "(nvidia-graphics-drivers-tesla-535, proprietary kernel modules: the GPUs (4x NVIDIA L40S (ada)" in output
    assert re.search(r"l40s\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", proc.stdout), proc.stdout[-2000:]
