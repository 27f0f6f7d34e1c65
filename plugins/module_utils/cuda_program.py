# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compile a CUDA program with a toolkit's nvcc against the shared runtime, in a temporary directory removed again,
and run it: cuda_toolkit's verification (module cuda_compile_check) and the acceptance stage's CUDA check (module
acceptance_read) do the same steps. Python 3.8 compatible: shipped to nodes."""

from __future__ import annotations

import os
import shutil
import tempfile

from ansible_collections.gpuops.bringup.plugins.module_utils import cuda_toolkit


class StepFailed(Exception):
    """A step that did not work: what it was, and the command's argv, exit status and output where one ran."""

    def __init__(self, step, message, argv=None, rc=None, stdout="", stderr=""):
        super().__init__(message)
        self.step, self.message, self.argv, self.rc, self.stdout, self.stderr = step, message, argv, rc, stdout, stderr


def _step(run_command, argv, what, cwd=None):
    rc, out, err = run_command(argv, cwd)
    if rc != 0:
        raise StepFailed(what, f"{what} failed (exit {rc}): {(err or out).strip()[-1500:]}", argv, rc, out, err)
    return out


def compile_and_run(run_command, root, source, run=False, inspect=True, run_prefix=()):
    """nvcc's version, the program's libraries (with inspect: readelf -d, ldd) and its output (with run; run_prefix
    before the program: a time limit).

    run_command(argv, cwd) returns (rc, stdout, stderr); StepFailed names the first step that failed, the run of
    the program included (its output is the evidence: CUDA's error string)."""
    nvcc = os.path.join(root, "bin", "nvcc")
    if not os.access(nvcc, os.X_OK):
        raise StepFailed("nvcc", f"{nvcc} is missing or not executable: {root} is not a CUDA root with bin/nvcc")
    out = _step(run_command, [nvcc, "--version"], "nvcc --version")
    version = cuda_toolkit.parse_nvcc_version(out)
    if version is None:
        message = f"{nvcc} --version printed no CUDA release: {out.strip()[-300:]}"
        raise StepFailed("nvcc --version", message, [nvcc, "--version"], 0, out)
    work = tempfile.mkdtemp(prefix="gpuops-cuda-check.")
    try:
        program = os.path.join(work, "cuda_check")
        with open(program + ".cu", "w", encoding="utf-8") as handle:
            handle.write(source)
        _step(run_command, [nvcc, "-cudart", "shared", "-o", program, program + ".cu"], "compiling and linking", work)
        libraries = None
        if inspect:
            needed = cuda_toolkit.parse_needed(_step(run_command, ["readelf", "-d", program], "readelf -d"))
            resolved = cuda_toolkit.parse_ldd(_step(run_command, ["ldd", program], "ldd"))
            libraries = {"needed": needed, "resolved": resolved}
        output = _step(run_command, [*run_prefix, program], "running the program") if run else ""
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"nvcc": version, "libraries": libraries, "ran": run, "output": output}
