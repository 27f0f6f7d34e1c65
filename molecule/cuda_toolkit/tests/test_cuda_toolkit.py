"""cuda_toolkit with CUDA 12.4 on Debian 13 (simulated 4x L40S, driver 550): the real state of the node after converge.

The package version is read from the node (what the role resolved from the archive), and checked against what it
must be: Debian's 12.4 toolkit, whose version carries nvcc's (12.4.131~12.4.1-2 is nvcc 12.4.131 of CUDA 12.4.1).
"""

from __future__ import annotations

import re

import pytest

# repo: test_cuda_toolkit_cuda_repo.py.
testinfra_hosts = ["l40s"]
ROOT = "/usr/local/lib/gpuops/cuda-12.4"
HELD = ["nvidia-cuda-toolkit", "nvidia-cuda-dev"]
PROGRAM = """
#include <cstdio>
#include <cuda_runtime.h>
__global__ void twice(float *v) { v[threadIdx.x] *= 2.0f; }
int main() { int n = 0; std::printf("%s\\n", cudaGetErrorString(cudaGetDeviceCount(&n))); return 0; }
"""


@pytest.fixture(scope="module")
def nvcc_version(host):
    """nvcc's version as Debian's package version names it (12.4.131 of 12.4.131~12.4.1-2)."""
    debian = host.check_output("dpkg-query -W -f '${Version}' nvidia-cuda-toolkit")
    match = re.fullmatch(r"(12\.4\.\d+)~12\.4\.\d+-.+", debian)
    assert match, debian
    return match.group(1)


@pytest.mark.parametrize("nvcc", [f"{ROOT}/bin/nvcc", "/usr/local/cuda/bin/nvcc"])
def test_nvcc_reports_the_pinned_version(host, nvcc, nvcc_version):
    out = host.check_output(f"{nvcc} --version")
    assert f"Cuda compilation tools, release 12.4, V{nvcc_version}" in out


def test_usr_local_cuda_is_the_alternative_on_the_default_root(host):
    # testinfra's linked_to resolves the whole chain: read each link's own target.
    assert host.check_output("readlink /usr/local/cuda") == "/etc/alternatives/cuda"
    assert host.check_output("readlink /etc/alternatives/cuda") == ROOT
    query = host.check_output("update-alternatives --query cuda")
    assert "Status: manual" in query
    assert f"Value: {ROOT}" in query
    assert f"Alternative: {ROOT}\nPriority: 124" in query


def test_the_root_is_laid_out_as_nvidia_lays_out_a_cuda_root(host):
    # nvcc is the role's wrapper (the host compiler wrappers first on PATH), the other tools are links.
    nvcc = host.file(f"{ROOT}/bin/nvcc")
    assert nvcc.is_file and not nvcc.is_symlink and nvcc.mode == 0o755
    assert nvcc.content_string.endswith('exec /usr/lib/nvidia-cuda-toolkit/bin/nvcc "$@"\n')
    assert host.check_output(f"readlink {ROOT}/bin/ptxas") == "/usr/bin/ptxas"
    assert host.check_output(f"readlink {ROOT}/include") == "/usr/include"
    assert host.file(f"{ROOT}/include/cuda_runtime.h").is_file
    assert host.file(f"{ROOT}/lib64/libcudart.so").exists
    assert host.file(f"{ROOT}/nvvm/libdevice/libdevice.10.bc").is_file


def test_a_login_shell_gets_cuda_home_and_nvcc(host):
    profile = host.file("/etc/profile.d/cuda.sh")
    assert profile.mode == 0o644
    assert "export CUDA_HOME=/usr/local/cuda" in profile.content_string
    out = host.check_output("env -i PATH=/usr/bin:/bin bash -lc 'echo $CUDA_HOME; command -v nvcc'")
    assert out.splitlines() == ["/usr/local/cuda", "/usr/local/cuda/bin/nvcc"]


@pytest.mark.parametrize("package", HELD)
def test_the_toolkit_is_held(host, package):
    assert package in host.check_output("apt-mark showhold").split()


def test_the_toolkit_brought_no_second_driver_userland(host):
    """Every installed NVIDIA driver package is of the one 550 driver the driver role installed."""
    out = host.check_output(r"dpkg-query -W -f '${Package} ${Version} ${source:Package} ${db:Status-Abbrev}\n'")
    driver = [line.split() for line in out.splitlines() if " nvidia-graphics-drivers" in line]
    installed = [(name, version, source) for name, version, source, status in driver if status[1] == "i"]
    assert "libcuda1" in [name for name, _v, _s in installed], installed
    assert {source for _n, _v, source in installed} == {"nvidia-graphics-drivers"}, installed
    assert {version.split("-")[0] for _n, version, _s in installed} == {"550.163.01"}, installed


def test_a_cuda_program_compiles_and_links_against_libcudart(host):
    work = host.check_output("mktemp -d")
    try:
        host.check_output(f"cat > {work}/t.cu <<'EOF'\n{PROGRAM}\nEOF")
        host.check_output(f"cd {work} && /usr/local/cuda/bin/nvcc -cudart shared -o t t.cu")
        assert host.file(f"{work}/t").mode & 0o111
        assert "Shared library: [libcudart.so.12]" in host.check_output(f"readelf -d {work}/t")
        ldd = host.check_output(f"ldd {work}/t")
        assert re.search(r"libcudart\.so\.12 => /\S+/libcudart\.so\.12 ", ldd), ldd
        # No GPU in the container: the runtime loads and says so, the program itself is not at fault.
        assert host.run(f"{work}/t").stdout.strip() == "no CUDA-capable device is detected"
    finally:
        host.check_output(f"rm -rf {work}")
