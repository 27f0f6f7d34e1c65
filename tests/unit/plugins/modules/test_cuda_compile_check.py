"""cuda_compile_check's main() with nvcc, readelf and ldd outputs captured in the bench's Debian 13 container
(nvcc 12.4.131, no GPU) and a fake nvcc on disk (the module checks it is executable)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.bringup.plugins.modules import cuda_compile_check

NVCC = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n"
READELF = (
    " 0x0000000000000001 (NEEDED)             Shared library: [libcudart.so.12]\n"
    " 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n"
)
LDD = "\tlibcudart.so.12 => /lib/x86_64-linux-gnu/libcudart.so.12 (0x00007f04afe00000)\n"


class Commands:
    """Answers by the command's first word(s); the program's path is a fresh temporary directory each run."""

    def __init__(self, compile_rc=0, run_output="devices 4 runtime 12040 driver 12040 kernel ok\n"):
        self.compile_rc = compile_rc
        self.run_output = run_output
        self.calls = []

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        return None

    def run_command(self, args, **kwargs):
        self.calls.append(list(args))
        if args[-1] == "--version":
            return 0, NVCC, ""
        if args[1:3] == ["-cudart", "shared"]:
            assert os.path.isfile(args[-1]), "the program's source is written before nvcc runs"
            return self.compile_rc, "", 't.cu(3): error: identifier "foo" is undefined\n' if self.compile_rc else ""
        if args[0] == "readelf":
            return 0, READELF, ""
        if args[0] == "ldd":
            return 0, LDD, ""
        return 0, self.run_output, ""


@pytest.fixture
def root(tmp_path):
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    return str(tmp_path)


def test_compiles_links_and_cleans_up(run_module, root):
    commands = Commands()
    result, failed = run_module(cuda_compile_check.main, {"cuda_root": root, "source": "int main() {}"}, commands)
    assert not failed
    assert result == {
        "changed": False,
        "nvcc": {"release": "12.4", "version": "12.4.131"},
        "libraries": {"needed": ["libcudart.so.12", "libc.so.6"],
                      "resolved": {"libcudart.so.12": "/lib/x86_64-linux-gnu/libcudart.so.12"}},
        "ran": False,
        "output": "",
    }  # fmt: skip
    program = commands.calls[1][-2]
    assert commands.calls[1] == [f"{root}/bin/nvcc", "-cudart", "shared", "-o", program, program + ".cu"]
    assert not os.path.exists(os.path.dirname(program)), "the temporary directory is removed"
    assert [c[0] for c in commands.calls[2:]] == ["readelf", "ldd"]


def test_runs_the_program_where_asked(run_module, root):
    commands = Commands()
    result, failed = run_module(cuda_compile_check.main, {"cuda_root": root, "source": "x", "run": True}, commands)
    assert not failed
    assert result["ran"] is True
    assert result["output"] == "devices 4 runtime 12040 driver 12040 kernel ok\n"


def test_a_compile_error_fails_with_nvcc_output(run_module, root):
    result, failed = run_module(cuda_compile_check.main, {"cuda_root": root, "source": "x"}, Commands(compile_rc=1))
    assert failed
    assert result["msg"] == 'compiling and linking failed (exit 1): t.cu(3): error: identifier "foo" is undefined'


def test_a_root_without_nvcc_fails(run_module, tmp_path):
    result, failed = run_module(cuda_compile_check.main, {"cuda_root": str(tmp_path), "source": "x"}, Commands())
    assert failed
    assert (
        result["msg"]
        == f"{tmp_path}/bin/nvcc is missing or not executable: {tmp_path} is not a CUDA root with bin/nvcc"
    )
