"""nvidia_driver's cuda_repo source on the OSes the bench cannot install: its data and preflight, per OS.

Each node is a bench container whose /etc/os-release is a real one of that OS (tests/fixtures/os-release, sources in
SOURCES.md): os_facts reads it as it would on that OS, the role loads that OS's variables, resolves NVIDIA's
repository for it (through the bench's mirror, where index-only stand-ins of NVIDIA's ubuntu2204 and ubuntu2404
repositories stand: tests/standins/cuda-repo-ubuntu*-driver) and plans the packages it would install. Only
preflight runs, in check mode: installing needs the real OS. Rocky and RHEL are refused with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_harness import BENCH_KEY_FINGERPRINT, MIRROR, CaseRun, bench_nodes, node_cases

PLAYBOOK = Path(__file__).with_name("driver_preflight.yml")
TAG = "nvidia_driver_preflight"
GROUP = "driver-os-matrix"
CUDA_REPO = {
    "nvidia_driver_source": "cuda_repo",
    "nvidia_driver_branch": "550",
    "gpuops_mirror_url": MIRROR,
    "nvidia_driver_cuda_repo_key_fingerprint": BENCH_KEY_FINGERPRINT,
}
# node -> os-release fixture
UBUNTU = {"ubuntu2204": "ubuntu-22.04", "ubuntu2404": "ubuntu-24.04"}
REFUSED = {"rocky8": "rocky-8.3", "rhel9": "rhel-9.6"}


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    specs = [{"name": name, "image": "debian12"} for name in [*UBUNTU, *REFUSED]]
    with bench_nodes(tmp_path_factory, GROUP, specs) as started:
        for name, release in {**UBUNTU, **REFUSED}.items():
            # Debian's archive through the mirror for the kernel headers the plan reads; the OS's os-release.
            started.debian_sources(name, "bookworm")
            started.os_release(name, release)
        yield started.inventory


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory, nodes: Path) -> CaseRun:
    """Every case of this module in one run: per Ubuntu release, a plan per flavor and a version the repository
    lacks; per refused OS, the refusal. Each case's host is named <case>_<node>."""
    cases = {
        **{f"plan_{flavor}_{node}": (node, {**CUDA_REPO, "nvidia_driver_flavor": flavor})
           for node in UBUNTU for flavor in ("proprietary", "open")},
        **{f"version_{node}": (node, {**CUDA_REPO, "nvidia_driver_version": "550.127.05"}) for node in UBUNTU},
        **{f"refused_{node}": (node, CUDA_REPO) for node in REFUSED},
    }  # fmt: skip
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("matrix"), node_cases(nodes, cases))


@pytest.mark.parametrize("node", sorted(UBUNTU))
@pytest.mark.parametrize("flavor", ["proprietary", "open"])
def test_ubuntu_plans_nvidias_packages_for_its_release(matrix_run: CaseRun, node: str, flavor: str) -> None:
    host = f"plan_{flavor}_{node}"
    output = matrix_run.assert_passes_unchanged(host)
    dkms = "nvidia-dkms-550" + ("-open" if flavor == "open" else "")
    assert f"{host}: NVIDIA driver 550.163.01 (NVIDIA's Ubuntu repository, {flavor} kernel modules" in output
    assert "DKMS module nvidia for kernel(s) " in output
    assert (
        f"packages {dkms}=550.163.01-0ubuntu1, nvidia-utils-550=550.163.01-0ubuntu1, "
        "libnvidia-compute-550=550.163.01-0ubuntu1, nvidia-compute-utils-550=550.163.01-0ubuntu1, "
        "libnvidia-cfg1-550=550.163.01-0ubuntu1." in output
    )


@pytest.mark.parametrize("node", sorted(UBUNTU))
def test_ubuntu_reads_its_own_nvidia_repository(matrix_run: CaseRun, node: str) -> None:
    """A version the release's repository lacks names that repository: the role picked the release's URL."""
    matrix_run.assert_fails_with(
        f"version_{node}",
        [
            "{host}: nvidia_driver_version is 550.127.05, which NVIDIA's CUDA repository packages for Ubuntu "
            f"(http://gpuops-mirror:8080/developer.download.nvidia.com/compute/cuda/repos/{node}/x86_64/) do not "
            "carry for branch 550 with the proprietary kernel modules (they carry 550.163.01 (NVIDIA's Ubuntu "
            "repository), 550.144.03 (NVIDIA's Ubuntu repository)).",
        ],
    )


@pytest.mark.parametrize("node", sorted(REFUSED))
def test_rocky_and_rhel_are_refused_with_the_reason(matrix_run: CaseRun, node: str) -> None:
    matrix_run.assert_fails_with(
        f"refused_{node}",
        [
            "nvidia_driver_source is cuda_repo: NVIDIA's CUDA network repository, which this collection supports on "
            "Debian 12, Ubuntu 22.04 and Ubuntu 24.04; {host} runs",
            "NVIDIA's rhel8 and rhel9 repositories serve the driver as dnf module streams",
        ],
    )
