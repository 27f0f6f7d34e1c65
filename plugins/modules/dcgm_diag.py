#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dcgm_diag
short_description: Run NVIDIA DCGM's diagnostics (dcgmi diag) or read a saved run, as tests with a status per GPU
version_added: 0.2.0
description:
  - Runs C(dcgmi diag -r <level> -j) (with C(-i) where O(gpus) is given), or reads O(log_path) instead - the JSON
    C(-j) prints (DCGM 3 or 4, stray lines before it and C(null) entries allowed) or the text table DCGM prints
    without C(-j) (wrapped cells, section separators, one row per GPU set).
  - A diagnosis that found failures is data, not a failed task - RV(passed) says whether the node passed. The task
    fails only where no result came - C(dcgmi) missing, DCGM unable to run (its C(Error:) lines are the message),
    output that holds no diagnostic, or O(log_path) unreadable.
  - Level 1 takes seconds, 2 minutes, 3 about half an hour and 4 about an hour and a half; run the long ones with
    C(async) and C(poll).
  - In check mode with no O(log_path), nothing runs (a diagnostic loads the GPUs) and the result says so.
author: gpuops.bringup developers (@gpuops)
options:
  level:
    description: The diagnostic level C(-r), 1 to 4.
    type: int
    choices: [1, 2, 3, 4]
    default: 1
  gpus:
    description: The GPU indexes to test (C(-i 0,1)); empty tests every GPU.
    type: list
    elements: int
    default: []
  log_path:
    description: A saved C(dcgmi diag) output on the node to read instead of running one.
    type: path
  required:
    description:
      - Test names (as DCGM names them, e.g. C(Memory), C(Targeted Power), C(pcie); case does not matter) whose skip
        or absence fails RV(passed); any other test's skip does not.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
notes:
  - Commands run with C(LANG=C). Undecodable bytes become U+FFFD.
seealso:
  - module: gpuops.bringup.acceptance_read
    description: Runs the level-1 (or 2) diagnostic among the acceptance stage's reads.
"""

EXAMPLES = r"""
- name: Run DCGM's level 3 diagnostic, for a delivery acceptance
  gpuops.bringup.dcgm_diag:
    level: 3
    required: [Memory, Targeted Stress]
  async: 3600
  poll: 30
  register: diag

- name: Read a diagnostic saved by hand
  gpuops.bringup.dcgm_diag:
    log_path: /var/tmp/dcgm-r3.json
  register: saved
"""

RETURN = r"""
dcgm_version:
  description: DCGM's version as the output gives it; null where it does not (DCGM 3's JSON).
  returned: success
  type: str
  sample: 3.3.8
driver_version:
  description: The driver version the table's metadata gives; null in JSON.
  returned: success
  type: str
  sample: 535.309.01
tests:
  description: >-
    Each test with C(category), C(name), C(status) (pass, fail, warn or skip; a test with no result is skip) and
    C(gpus), a list of C(gpu) (index), C(status) and C(message) (the test's warning naming that GPU, else its first
    warning, for a GPU that failed or warned; else null). A result given for all GPUs at once names none.
  returned: success
  type: list
  elements: dict
failed_gpus:
  description: The indexes of the GPUs that failed a test, sorted.
  returned: success
  type: list
  elements: int
  sample: [3]
passed:
  description: No test failed, and every O(required) test ran.
  returned: success
  type: bool
messages:
  description: DCGM's C(Error:) lines, the warnings of the tests that failed or warned, and the required tests that did
    not run.
  returned: success
  type: list
  elements: str
cmd:
  description: The command run; absent when O(log_path) was read.
  returned: when dcgmi ran
  type: list
  elements: str
rc:
  description: dcgmi's exit status (non-zero when a test failed).
  returned: when dcgmi ran
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import dcgm, parsing
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner

ANY_RC = range(256)


def main():
    module = AnsibleModule(
        argument_spec={
            "level": {"type": "int", "default": 1, "choices": [1, 2, 3, 4]},
            "gpus": {"type": "list", "elements": "int", "default": []},
            "log_path": {"type": "path"},
            "required": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    params = module.params
    if any(gpu < 0 or gpu > 4095 for gpu in params["gpus"]):
        module.fail_json(msg=f"gpus must be GPU indexes 0 to 4095, got {params['gpus']}")
    ran = {}
    if params["log_path"]:
        try:
            with open(params["log_path"], encoding="utf-8", errors="replace") as handle:
                text = handle.read(parsing.MAX_TEXT + 1)
        except OSError as error:
            module.fail_json(msg=f"cannot read log_path {params['log_path']}: {error.strerror}")
    elif module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode: a DCGM diagnostic loads the GPUs; not run")
    else:
        args = ["diag", "-r", str(params["level"]), "-j"]
        if params["gpus"]:
            args += ["-i", ",".join(str(g) for g in params["gpus"])]
        runner = ToolRunner(module, "dcgmi", required=False)
        if not runner.available:
            module.fail_json(msg="dcgmi was not found on this host: DCGM (datacenter-gpu-manager) is not installed")
        # dcgmi exits non-zero when a test fails: that is a result; no result at all is the failure.
        rc, out, err = runner(args, ok_rc=ANY_RC)
        text, ran = out, {"cmd": [runner.path, *args], "rc": rc}
        if not out.strip() and err.strip():
            module.fail_json(msg=f"dcgmi diag exited with {rc}: {parsing.excerpt(err)}", **ran, stderr=err)
    try:
        diag = dcgm.parse_diag(text)
    except parsing.ParseError as error:
        module.fail_json(msg=str(error), **ran)
    if not diag["tests"]:
        why = "; ".join(diag["errors"]) or "no test result in the output"
        module.fail_json(msg=f"DCGM gave no diagnostic result: {why}", **ran)
    # failed=False: Ansible fails any result whose rc is not 0, and dcgmi's is 1 when a test failed - a result.
    module.exit_json(changed=False, failed=False, **dcgm.summary(diag, params["required"]), **ran)


if __name__ == "__main__":
    main()
