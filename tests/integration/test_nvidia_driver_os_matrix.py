"""nvidia_driver's cuda_repo source on the OSes the bench cannot install: its data and preflight, per OS.

Each node is a bench container whose /etc/os-release is a real one of that OS (tests/fixtures/os-release, sources in
SOURCES.md): os_facts reads it as it would on that OS, the role loads that OS's variables, resolves NVIDIA's
repository for it (through the bench's mirror, where index-only stand-ins of NVIDIA's ubuntu2204, ubuntu2404 and
rhel9 repositories stand: tests/standins/cuda-repo-ubuntu*-driver, cuda-repo-rhel9-driver) and plans the packages it
would install. Only preflight runs, in check mode (test_nvidia_driver_rhel.py installs on RHEL 9). Rocky Linux and
RHEL nodes also have Debian's rpm and dnf (what RHEL's package tools are), which read NVIDIA's repository and the
installed packages; the rhel9 node has an rpm record of dkms (EPEL's on RHEL), which rocky9 lacks.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import pytest
from preflight_harness import BENCH_KEY_FINGERPRINT, MIRROR, CaseRun, bench_nodes, node_cases

PLAYBOOK = Path(__file__).with_name("nvidia_driver_preflight.yml")
TAG = "nvidia_driver_preflight"
GROUP = "driver-os-matrix"
CUDA_REPO = {
    "nvidia_driver_source": "cuda_repo",
    "nvidia_driver_branch": "550",
    "gpuops_mirror_url": MIRROR,
    "nvidia_driver_cuda_repo_key_fingerprint": BENCH_KEY_FINGERPRINT,
    "nvidia_driver_cuda_repo_rpm_key_fingerprint": BENCH_KEY_FINGERPRINT,
}
# node -> os-release fixture
UBUNTU = {"ubuntu2204": "ubuntu-22.04", "ubuntu2404": "ubuntu-24.04"}
RHEL = {"rocky8": "rocky-8.3", "rhel9": "rhel-9.6", "rocky9": "rocky-9.3"}
NVIDIA = f"{MIRROR}/developer.download.nvidia.com/compute/cuda/repos"
# An HGX board whose NVSwitches its hardware profile declares: fabric manager joins the plan.
NVSWITCH = {"gpuops_hardware": {"profile": "hgx_h100_8gpu", "gpu": {"nvswitch": True}}}
# DCGM (nvidia_driver_dcgm, on by default) at the role's pinned version, NVIDIA's epoch 1, for the driver's CUDA 12.
DCGM_RPMS = ", ".join(
    f"datacenter-gpu-manager-4-{name}-1:4.4.1-1" for name in ("core", "proprietary", "cuda12", "proprietary-cuda12")
)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    specs = [{"name": name, "image": "debian12-rpm" if name in RHEL else "debian12"} for name in [*UBUNTU, *RHEL]]
    with bench_nodes(tmp_path_factory, GROUP, specs) as started:

        def prepare(name: str) -> None:
            release = {**UBUNTU, **RHEL}[name]
            if name in RHEL:
                started.rhel_userland(name, release.split("-")[1].split(".")[0])
                # The image's kernel (Debian's, in /lib/modules) is no rpm's: a build tree for it, what an installed
                # kernel-devel leaves, makes it a kernel DKMS can build for without a kernel-devel to install.
                started.sh(name, "for k in /lib/modules/*; do mkdir -p $k/build && touch $k/build/Makefile; done")
                if name == "rhel9":
                    started.rpm_installed(name, "dkms", "3.0.10-8", "dkms")
            else:
                # Debian's archive through the mirror for the kernel headers the plan reads.
                started.debian_sources(name, "bookworm")
            started.os_release(name, release)

        # Each node waits on its package downloads, not on this machine's CPUs: side by side.
        with concurrent.futures.ThreadPoolExecutor(len(specs)) as pool:
            list(pool.map(prepare, [*UBUNTU, *RHEL]))
        yield started.inventory


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory, nodes: Path) -> CaseRun:
    """Every preflight case of this module in one run: per Ubuntu release, a plan per flavor and a version the
    repository lacks; on RHEL 9 a plan per flavor and with fabric manager, a missing version and the other key; on
    Rocky Linux 8 its own (rhel8) repository. Each case's host is named <case>_<node>."""
    cases = {
        **{f"plan_{flavor}_{node}": (node, {**CUDA_REPO, "nvidia_driver_flavor": flavor})
           for node in [*UBUNTU, "rhel9"] for flavor in ("proprietary", "open")},
        **{f"version_{node}": (node, {**CUDA_REPO, "nvidia_driver_version": "550.127.05"}) for node in UBUNTU},
        "fabricmanager_rhel9": ("rhel9", {**CUDA_REPO, **NVSWITCH}),
        "version_rhel9": ("rhel9", {**CUDA_REPO, "nvidia_driver_version": "550.127.05"}),
        "branch_rhel9": ("rhel9", {**CUDA_REPO, "nvidia_driver_branch": "570"}),
        "repository_rocky8": ("rocky8", CUDA_REPO),
        "nodkms_rocky9": ("rocky9", CUDA_REPO),
        # The role's own RHEL pin (NVIDIA's key D42D0685) against the bench's mirror, signed by the bench's key.
        "key_rhel9": ("rhel9", {**CUDA_REPO, "nvidia_driver_cuda_repo_rpm_key_fingerprint":
                                "610C7B14E068A878070DA4E99CD0A493D42D0685"}),
    }  # fmt: skip
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("matrix"), node_cases(nodes, cases))


