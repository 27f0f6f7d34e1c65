"""cuda_toolkit's cuda_repo preflight on every OS NVIDIA's CUDA repository serves that cannot install here.

Each node is a bench container (Debian 12) whose /etc/os-release is a real one of that OS (tests/fixtures/os-release,
sources in SOURCES.md): os_facts reads it as it would on that OS, the role loads that OS's variables and runs its
preflight in check mode through the bench's mirror. On Ubuntu the preflight reads NVIDIA's index for that release
from the mirror and stops there: the bench's ubuntu2204/ubuntu2404 stand-ins carry driver and NCCL packages only
(tests/standins/cuda-repo-ubuntu*-*), so the toolkit version is missing. On Rocky Linux and RHEL the node also has
Debian's rpm and dnf (what RHEL's package tools are): the preflight reads the bench's stand-in of NVIDIA's rhel8/rhel9
repository through dnf (tests/standins/cuda-repo-rhel-toolkit), pins its key by the RHEL pin, resolves the versions
in rpm's order and checks the installed driver, which an rpm providing libcuda.so.1 stands for, and reports its plan.
Nothing changes on any node.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import pytest
from preflight_harness import BENCH_KEY_FINGERPRINT, MIRROR, CaseRun, bench_nodes, node_cases

PLAYBOOK = Path(__file__).with_name("cuda_toolkit_preflight.yml")
TAG = "cuda_toolkit_preflight"
GROUP = "cuda-os-matrix"
NVIDIA = f"{MIRROR}/developer.download.nvidia.com/compute/cuda/repos"
# node -> (os-release fixture, NVIDIA's repository for it, the driver rpm installed: NVIDIA's libcuda package)
NODES = {
    "ubuntu2204": ("ubuntu-22.04", "ubuntu2204", None),
    "ubuntu2404": ("ubuntu-24.04", "ubuntu2404", None),
    "rocky8": ("rocky-8.3", "rhel8", "3:550.163.01-1.el8"),
    "rhel9": ("rhel-9.6", "rhel9", "3:550.163.01-1.el9"),
    "rocky9": ("rocky-9.3", "rhel9", None),
}
RHEL = [node for node in NODES if not node.startswith("ubuntu")]
CUDA_REPO = {
    "cuda_toolkit_source": "cuda_repo",
    "cuda_toolkit_versions": ["12.2", "12.4"],
    "gpuops_mirror_url": MIRROR,
    "cuda_toolkit_cuda_repo_key_fingerprint": BENCH_KEY_FINGERPRINT,
    "cuda_toolkit_cuda_repo_rpm_key_fingerprint": BENCH_KEY_FINGERPRINT,
}


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    specs = [{"name": name, "image": "debian12-rpm" if name in RHEL else "debian12"} for name in NODES]
    with bench_nodes(tmp_path_factory, GROUP, specs) as started:

        def prepare(name: str) -> None:
            release, _repository, driver = NODES[name]
            if name in RHEL:
                started.rhel_userland(name, release.split("-")[1].split(".")[0])
            started.os_release(name, release)
            if driver:
                started.rpm_installed(name, "nvidia-driver-cuda-libs", driver, "libcuda.so.1()(64bit)")

        # Each node waits on its package downloads, not on this machine's CPUs: side by side.
        with concurrent.futures.ThreadPoolExecutor(len(NODES)) as pool:
            list(pool.map(prepare, NODES))
        yield started.inventory


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory, nodes: Path) -> CaseRun:
    """Every case of this module in one run; each case's host is named <case>_<node>."""
    cases = {
        **{f"ubuntu_{node}": (node, CUDA_REPO) for node in NODES if node not in RHEL},
        **{f"plan_{node}": (node, CUDA_REPO) for node in ("rocky8", "rhel9")},
        "exact_rhel9": ("rhel9", {**CUDA_REPO, "cuda_toolkit_versions": ["12.4.0"]}),
        "missing_rocky8": ("rocky8", {**CUDA_REPO, "cuda_toolkit_versions": ["12.6"]}),
        "update_rhel9": ("rhel9", {**CUDA_REPO, "cuda_toolkit_versions": ["12.2.1"]}),
        "nodriver_rocky9": ("rocky9", CUDA_REPO),
        # The role's own RHEL pin (NVIDIA's key D42D0685) against the bench's mirror, signed by the bench's key.
        "key_rhel9": ("rhel9", {**CUDA_REPO, "cuda_toolkit_cuda_repo_rpm_key_fingerprint":
                                "610C7B14E068A878070DA4E99CD0A493D42D0685"}),
        "unpinned_rocky8": ("rocky8", {**CUDA_REPO, "cuda_toolkit_cuda_repo_rpm_key_fingerprint": ""}),
        # The Debian/Ubuntu pin is not the one RHEL's repository is checked against.
        "debpin_rhel9": ("rhel9", {**CUDA_REPO, "cuda_toolkit_cuda_repo_key_fingerprint": ""}),
    }  # fmt: skip
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("matrix"), node_cases(nodes, cases))


