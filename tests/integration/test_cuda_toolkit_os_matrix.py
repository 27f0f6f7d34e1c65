"""cuda_toolkit's cuda_repo data and preflight on every OS NVIDIA's CUDA repository serves that cannot install here.

Each node is a bench container (Debian 12) whose /etc/os-release is a real one of that OS (tests/fixtures/os-release,
sources in SOURCES.md): os_facts reads it as it would on that OS, the role loads that OS's variables and runs its
preflight in check mode through the bench's mirror, its key pinned. On Ubuntu the preflight reads NVIDIA's index for
that release from the mirror, at the URL the OS's data names, and stops there: the bench's ubuntu2204/ubuntu2404
stand-ins carry driver packages only (tests/standins/cuda-repo-ubuntu*-driver), so the toolkit version is missing, or,
on a mirror without them, the index itself. On Rocky Linux and RHEL it stops where this release does, naming the
rhel8/rhel9 repository and its key. Nothing changes on any node.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from preflight_harness import MIRROR, ROOT, bench_nodes, unfold

PLAYBOOK = ROOT / "tests" / "integration" / "cuda_toolkit_preflight.yml"
GROUP = "cuda-os-matrix"
UPSTREAM = "https://developer.download.nvidia.com/compute/cuda/repos"
# release -> (NVIDIA's repository for it, its key file)
REPOSITORIES = {
    "ubuntu-22.04": ("ubuntu2204", "3bf863cc.pub"),
    "ubuntu-24.04": ("ubuntu2404", "3bf863cc.pub"),
    "rocky-8.3": ("rhel8", "D42D0685.pub"),
    "rocky-9.3": ("rhel9", "D42D0685.pub"),
    "rhel-8.7": ("rhel8", "D42D0685.pub"),
    "rhel-9.6": ("rhel9", "D42D0685.pub"),
}


def instance(release: str) -> str:
    return release.replace(".", "")


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """Run the preflight once over every release; yield each host's failing task and message."""
    specs = [{"name": instance(r), "image": "debian12"} for r in REPOSITORIES]
    with bench_nodes(tmp_path_factory, GROUP, specs) as nodes:
        for release in REPOSITORIES:
            nodes.os_release(instance(release), release)
        variables = nodes.inventory.with_name("vars.json")
        key = json.loads((ROOT / ".bench" / "mirror" / "mirror.json").read_text())["local_repo_key_fingerprint"]
        variables.write_text(
            json.dumps(
                {
                    "cuda_toolkit_source": "cuda_repo",
                    "cuda_toolkit_versions": ["12.2"],
                    "gpuops_mirror_url": MIRROR,
                    "cuda_toolkit_cuda_repo_key_fingerprint": key,
                }
            )
        )
        proc = subprocess.run(
            ["ansible-playbook", "-i", str(nodes.inventory), "--check", "--tags", "cuda_toolkit_preflight",
             "--extra-vars", f"@{variables}", str(PLAYBOOK)],
            cwd=ROOT, capture_output=True, text=True, check=False,
            env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"},
        )  # fmt: skip
    results = {}
    for task in json.loads(proc.stdout)["plays"][0]["tasks"]:
        for host, result in task["hosts"].items():
            assert not result.get("changed"), (host, task["task"]["name"])
            if result.get("failed"):
                results[host] = {"task": task["task"]["name"], "msg": unfold(result.get("msg", ""))}
    return results


@pytest.mark.parametrize("release", [r for r in REPOSITORIES if r.startswith("ubuntu")])
def test_ubuntu_reads_nvidia_repository_for_its_release_through_the_mirror(matrix, release):
    repository, _key = REPOSITORIES[release]
    result = matrix[instance(release)]
    mirrored = f"{MIRROR}/developer.download.nvidia.com/compute/cuda/repos/{repository}/x86_64/"
    if result["task"].endswith(": Check the packages"):
        assert (
            f"cuda_toolkit_versions names \"12.2\", but the mirror's copy of NVIDIA's CUDA repository ({mirrored}) "
            "carries no version of cuda-toolkit-12-2. Nothing was changed."
        ) in result["msg"], result
    else:
        assert result["task"].endswith(": Read the toolkit versions NVIDIA's CUDA repository carries, and its key")
        assert f"could not download the repository's package index from {mirrored}Packages.gz" in result["msg"]


@pytest.mark.parametrize("release", [r for r in REPOSITORIES if not r.startswith("ubuntu")])
def test_rocky_and_rhel_name_their_repository_and_stop_before_any_change(matrix, release):
    repository, key = REPOSITORIES[release]
    result = matrix[instance(release)]
    assert result["task"].endswith(": Check that the node installs NVIDIA's repository through apt"), result
    assert (
        f"whose NVIDIA CUDA repository is {UPSTREAM}/{repository}/x86_64/ (dnf, key {UPSTREAM}/{repository}/x86_64/"
        f"{key}); this release of the collection installs cuda_toolkit_source cuda_repo through apt only"
    ) in result["msg"], result
    assert "Nothing was changed." in result["msg"]
