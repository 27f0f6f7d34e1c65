#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_compile_check
short_description: Compile and link a CUDA program with a toolkit's nvcc, and run it where a GPU is live
version_added: 0.1.0
description:
  - Reads C(nvcc --version) of O(cuda_root), compiles and links O(source) with it against the shared CUDA runtime
    (C(-cudart shared)) in a temporary directory, and reads which shared libraries the program needs and where the
    dynamic linker finds them (C(readelf -d), C(ldd)).
  - With O(run), runs the program (it needs a GPU and a loaded driver) and returns its output.
  - The temporary directory is removed again; the node is left as it was, so the module never reports a change.
author: gpuops.bringup developers (@gpuops)
options:
  cuda_root:
    description: The CUDA root whose C(bin/nvcc) compiles (C(/usr/local/cuda), C(/usr/local/cuda-12.4)).
    type: path
    required: true
  source:
    description: The CUDA C++ program's text.
    type: str
    required: true
  run:
    description: Run the compiled program; its exit status must be 0.
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
notes:
  - Commands run with C(LANG=C). A failed compile, link or run fails the task with the tool's output.
"""

EXAMPLES = r"""
- name: Compile and link a CUDA program with the default toolkit
  gpuops.bringup.cuda_compile_check:
    cuda_root: /usr/local/cuda
    source: "{{ lookup('ansible.builtin.file', 'cuda_check.cu') }}"
  register: compiled

- name: The program links against libcudart
  ansible.builtin.assert:
    that: compiled.libraries.needed | select('match', '^libcudart[.]so') | list != []
"""

RETURN = r"""
nvcc:
  description: C(release) and C(version) from C(nvcc --version).
  returned: always
  type: dict
  sample: {"release": "12.4", "version": "12.4.131"}
libraries:
  description: >-
    C(needed) (the program's NEEDED shared libraries, in order) and C(resolved) (library to the path C(ldd) finds,
    null for one it does not find).
  returned: always
  type: dict
  sample: {"needed": ["libcudart.so.12", "libstdc++.so.6", "libc.so.6"],
           "resolved": {"libcudart.so.12": "/lib/x86_64-linux-gnu/libcudart.so.12"}}
ran:
  description: Whether the program ran (O(run)).
  returned: always
  type: bool
output:
  description: The program's standard output when it ran, else an empty string.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import cuda_program
from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE


def check(module, root, source, run):
    def run_command(argv, cwd):
        return module.run_command(argv, environ_update=C_LOCALE, cwd=cwd)

    try:
        result = cuda_program.compile_and_run(run_command, root, source, run)
    except cuda_program.StepFailed as failed:
        # A command that exited non-zero is returned with its output; a missing nvcc or unreadable version is not.
        output = {"cmd": failed.argv, "rc": failed.rc, "stdout": failed.stdout, "stderr": failed.stderr}
        module.fail_json(msg=failed.message, **(output if failed.rc else {}))
    return {"changed": False, **result}


def main():
    module = AnsibleModule(
        argument_spec={
            "cuda_root": {"type": "path", "required": True},
            "source": {"type": "str", "required": True},
            "run": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    module.exit_json(**check(module, module.params["cuda_root"], module.params["source"], module.params["run"]))


if __name__ == "__main__":
    main()
