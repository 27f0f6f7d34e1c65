"""cuda_toolkit from NVIDIA's CUDA repository on Rocky Linux 9, whole: preflight, install with dnf, versionlock,
/usr/local/cuda, the login environment, verification; then idempotence, check mode, and a refusal by dnf's resolver.

The node is a bench container (Debian 12) with Rocky Linux 9.3's real os-release and Debian's rpm and dnf (RHEL 9's
dnf version): os_facts reads it as Rocky Linux, and the role goes the dnf way throughout. The repository is the
bench's rpm-md stand-in of NVIDIA's rhel9 repository through the mirror (tests/standins/cuda-repo-rhel-toolkit,
signed by the bench's key, pinned in its place): cuda-toolkit-11-8 and -12-2 whose config-common packages register
/usr/local/cuda in their scriptlets as NVIDIA's do, and whose nvcc answers --version as NVIDIA's and compiles with
Debian 12's REAL nvcc 11.8, which the node has from apt (an rpm cannot depend on a dpkg package). The installed driver
is an rpm providing libcuda.so.1()(64bit) at 535.274.02, as NVIDIA's nvidia-driver-cuda-libs does.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from preflight_harness import BENCH_KEY_FINGERPRINT, MIRROR, ROOT, bench_nodes

PLAYBOOK = Path(__file__).with_name("cuda_toolkit_converge.yml")
NODE = "rocky9"
TOOLKITS = {
    "11.8": ("cuda-toolkit-11-8", "11.8.0-1", "V11.8.89"),
    "12.2": ("cuda-toolkit-12-2", "12.2.2-1", "V12.2.140"),
}
DRIVER = ("nvidia-driver-cuda-libs", "3:535.274.02-1.el9")
VARIABLES = {
    "cuda_toolkit_source": "cuda_repo",
    "cuda_toolkit_versions": ["11.8", "12.2"],
    "cuda_toolkit_default": "12.2",
    "gpuops_mirror_url": MIRROR,
    "cuda_toolkit_cuda_repo_rpm_key_fingerprint": BENCH_KEY_FINGERPRINT,
}
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with bench_nodes(tmp_path_factory, "cuda-rhel", [{"name": NODE, "image": "debian12-rpm"}]) as started:
        started.rhel_userland(NODE, "9")
        # The stand-in nvcc's compiler, from Debian's archive through the mirror.
        started.debian_sources(NODE, "bookworm")
        started.sh(NODE, "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
                         "nvidia-cuda-toolkit")  # fmt: skip
        started.os_release(NODE, "rocky-9.3")
        started.rpm_installed(NODE, DRIVER[0], DRIVER[1], "libcuda.so.1()(64bit)")
        yield started


def converge(inventory: Path, *extra: str, **variables) -> tuple[subprocess.CompletedProcess, tuple[int, int, int]]:
    """Run the role (VARIABLES, some replaced); return the run and the node's (changed, unreachable, failed)."""
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(inventory), "--extra-vars", json.dumps({**VARIABLES, **variables}), *extra,
         str(PLAYBOOK)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    recap = {host: tuple(int(n) for n in counts) for host, *counts in RECAP.findall(proc.stdout)}
    assert NODE in recap, (proc.stdout + proc.stderr)[-4000:]
    return proc, recap[NODE]


