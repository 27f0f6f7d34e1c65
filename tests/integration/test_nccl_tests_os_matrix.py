"""nccl_tests' cuda_repo source (NCCL from NVIDIA's CUDA repository) on the Ubuntu releases the bench cannot install.

Each node is a bench container with a simulated HGX H100 whose /etc/os-release is a real one of that Ubuntu release
(tests/fixtures/os-release, sources in SOURCES.md): os_facts reads it as it would on Ubuntu, the role loads that
release's versions, resolves NVIDIA's repository for it (through the bench's mirror, where index-only stand-ins of
NVIDIA's ubuntu2204 and ubuntu2404 repositories stand: tests/standins/cuda-repo-ubuntu*-nccl) and checks the pinned
NCCL against its index and key. Only preflight runs, in check mode: installing needs the real OS. Its package
manager is still Debian 12's, so Ubuntu's own Open MPI is missing there: one case per release shows the release's
pin being asked for, another passes with Debian 12's Open MPI pinned instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_harness import BENCH_KEY_FINGERPRINT, MIRROR, CaseRun, bench_nodes, hardware_profile, node_cases

PLAYBOOK = Path(__file__).with_name("nccl_tests_preflight.yml")
TAG = "nccl_tests_preflight"
GROUP = "nccl-os-matrix"
# The inventory's own profile.
H100 = hardware_profile("hgx_h100_8gpu")
CUDA_REPO = {
    "gpuops_hardware": H100,
    "nccl_tests_nccl_source": "cuda_repo",
    "gpuops_mirror_url": MIRROR,
    "nccl_tests_cuda_repo_key_fingerprint": BENCH_KEY_FINGERPRINT,
}
# node -> (os-release fixture, the release's Open MPI, the older NCCL build its stand-in repository carries)
UBUNTU = {
    "ubuntu2204": ("ubuntu-22.04", "4.1.2-2ubuntu1", "2.21.5-1+cuda12.4"),
    "ubuntu2404": ("ubuntu-24.04", "4.1.6-7ubuntu2", "2.21.5-1+cuda12.5"),
}
# Debian 12's Open MPI, which the nodes' apt (Debian 12's) carries.
BOOKWORM_OPENMPI = "4.1.4-3+b1"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    specs = [{"name": name, "image": "debian12", "hardware": "hgx_h100_8gpu"} for name in UBUNTU]
    with bench_nodes(tmp_path_factory, GROUP, specs) as started:
        for name, (release, *_unused) in UBUNTU.items():
            started.debian_sources(name, "bookworm")
            started.os_release(name, release)
        yield started.inventory


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory, nodes: Path) -> CaseRun:
    """Every case of this module in one run; each case's host is named <case>_<node>."""
    cases = {
        **{f"openmpi_{node}": (node, CUDA_REPO) for node in UBUNTU},
        **{f"passes_{node}": (node, {**CUDA_REPO, "nccl_tests_openmpi_version": BOOKWORM_OPENMPI}) for node in UBUNTU},
        **{f"older_{node}": (node, {**CUDA_REPO, "nccl_tests_openmpi_version": BOOKWORM_OPENMPI,
                                    "nccl_tests_nccl_version": UBUNTU[node][2]}) for node in UBUNTU},
        **{f"missing_{node}": (node, {**CUDA_REPO, "nccl_tests_nccl_version": "2.22.3-1+cuda12.6"}) for node in UBUNTU},
        **{f"distribution_{node}": (node, {"gpuops_hardware": H100}) for node in UBUNTU},
        "unpinned_ubuntu2204": ("ubuntu2204", {**CUDA_REPO, "nccl_tests_cuda_repo_key_fingerprint": ""}),
        # The role's own pin (NVIDIA's key) against the bench's mirror, signed by the bench's key.
        "key_ubuntu2404": ("ubuntu2404", {**CUDA_REPO, "nccl_tests_cuda_repo_key_fingerprint":
                                          "EB693B3035CD5710E231E123A4B469963BF863CC"}),
    }  # fmt: skip
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("matrix"), node_cases(nodes, cases))


@pytest.mark.parametrize("node", sorted(UBUNTU))
def test_the_release_pins_its_own_open_mpi(matrix_run: CaseRun, node: str) -> None:
    """NVIDIA's NCCL passed its repository's checks; the release's Open MPI is asked of apt (Debian 12's here)."""
    openmpi = UBUNTU[node][1]
    matrix_run.assert_fails_with(
        f"openmpi_{node}",
        [f"{{host}}: the package sources do not carry openmpi-bin={openmpi}, libopenmpi-dev={openmpi} (available: "
         f"openmpi-bin {BOOKWORM_OPENMPI}; libopenmpi-dev {BOOKWORM_OPENMPI})."],
    )  # fmt: skip


@pytest.mark.parametrize("case", ["passes", "older"])
@pytest.mark.parametrize("node", sorted(UBUNTU))
def test_nvidias_nccl_passes_preflight(matrix_run: CaseRun, node: str, case: str) -> None:
    """The default build and an older one of the release's repository: found, key pinned, nothing changed."""
    matrix_run.assert_passes_unchanged(f"{case}_{node}")


@pytest.mark.parametrize("node", sorted(UBUNTU))
def test_a_build_the_repository_lacks_names_the_releases_repository(matrix_run: CaseRun, node: str) -> None:
    older = UBUNTU[node][2]
    matrix_run.assert_fails_with(
        f"missing_{node}",
        [f"{{host}}: NVIDIA's CUDA repository ({MIRROR}/developer.download.nvidia.com/compute/cuda/repos/{node}/x86_64/"
         "Packages.gz) does not carry libnccl2=2.22.3-1+cuda12.6, libnccl-dev=2.22.3-1+cuda12.6 (it carries "
         f"libnccl2 {older} 2.23.4-1+cuda12.6; libnccl-dev {older} 2.23.4-1+cuda12.6). Nothing was changed. Fix: "
         "nccl_tests_nccl_version set to one of those versions"],
    )  # fmt: skip


@pytest.mark.parametrize("node", sorted(UBUNTU))
def test_ubuntu_has_no_distribution_source(matrix_run: CaseRun, node: str) -> None:
    matrix_run.assert_fails_with(
        f"distribution_{node}",
        ["nccl_tests_nccl_source is distribution (the OS's own libnccl2 and libnccl-dev), which this collection "
         "supports on Debian 13 (contrib, NCCL 2.22.3); {host} runs Ubuntu",
         "Fix: a Debian 13 node, or nccl_tests_nccl_source: cuda_repo on Ubuntu 22.04 or 24.04."],
    )  # fmt: skip


def test_another_key_than_the_pinned_one_is_refused(matrix_run: CaseRun) -> None:
    matrix_run.assert_fails_with(
        "key_ubuntu2404",
        ["but nccl_tests_cuda_repo_key_fingerprint is EB693B3035CD5710E231E123A4B469963BF863CC: refusing to trust "
         "it. Nothing was changed."],
    )  # fmt: skip


def test_a_repository_without_its_key_pinned_is_not_read(matrix_run: CaseRun) -> None:
    matrix_run.assert_fails_with(
        "unpinned_ubuntu2204",
        ["nccl_tests_nccl_source is cuda_repo, but NVIDIA's CUDA repository's key_url "
         "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub needs its pin",
         "no repository is trusted without its key pinned. Fix: nccl_tests_cuda_repo_key_fingerprint: "
         "EB693B3035CD5710E231E123A4B469963BF863CC (NVIDIA's key 3bf863cc, the role's default)"],
    )  # fmt: skip
