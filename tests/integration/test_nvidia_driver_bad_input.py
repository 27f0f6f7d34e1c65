"""nvidia_driver's bad input fails in preflight, before any change, with a message naming the variable, the value and
the fix.

Variable-only cases run against the machine running the tests (it has no NVIDIA GPU and no NVSwitch). Cases that
need GPUs, an OS or package sources run against bench nodes: simulated hardware profiles (tests/sim) give
pci_facts an HGX H100 with NVSwitches, a 4x L40S, 2x V100S (pre-Turing) and an HGX B200 (Blackwell) to read;
their preflight reads the node and checks, in check mode, and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_harness import (
    BENCH_KEY_FINGERPRINT,
    MIRROR,
    CaseRun,
    bench_nodes,
    local_case_tests,
    node_cases,
)

PLAYBOOK = Path(__file__).with_name("nvidia_driver_preflight.yml")
TAG = "nvidia_driver_preflight"
GROUP = "driver-preflight"

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
            "nvidia_driver_fabricmanager is true but {host} has no NVSwitch: none on its PCI bus",
            "Fix: nvidia_driver_fabricmanager: auto (or false).",
        ],
    ),
    "source_unknown": (
        {"nvidia_driver_source": "runfile"},
        ["value of nvidia_driver_source must be one of: distribution, cuda_repo, got: runfile"],
    ),
    "kubeconfig_missing_on_the_controller": (
        {"nvidia_driver_kubeconfig": "/nonexistent/admin.conf"},
        [
            'nvidia_driver_kubeconfig is "/nonexistent/admin.conf", which is not a file on the controller: the role '
            "reaches the Kubernetes API (the Node, its labels, Ready, cordon and drain) from here."
        ],
    ),
    "drain_hook_missing": (
        {"nvidia_driver_drain": "hook"},
        ["nvidia_driver_drain is hook but nvidia_driver_drain_hook is empty. Fix: nvidia_driver_drain_hook: the path"],
    ),
    "drain_hook_not_a_file": (
        {"nvidia_driver_undrain_hook": "/nonexistent/undrain.yml"},
        [
            'nvidia_driver_undrain_hook is "/nonexistent/undrain.yml", which is no task file on the controller (an '
            "absolute path is needed). Fix: the absolute path of a task file",
        ],
    ),
    "drain_hook_relative": (
        {"nvidia_driver_drain_hook": "tests/integration/nvidia_driver_preflight.yml"},
        [
            'nvidia_driver_drain_hook is "tests/integration/nvidia_driver_preflight.yml", which is no task file on the '
            "controller",
        ],
    ),
    "drain_unknown": (
        {"nvidia_driver_drain": "slurm"},
        ["value of nvidia_driver_drain must be one of: auto, kubernetes, hook, none, got: slurm"],
    ),
    "flavor_unknown": (
        {"nvidia_driver_flavor": "nouveau"},
        ["value of nvidia_driver_flavor must be one of: auto, open, proprietary, got: nouveau"],
    ),
    # The variables', the controller's and the node's problems in one failure, so one round of fixes clears the node.
    "every_problem_at_once": (
        {
            "nvidia_driver_branch": "R535",
            "nvidia_driver_drain": "hook",
            "nvidia_driver_undrain_hook": "/nonexistent/undrain.yml",
            "nvidia_driver_kubeconfig": "/nonexistent/admin.conf",
            "nvidia_driver_fabricmanager": True,
        },
        [
            'nvidia_driver_branch is "R535", not a driver branch. Fix: the branch number as a string',
            " | nvidia_driver_drain is hook but nvidia_driver_drain_hook is empty.",
            ' | nvidia_driver_undrain_hook is "/nonexistent/undrain.yml", which is no task file on the controller',
            ' | nvidia_driver_kubeconfig is "/nonexistent/admin.conf", which is not a file on the controller',
            " | nvidia_driver_fabricmanager is true but {host} has no NVSwitch: none on its PCI bus",
        ],
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
# NVIDIA's repository through the mirror, for DCGM (on by default) where the driver is Debian's: what a node that
# reaches NVIDIA's repository has, so that a case fails on its own input.
MIRRORED = {"gpuops_mirror_url": MIRROR, "nvidia_driver_cuda_repo_key_fingerprint": BENCH_KEY_FINGERPRINT}
# The driver from the bench's stand-in of NVIDIA's debian12 repository, through the mirror.
CUDA_REPO = {"nvidia_driver_source": "cuda_repo", **MIRRORED}

NODE_CASES = {
    "open_modules_on_pre_turing_gpus": (
        "v100s",
        {"nvidia_driver_branch": "550", "nvidia_driver_flavor": "open"},
        [
            "{host}: nvidia_driver_flavor is open but 2x Tesla V100S-PCIE-32GB (volta) at 0000:5e:00.0, 0000:d8:00.0 "
            "cannot use NVIDIA's open kernel modules",
            "Fix: nvidia_driver_flavor: proprietary (or auto, which picks it).",
        ],
    ),
    "blackwell_needs_open_modules_the_branch_lacks": (
        "b200",
        {},
        [
            "{host}: nvidia_driver_flavor is auto and picks the open kernel modules (8x NVIDIA B200 (blackwell) at "
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
            "{host}: nvidia_driver_flavor is open but Debian 13's own packages have no open kernel modules for branch "
            "535",
            "or nvidia_driver_flavor: auto.",
        ],
    ),
    "fabric_manager_repository_key_without_a_pin": (
        "h100",
        {"gpuops_mirror_url": MIRROR, "nvidia_driver_cuda_repo_key_fingerprint": ""},
        [
            "{host} needs NVIDIA's CUDA repository (fabric manager: nvidia_driver_fabricmanager is auto, 4 "
            "NVSwitch(es) on the PCI bus), but its key_url https://developer.download.nvidia.com/compute/cuda/repos/"
            "debian12/x86_64/3bf863cc.pub needs its pin: key_fingerprint (as the vendor publishes it) or key_sha256",
            "Fix: nvidia_driver_cuda_repo_key_fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC",
            "or nvidia_driver_fabricmanager: false to install the driver alone on purpose.",
        ],
    ),
    # The mirror serves the bench's key where NVIDIA's should be: with the role's default pin (NVIDIA's key), the
    # repository is refused before any change, as a tampered or mistaken mirror would be.
    "fabric_manager_repository_signed_by_another_key": (
        "h100",
        {"gpuops_mirror_url": MIRROR},
        [
            "{host}: the signing key http://gpuops-mirror:8080/developer.download.nvidia.com/compute/cuda/repos/debian12/"
            "x86_64/3bf863cc.pub holds ",
            "but nvidia_driver_cuda_repo_key_fingerprint is EB693B3035CD5710E231E123A4B469963BF863CC: refusing to "
            "trust it.",
        ],
    ),
    # Debian 12's Tesla set is 535.216.03, which the stand-in CUDA repository has no fabric manager for.
    "fabric_manager_version_missing_from_the_repository": (
        "h100",
        {
            "gpuops_mirror_url": MIRROR,
            "nvidia_driver_cuda_repo_key_fingerprint": BENCH_KEY_FINGERPRINT,
            "nvidia_driver_branch": "535",
            "nvidia_driver_version": "535.216.03",
        },
        [
            "{host}: fabric manager must run at exactly the driver's version, 535.216.03 (nvidia-tesla-535-kernel-dkms "
            "535.216.03-3~deb12u1), but the mirror's copy of NVIDIA's CUDA repository (http://gpuops-mirror:8080/"
            "developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/) carries nvidia-fabricmanager-535 only "
            "at 535.261.03, 535.274.02, 535.288.01, 535.309.01",
            "Fix: a driver version the repository has fabric manager for",
        ],
    ),
    # The stand-in CUDA repository carries DCGM 4.2.3 and 4.4.1.
    "dcgm_version_missing_from_the_repository": (
        "h100",
        {
            "gpuops_mirror_url": MIRROR,
            "nvidia_driver_cuda_repo_key_fingerprint": BENCH_KEY_FINGERPRINT,
            "nvidia_driver_dcgm": "true",
            "nvidia_driver_dcgm_version": "4.3.0",
        },
        [
            "{host}: nvidia_driver_dcgm_version is 4.3.0, for driver 535.",
            "(CUDA 12 plugins), but the mirror's copy of NVIDIA's CUDA repository (http://gpuops-mirror:8080/"
            "developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/) carries datacenter-gpu-manager-4-core, "
            "datacenter-gpu-manager-4-proprietary, datacenter-gpu-manager-4-cuda12, "
            "datacenter-gpu-manager-4-proprietary-cuda12 at no version 4.3.0; it carries datacenter-gpu-manager-4-core "
            "at 4.2.3, 4.4.1.",
            "Fix: one of those versions in nvidia_driver_dcgm_version",
        ],
    ),
    # A PCIe node needs NVIDIA's repository for DCGM alone.
    "dcgm_repository_key_without_a_pin": (
        "l40s",
        {"gpuops_mirror_url": MIRROR, "nvidia_driver_cuda_repo_key_fingerprint": "", "nvidia_driver_dcgm": True},
        [
            "{host} needs NVIDIA's CUDA repository (DCGM: nvidia_driver_dcgm is true), but its key_url",
            "or nvidia_driver_dcgm: false.",
        ],
    ),
    "fabric_manager_forced_on_a_pcie_node": (
        "l40s",
        {"nvidia_driver_fabricmanager": True},
        [
            "nvidia_driver_fabricmanager is true but {host} has no NVSwitch: none on its PCI bus (4 NVIDIA GPU(s): "
            "NVIDIA L40S)",
        ],
    ),
    "unsupported_os": (
        "ubuntu",
        {},
        [
            "nvidia_driver_source is distribution: the OS's own packages, which this collection supports on Debian "
            "12 and 13 (their non-free NVIDIA packages); {host} runs Ubuntu 24.04",
            "Fix: a supported release, or nvidia_driver_source: cuda_repo (NVIDIA's CUDA repository, for Debian 12, "
            "Ubuntu 22.04/24.04, Rocky Linux and RHEL 8/9).",
        ],
    ),
    "sources_without_non_free": (
        "bare",
        MIRRORED,
        [
            "{host}: Debian 13's own packages carry no version of nvidia-tesla-535-kernel-dkms (nor of 5 more packages "
            "of the set) (branch 535, proprietary kernel modules): the OS sources lack Debian's contrib, non-free and "
            "non-free-firmware components",
        ],
    ),
    # NVIDIA's debian13 repository carries R580 and later only, under another key: the role refuses the source there.
    "cuda_repo_on_debian_13": (
        "l40s",
        {"nvidia_driver_source": "cuda_repo"},
        [
            "nvidia_driver_source is cuda_repo: NVIDIA's CUDA network repository, which this collection supports on "
            "Debian 12, Ubuntu 22.04 and 24.04, and Rocky Linux and RHEL 8 and 9; {host} runs Debian GNU/Linux 13 "
            "(trixie) (ID=debian, "
            "VERSION_ID=13). NVIDIA's debian13 repository carries driver branches 580 and later only",
            "Fix: nvidia_driver_source: distribution (Debian 13's 535 and 550 packages",
        ],
    ),
    "cuda_repo_branch_not_for_the_os": (
        "h100",
        {**CUDA_REPO, "nvidia_driver_branch": "470"},
        [
            'nvidia_driver_branch is "470", which NVIDIA\'s CUDA repository packages for Debian 12 '
            "(nvidia_driver_source: cuda_repo) do not carry: they carry branches 535, 550, 560, 565, 570, 575, 580. "
            'Fix: nvidia_driver_branch: "580" (or "" for the default).',
        ],
    ),
    # The mirror's copy of NVIDIA's repository holds 550 and 580 only (tests/standins/cuda-repo-debian12-driver).
    "cuda_repo_branch_missing_from_the_mirror": (
        "h100",
        {**CUDA_REPO, "nvidia_driver_branch": "535"},
        [
            "{host}: NVIDIA's CUDA repository packages for Debian 12 (http://gpuops-mirror:8080/developer.download.nvidia"
            ".com/compute/cuda/repos/debian12/x86_64/) carry no version of nvidia-kernel-dkms of branch 535 "
            '(proprietary kernel modules). Fix: nvidia_driver_branch: "580" (it carries 550, 580), or bring branch '
            "535 into NVIDIA's debian12 repository (nvidia_driver_cuda_repo_url)",
        ],
    ),
    "cuda_repo_version_missing_from_the_repository": (
        "h100",
        {**CUDA_REPO, "nvidia_driver_branch": "550", "nvidia_driver_version": "550.127.05"},
        [
            "{host}: nvidia_driver_version is 550.127.05, which NVIDIA's CUDA repository packages for Debian 12 "
            "(http://gpuops-mirror:8080/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/) do not "
            "carry for branch 550 with the proprietary kernel modules (they carry 550.163.01 (NVIDIA's debian12 "
            "repository), 550.144.03 (NVIDIA's debian12 repository), 550.90.07 (NVIDIA's debian12 repository)).",
        ],
    ),
    "cuda_repo_key_without_a_pin": (
        "h100",
        {**CUDA_REPO, "nvidia_driver_cuda_repo_key_fingerprint": ""},
        [
            "{host} needs NVIDIA's CUDA repository (the driver: nvidia_driver_source is cuda_repo), but its key_url "
            "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub needs its pin",
        ],
    ),
    # What the package sources carry, judged together: NVIDIA's repository signed by another key than its pin (the
    # mirror serves the bench's key), and a version Debian 12 does not carry, in one failure.
    "every_problem_in_the_package_sources_at_once": (
        "h100",
        {"gpuops_mirror_url": MIRROR, "nvidia_driver_branch": "535", "nvidia_driver_version": "535.54.03"},
        [
            "{host}: the signing key http://gpuops-mirror:8080/developer.download.nvidia.com/compute/cuda/repos/debian12/"
            "x86_64/3bf863cc.pub holds ",
            "or correct the pins. | {host}: nvidia_driver_version is 535.54.03, which Debian 12's own packages do not "
            "carry for branch 535 with the proprietary kernel modules",
        ],
    ),
    "version_the_source_does_not_carry": (
        "l40s",
        {**MIRRORED, "nvidia_driver_branch": "535", "nvidia_driver_version": "535.54.03"},
        [
            "{host}: nvidia_driver_version is 535.54.03, which Debian 13's own packages do not carry for branch 535 "
            "with the proprietary kernel modules (they carry 535.",
            'or nvidia_driver_version: "" for the newest.',
        ],
    ),
}


case_run, test_bad_input_fails_in_preflight = local_case_tests(PLAYBOOK, TAG, LOCAL_CASES)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """Bench nodes for the cases that need GPUs, an OS or package sources; yields the inventory file."""
    specs = [{"name": name, "image": image, "hardware": hardware} for name, (image, hardware) in NODES.items()]
    with bench_nodes(tmp_path_factory, GROUP, specs) as started:
        # What stage 1 leaves behind on l40s and h100. bare keeps the image's main-only sources.
        started.debian_sources("l40s", "trixie")
        started.debian_sources("h100", "bookworm")
        started.ubuntu("ubuntu")
        yield started.inventory


@pytest.fixture(scope="module")
def node_run(tmp_path_factory, nodes: Path) -> CaseRun:
    """Every node case, and the control (the defaults on the L40S node), in one run."""
    cases = {case: (node, variables) for case, (node, variables, _expected) in NODE_CASES.items()}
    hosts = node_cases(nodes, {**cases, "control": ("l40s", MIRRORED)})
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("nodes"), hosts)


@pytest.mark.parametrize("case", sorted(NODE_CASES))
def test_bad_input_on_a_node_fails_in_preflight(node_run: CaseRun, case: str) -> None:
    node_run.assert_fails_with(case, NODE_CASES[case][2])


def test_valid_input_passes_preflight_and_changes_nothing(node_run: CaseRun) -> None:
    """The control: the defaults on the L40S node pass (NVIDIA's repository through the mirror, for DCGM), so the
    failures above come from the input."""
    output = node_run.assert_passes_unchanged("control")
    assert "control: NVIDIA driver 535." in output
    assert "(nvidia-graphics-drivers-tesla-535, proprietary kernel modules: the GPUs (4x NVIDIA L40S (ada)" in output
    # DCGM from NVIDIA's repository beside Debian's driver, for the driver's CUDA 12.
    assert (
        "datacenter-gpu-manager-4-core=1:4.4.1-1, datacenter-gpu-manager-4-proprietary=1:4.4.1-1, "
        "datacenter-gpu-manager-4-cuda12=1:4.4.1-1, datacenter-gpu-manager-4-proprietary-cuda12=1:4.4.1-1." in output
    ), output[-3000:]
