"""cuda_toolkit from NVIDIA's CUDA repository (the bench's stand-in) on Debian 12 (node repo): CUDA 11.8 and 12.2 side
by side.

The stand-in's nvcc answers --version as NVIDIA's nvcc of its release and compiles with Debian 12's real nvcc 11.8
(tests/standins/README.md), so the compiled programs link against Debian's real libcudart.so.11.0 whichever root
compiled them. The last test converges again with the other default: only the link may change (the shared check-mode
test runs before it, on the converged default).
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

# l40s: test_cuda_toolkit.py.
testinfra_hosts = ["repo"]
TOOLKITS = {
    "11.8": ("cuda-toolkit-11-8", "11.8.0-1", "V11.8.89"),
    "12.2": ("cuda-toolkit-12-2", "12.2.2-1", "V12.2.140"),
}
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", re.MULTILINE)
PROGRAM = """
#include <cstdio>
#include <cuda_runtime.h>
__global__ void twice(float *v) { v[threadIdx.x] *= 2.0f; }
int main() { int n = 0; std::printf("%s\\n", cudaGetErrorString(cudaGetDeviceCount(&n))); return 0; }
"""


@pytest.mark.parametrize("minor", sorted(TOOLKITS))
def test_each_toolkit_is_installed_at_its_pinned_version_and_held(host, minor):
    package, version, _nvcc = TOOLKITS[minor]
    assert host.package(package).version == version
    assert package in host.check_output("apt-mark showhold").split()


def test_no_driver_meta_package_came_with_the_toolkits(host):
    for name in ("cuda-drivers", "cuda-11-8", "cuda-12-2", "cuda"):
        assert not host.package(name).is_installed, name


@pytest.mark.parametrize("minor", sorted(TOOLKITS))
def test_each_root_has_nvcc_of_its_release_include_and_lib64(host, minor):
    _package, _version, nvcc = TOOLKITS[minor]
    out = host.check_output(f"/usr/local/cuda-{minor}/bin/nvcc --version")
    assert f"Cuda compilation tools, release {minor}, {nvcc}" in out
    # NVIDIA's layout: include and lib64 are links into targets/x86_64-linux.
    assert host.check_output(f"readlink /usr/local/cuda-{minor}/lib64") == "targets/x86_64-linux/lib"
    assert host.file(f"/usr/local/cuda-{minor}/include/cuda_runtime.h").exists
    assert host.file(f"/usr/local/cuda-{minor}/lib64/libcudart.so").exists


def test_usr_local_cuda_is_the_alternative_on_the_default_set_by_hand(host):
    assert host.check_output("readlink /usr/local/cuda") == "/etc/alternatives/cuda"
    assert host.check_output("readlink /etc/alternatives/cuda") == "/usr/local/cuda-12.2"
    query = host.check_output("update-alternatives --query cuda")
    # Manual: a toolkit installed later (its config-common registers it in auto mode) cannot move the link.
    assert "Status: manual" in query
    assert "Alternative: /usr/local/cuda-11.8\nPriority: 118" in query
    assert "Alternative: /usr/local/cuda-12.2\nPriority: 122" in query


def test_a_login_shell_gets_cuda_home_and_the_default_nvcc(host):
    out = host.check_output("env -i PATH=/usr/bin:/bin bash -lc 'echo $CUDA_HOME; command -v nvcc; nvcc --version'")
    lines = out.splitlines()
    assert lines[:2] == ["/usr/local/cuda", "/usr/local/cuda/bin/nvcc"]
    assert "Cuda compilation tools, release 12.2, V12.2.140" in lines


@pytest.mark.parametrize("root", ["/usr/local/cuda-11.8", "/usr/local/cuda-12.2", "/usr/local/cuda"])
def test_a_cuda_program_compiles_and_links_with_each_root(host, root):
    work = host.check_output("mktemp -d")
    try:
        host.check_output(f"cat > {work}/t.cu <<'EOF'\n{PROGRAM}\nEOF")
        host.check_output(f"cd {work} && {root}/bin/nvcc -cudart shared -o t t.cu")
        assert "Shared library: [libcudart.so.11.0]" in host.check_output(f"readelf -d {work}/t")
        ldd = host.check_output(f"ldd {work}/t")
        assert re.search(r"libcudart\.so\.11\.0 => /\S+/libcudart\.so\.11\.0 ", ldd), ldd
    finally:
        host.check_output(f"rm -rf {work}")


def converge(default: str) -> tuple[int, str]:
    proc = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "--limit", "repo",
         os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "converge.yml")],
        capture_output=True, text=True, check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", "CUDA_TOOLKIT_DEFAULT": default},
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    recap = RECAP.findall(proc.stdout)
    assert recap, output[-4000:]
    return sum(int(n) for _host, n in recap), proc.stdout


def test_a_new_default_changes_only_the_link(host):
    changed, out = converge("11.8")
    assert changed == 1, out[-6000:]
    changed_tasks = [
        " ".join(block.split("]")[0].split()) for block in out.split("TASK [")[1:] if "\nchanged: " in block
    ]
    assert changed_tasks == [
        "gpuops.bringup.cuda_toolkit : Run update-alternatives where the CUDA roots differ from the plan"
    ], out
    # Only the default moves: no root registered or unregistered.
    assert re.findall(r"changed: \[repo\] => \(item=([^)]*)\)", out) == ["--set cuda /usr/local/cuda-11.8"], out
    assert host.check_output("readlink /etc/alternatives/cuda") == "/usr/local/cuda-11.8"
    assert "release 11.8, V11.8.89" in host.check_output("/usr/local/cuda/bin/nvcc --version")
    assert host.package("cuda-toolkit-12-2").version == "12.2.2-1"