@pytest.mark.parametrize("node", [n for n in NODES if n not in RHEL])
def test_ubuntu_reads_nvidia_repository_for_its_release_through_the_mirror(matrix_run: CaseRun, node: str) -> None:
    matrix_run.assert_fails_with(
        f"ubuntu_{node}",
        [f"{{host}}: cuda_toolkit_versions names \"12.2\", but the mirror's copy of NVIDIA's CUDA repository "
         f"({NVIDIA}/{NODES[node][1]}/x86_64/) carries no version of cuda-toolkit-12-2. Nothing was changed."],
    )  # fmt: skip


def plan_message(node: str, toolkits: str, default: str) -> str:
    """The plan preflight reports on RHEL and Rocky Linux, read through dnf (the install is test_cuda_toolkit_rhel.py's
    subject; the repository is not configured here, so nothing is simulated yet)."""
    return f"{node}: {toolkits}; /usr/local/cuda -> /usr/local/cuda-{default}; driver 550.163.01 (needs >= "


@pytest.mark.parametrize("case", ["plan_rocky8", "plan_rhel9", "debpin_rhel9"])
def test_rhel_reads_nvidia_repository_through_dnf_and_plans(matrix_run: CaseRun, case: str) -> None:
    """The newest of each minor by rpm's order, from the release's repository, the RHEL key pinned."""
    output = matrix_run.assert_passes_unchanged(case)
    toolkits = ("CUDA 12.2.2 (cuda-toolkit-12-2 12.2.2-1) under /usr/local/cuda-12.2; CUDA 12.4.1 (cuda-toolkit-12-4 "
                "12.4.1-1) under /usr/local/cuda-12.4")  # fmt: skip
    assert plan_message(case, toolkits, "12.4") in output, output[-3000:]


def test_rhel_pins_an_exact_update(matrix_run: CaseRun) -> None:
    output = matrix_run.assert_passes_unchanged("exact_rhel9")
    expected = plan_message(
        "exact_rhel9", "CUDA 12.4.0 (cuda-toolkit-12-4 12.4.0-1) under /usr/local/cuda-12.4", "12.4"
    )
    assert expected in output, output[-3000:]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing_rocky8", f"{{host}}: cuda_toolkit_versions names \"12.6\", but the mirror's copy of NVIDIA's CUDA "
                           f"repository ({NVIDIA}/rhel8/x86_64/) carries no version of cuda-toolkit-12-6. Nothing was "
                           "changed."),
        ("update_rhel9", f"{{host}}: cuda_toolkit_versions names \"12.2.1\", but the mirror's copy of NVIDIA's CUDA "
                         f"repository ({NVIDIA}/rhel9/x86_64/) carries 12.2.0-1, 12.2.2-1 of cuda-toolkit-12-2. "
                         'Nothing was changed. Fix: a version it carries (cuda_toolkit_versions: ["12.2"], the newest '
                         "it carries)"),
        ("nodriver_rocky9", "{host} has no NVIDIA driver userland installed (no package provides libcuda.so.1), and "
                            "installing CUDA 12.2.2 (cuda-toolkit-12-2 12.2.2-1), CUDA 12.4.1 (cuda-toolkit-12-4 "
                            "12.4.1-1) would pull one in"),
        ("key_rhel9", f"{{host}}: the signing key {NVIDIA}/rhel9/x86_64/D42D0685.pub holds"),
        ("key_rhel9", "but cuda_toolkit_cuda_repo_rpm_key_fingerprint is 610C7B14E068A878070DA4E99CD0A493D42D0685: "
                      "refusing to trust it. Nothing was changed."),
        ("unpinned_rocky8", "Fix: cuda_toolkit_cuda_repo_rpm_key_fingerprint: 610C7B14E068A878070DA4E99CD0A493D42D0685 "
                            "(NVIDIA's key D42D0685, the role's default)"),
    ],
)  # fmt: skip
def test_rhel_refuses_before_any_change(matrix_run: CaseRun, case: str, expected: str) -> None:
    matrix_run.assert_fails_with(case, [expected])