RHEL9_PLAN = {
    # flavour -> (kernel module package, DKMS module, module stream)
    "proprietary": ("kmod-nvidia-latest-dkms", "nvidia", "550-dkms"),
    "open": ("kmod-nvidia-open-dkms", "nvidia-open", "550-open"),
}


@pytest.mark.parametrize("flavor", ["proprietary", "open"])
def test_rhel_plans_nvidias_rpms_at_exact_evrs(matrix_run: CaseRun, flavor: str) -> None:
    """NVIDIA's rpms, versions compared as rpm does, each asked for as dnf's name-EPOCH:VERSION-RELEASE, epoch 3
    kept; the installed kernel's build tree makes it the DKMS target (no kernel-devel to install)."""
    host = f"plan_{flavor}_rhel9"
    output = matrix_run.assert_passes_unchanged(host)
    kmod, dkms, _stream = RHEL9_PLAN[flavor]
    assert f"{host}: NVIDIA driver 550.163.01 (NVIDIA's RHEL repository, {flavor} kernel modules" in output
    assert f"DKMS module {dkms} for kernel(s) " in output
    assert (
        f"packages {kmod}-3:550.163.01-1.el9, nvidia-kmod-common-3:550.163.01-1.el9, "
        "nvidia-driver-cuda-3:550.163.01-1.el9, nvidia-driver-cuda-libs-3:550.163.01-1.el9, "
        f"nvidia-persistenced-3:550.163.01-1.el9, {DCGM_RPMS}." in output
    ), output[-3000:]


def test_rhel_plans_fabric_manager_at_the_drivers_version(matrix_run: CaseRun) -> None:
    """Below R580 NVIDIA's RHEL fabric manager is nvidia-fabric-manager (no epoch), at the driver's version."""
    output = matrix_run.assert_passes_unchanged("fabricmanager_rhel9")
    assert f"nvidia-persistenced-3:550.163.01-1.el9, nvidia-fabric-manager-550.163.01-1, {DCGM_RPMS}." in output, (
        output[-3000:]
    )


def test_rhel_names_the_versions_its_repository_carries(matrix_run: CaseRun) -> None:
    matrix_run.assert_fails_with(
        "version_rhel9",
        [
            "{host}: nvidia_driver_version is 550.127.05, which NVIDIA's CUDA repository packages for RHEL "
            f"({NVIDIA}/rhel9/x86_64/) do not carry for branch 550 with the proprietary kernel modules (they carry "
            "550.163.01 (NVIDIA's RHEL repository), 550.144.03 (NVIDIA's RHEL repository)).",
        ],
    )


def test_rhel_names_the_branches_its_repository_carries(matrix_run: CaseRun) -> None:
    matrix_run.assert_fails_with(
        "branch_rhel9",
        [
            f"{{host}}: NVIDIA's CUDA repository packages for RHEL ({NVIDIA}/rhel9/x86_64/) carry no version of "
            'kmod-nvidia-open-dkms of branch 570 (open kernel modules). Fix: nvidia_driver_branch: "550" (it carries '
            "550), or bring branch 570 into NVIDIA's RHEL repository (nvidia_driver_cuda_repo_url)",
        ],
    )


def test_rocky8_reads_its_own_rhel8_repository(matrix_run: CaseRun) -> None:
    """The bench's rhel8 stand-in carries toolkits only: the message names the rhel8 repository the role picked."""
    matrix_run.assert_fails_with(
        "repository_rocky8",
        [
            f"{{host}}: NVIDIA's CUDA repository packages for RHEL ({NVIDIA}/rhel8/x86_64/) carry no version of "
            "kmod-nvidia-latest-dkms of branch 550 (proprietary kernel modules).",
        ],
    )


def test_rhel_checks_nvidias_rhel_key_pin(matrix_run: CaseRun) -> None:
    """The RHEL pin (nvidia_driver_cuda_repo_rpm_key_fingerprint), not the Debian/Ubuntu one, is checked there."""
    matrix_run.assert_fails_with(
        "key_rhel9",
        ["nvidia_driver_cuda_repo_rpm_key_fingerprint", "610C7B14E068A878070DA4E99CD0A493D42D0685"],
    )


def test_rhel_without_dkms_in_its_repositories_is_refused(matrix_run: CaseRun) -> None:
    """NVIDIA's DKMS packages require dkms, which RHEL does not carry: preflight says so before any change."""
    matrix_run.assert_fails_with(
        "nodkms_rocky9",
        [
            "{host}: NVIDIA's kmod-nvidia-latest-dkms requires dkms, which is not installed and which none of the "
            "node's repositories carries (RHEL and Rocky Linux do not: EPEL does). Fix: add EPEL",
        ],
    )