def read(node, command: str) -> str:
    container = node.containers[NODE]
    return subprocess.run(["podman", "exec", container, "sh", "-c", command],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip


@pytest.fixture(scope="module")
def converged(node):
    """The first converge, then the second and a check-mode run: (first, second, check) runs with their counts."""
    first = converge(node.inventory)
    second = converge(node.inventory)
    check = converge(node.inventory, "--check", "--diff")
    return first, second, check


def test_the_first_run_installs_and_verifies(converged):
    (proc, (changed, unreachable, failed)), _second, _check = converged
    output = proc.stdout + proc.stderr
    assert (unreachable, failed) == (0, 0), output[-4000:]
    changed_tasks = [" ".join(block.split("]")[0].split()) for block in proc.stdout.split("TASK [")[1:]
                     if "\nchanged: " in block]  # fmt: skip
    # The packages' own scriptlets registered the roots at NVIDIA's priorities: the role only sets the default.
    assert changed_tasks == [
        f"gpuops.bringup.{task}"
        for task in (
            "_common : Add NVIDIA's CUDA repository",
            "cuda_toolkit : Install the CUDA toolkit packages at their versions (dnf)",
            "cuda_toolkit : Hold the CUDA toolkit packages at their versions",
            "cuda_toolkit : Lay out the CUDA roots (bin, nvvm, the nvcc wrapper, links into the packages' files) and "
            "the login profile",
            "cuda_toolkit : Run update-alternatives where the CUDA roots differ from the plan",
        )
    ], output[-4000:]
    assert changed == len(changed_tasks)
    passed = (f"{NODE} passed cuda_toolkit verification: CUDA 11.8.0 (nvcc 11.8.89) under /usr/local/cuda-11.8, "
              "CUDA 12.2.2 (nvcc 12.2.140) under /usr/local/cuda-12.2;")  # fmt: skip
    assert passed in " ".join(output.split()), output[-4000:]


def test_the_second_run_and_check_mode_change_nothing(converged):
    _first, (second, second_counts), (check, check_counts) = converged
    assert second_counts == (0, 0, 0), (second.stdout + second.stderr)[-4000:]
    assert check_counts == (0, 0, 0), (check.stdout + check.stderr)[-4000:]


@pytest.mark.usefixtures("converged")
def test_the_toolkits_are_installed_by_rpm_at_their_versions_and_locked(node):
    installed = read(node, "rpm -q --qf '%{NAME} %{VERSION}-%{RELEASE}\\n' cuda-toolkit-11-8 cuda-toolkit-12-2")
    assert installed.splitlines() == [f"{package} {version}" for package, version, _nvcc in TOOLKITS.values()]
    locks = read(node, "cat /etc/dnf/plugins/versionlock.list")
    for package, version, _nvcc in TOOLKITS.values():
        assert f"\n{package}-0:{version}.*\n" in locks, locks


@pytest.mark.usefixtures("converged")
def test_the_repository_is_checked_by_its_pinned_key(node):
    repo = read(node, "cat /etc/yum.repos.d/nvidia-cuda.repo")
    assert f"baseurl={MIRROR}/developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/\n" in repo
    assert "gpgcheck=1\ngpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-nvidia-cuda\n" in repo
    # dnf imported the key to check the packages: the bench's key, the one the pin named (rpm names it by its last 8).
    fingerprint = json.loads((ROOT / ".bench" / "mirror" / "mirror.json").read_text())["local_repo_key_fingerprint"]
    keys = read(node, "rpm -q gpg-pubkey --qf '%{VERSION}\\n'")
    assert keys.split() == [fingerprint[-8:].lower()]


@pytest.mark.usefixtures("converged")
def test_no_driver_package_came_and_the_driver_is_untouched(node):
    packages = read(node, "rpm -qa --qf '%{NAME}\\n'").split()
    assert not [name for name in packages if name.startswith(("cuda-drivers", "kmod-nvidia", "nvidia-kmod"))]
    assert read(node, f"rpm -q --qf '%{{EPOCH}}:%{{VERSION}}-%{{RELEASE}}' {DRIVER[0]}") == DRIVER[1]


@pytest.mark.usefixtures("converged")
def test_usr_local_cuda_is_the_default_set_by_hand_and_each_root_has_its_nvcc(node):
    assert read(node, "readlink /etc/alternatives/cuda").strip() == "/usr/local/cuda-12.2"
    display = read(node, "LANG=C update-alternatives --display cuda")
    assert "cuda - manual mode\n" in display
    assert "/usr/local/cuda-11.8 - priority 118\n/usr/local/cuda-12.2 - priority 122\n" in display
    for minor, (_package, _version, nvcc) in TOOLKITS.items():
        assert f"release {minor}, {nvcc}" in read(node, f"/usr/local/cuda-{minor}/bin/nvcc --version")
    login = read(node, "env -i PATH=/usr/bin:/bin bash -lc 'echo $CUDA_HOME; command -v nvcc'")
    assert login.splitlines() == ["/usr/local/cuda", "/usr/local/cuda/bin/nvcc"]


@pytest.mark.usefixtures("converged")
def test_dnf_s_resolver_refuses_a_version_the_lock_excludes_before_any_change(node):
    """12.2.2-1 is installed and locked; asking for 12.2.0 exactly makes dnf's resolver (versionlock applied, as
    `dnf install` applies it) refuse, in check mode as in a real run, before anything changes."""
    proc, (changed, _unreachable, failed) = converge(
        node.inventory, "--check", cuda_toolkit_versions=["11.8", "12.2.0"], cuda_toolkit_default="12.2.0"
    )
    output = " ".join((proc.stdout + proc.stderr).split())
    assert (changed, failed) == (0, 1), output[-4000:]
    assert (f"{NODE}: dnf cannot install cuda-toolkit-11-8=11.8.0-1, cuda-toolkit-12-2=12.2.0-1 (the mirror's copy of "
            f"NVIDIA's CUDA repository ({MIRROR}/developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/)): All "
            "matches were filtered out by exclude filtering for argument: cuda-toolkit-12-2-12.2.0-1. Nothing was "
            "changed.") in output, output[-4000:]  # fmt: skip
