#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_test
short_description: Run an nccl-tests benchmark (or read its log) and judge the result
version_added: 0.1.0
description:
  - Runs an nccl-tests binary (C(all_reduce_perf), C(all_gather_perf)...) on this host, or through C(mpirun) across
    the hosts of a hostfile, or parses the output of an earlier run given as O(log_path).
  - Returns every result row, the average and peak bus bandwidth, the NCCL version, the GPUs the benchmark
    reports, the network transport NCCL chose (and whether GPUDirect RDMA carried it, when the output has
    C(NCCL_DEBUG=INFO) lines), and the warnings and errors found in the output.
  - >-
    A failed benchmark is data, not a module failure. C(passed) is false and C(reasons) says why (a non-zero exit,
    C(NCCL WARN) and C(Test NCCL failure) lines, C(#wrong) results, a run that ended before its summary, a bus
    bandwidth below O(min_busbw_gbps)).
  - Changes no configuration (C(changed) is always false). In check mode a benchmark is not run and the task is
    reported skipped; O(log_path) is parsed in check mode too.
author: gpuops.bringup developers (@gpuops)
options:
  binary:
    description:
      - The benchmark to run, a name on E(PATH) or a path (C(/opt/nccl-tests/build/all_reduce_perf)).
      - It must exist on this host, also with O(mpirun) (the other hosts are expected to have the same path).
      - Exactly one of O(binary) and O(log_path) is required.
    type: str
  args:
    description: Arguments of the benchmark, for example C([-b, 8, -e, 8G, -f, 2, -g, 8]).
    type: list
    elements: str
    default: []
  mpirun:
    description:
      - Run the benchmark through C(mpirun). V(true) uses mpirun's defaults; a dict takes the keys C(executable)
        (default C(mpirun)), C(hostfile), C(np), C(npernode), C(extra_args) (list) and C(export) (names of
        environment variables to pass with C(-x)). Every key of O(env) is passed with C(-x) as well.
    type: raw
  env:
    description: Environment of the benchmark, for example C(NCCL_DEBUG=INFO) and C(NCCL_IB_HCA=mlx5) as a dict.
    type: dict
    default: {}
  log_path:
    description: Parse this file (the saved output of a run) instead of running a benchmark.
    type: path
  min_busbw_gbps:
    description: Lowest acceptable bus bandwidth in GB/s, compared with the value O(busbw_metric) names.
    type: float
  busbw_metric:
    description:
      - Which bus bandwidth O(min_busbw_gbps) is compared with. V(max) is the best value of any message size,
        V(largest) the value at the largest size, V(avg) the average nccl-tests prints (which small sizes pull
        down).
    type: str
    choices: [max, largest, avg]
    default: max
  timeout:
    description:
      - Seconds the benchmark may run before it is stopped (through coreutils C(timeout)); C(0) for no limit.
        A hung collective is then reported as a failed run.
    type: int
    default: 1800
attributes:
  check_mode:
    support: full
    details: A benchmark is not run in check mode (the task is skipped); O(log_path) is parsed.
  diff_mode:
    support: none
  platform:
    platforms: posix
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
notes:
  - The module fails (rather than returning C(passed=false)) only for bad input it can check itself, a missing
    O(binary), O(log_path) or hostfile, an invalid O(mpirun).
"""

EXAMPLES = r"""
- name: All-reduce across the eight GPUs of this node
  gpuops.bringup.nccl_test:
    binary: /opt/nccl-tests/build/all_reduce_perf
    args: [-b, 8, -e, 8G, -f, 2, -g, 8]
    min_busbw_gbps: 400
  register: allreduce

- name: Two nodes through mpirun, with the NCCL transport in the log
  gpuops.bringup.nccl_test:
    binary: /opt/nccl-tests/build/all_reduce_perf
    args: [-b, 1G, -e, 8G, -f, 2, -g, 1]
    mpirun:
      hostfile: /etc/gpuops/hostfile
      np: 16
      extra_args: [--bind-to, numa]
    env:
      NCCL_DEBUG: INFO
      NCCL_IB_HCA: mlx5
    min_busbw_gbps: 180
  register: fabric

- name: GPUDirect RDMA must carry the inter-node traffic
  ansible.builtin.assert:
    that:
      - fabric.passed
      - fabric.transport.gpudirect_rdma
    fail_msg: "{{ fabric.reasons }}"

- name: Judge a log a job scheduler saved
  gpuops.bringup.nccl_test:
    log_path: /var/log/gpuops/all_reduce_perf.log
    min_busbw_gbps: 400
"""

RETURN = r"""
passed:
  description: The run completed, with no error found and the bus bandwidth at or above O(min_busbw_gbps). Null in
    check mode, when nothing ran.
  returned: always
  type: bool
reasons:
  description: Why C(passed) is false, one sentence each.
  returned: always
  type: list
  elements: str
  sample: ["Test NCCL failure at all_reduce.cu:44: unhandled cuda error"]
msg:
  description: One line summing up the run.
  returned: always
  type: str
cmd:
  description: The command run (absent with O(log_path)).
  returned: when a benchmark ran or would run
  type: list
  elements: str
rc:
  description: Return code of the command (of mpirun, or 124 when O(timeout) stopped it); null with O(log_path).
  returned: always
  type: int
timed_out:
  description: O(timeout) stopped the benchmark.
  returned: always
  type: bool
test:
  description: The benchmark (C(all_reduce_perf)...), from the output or the binary's name.
  returned: always
  type: str
nccl_version:
  description: NCCL version of the run (C(2.18.3)), from C(NCCL version) lines or the nccl-tests header.
  returned: always
  type: str
cuda_version:
  description: CUDA version NCCL was built for (C(12.2)), when printed.
  returned: always
  type: str
tests_version:
  description: Version of nccl-tests, printed by recent versions.
  returned: always
  type: str
params:
  description: The run's header (C(nthread), C(ngpus), C(min_bytes), C(max_bytes), C(step), C(iters), C(validation)...).
  returned: always
  type: dict
devices:
  description: The GPUs the benchmark reports, one per rank (C(rank), C(host), C(pid), C(device), C(bus_id), C(name)).
  returned: always
  type: list
  elements: dict
results:
  description: >-
    Every result row: C(size) (bytes), C(count), C(type), C(redop), C(root), and C(out_of_place) and C(in_place),
    each with C(time_us), C(algbw_gbps), C(busbw_gbps), C(wrong) (count of wrong elements, null when not
    validated) and C(error) (the old layouts' maximum error, null otherwise).
  returned: always
  type: list
  elements: dict
avg_busbw_gbps:
  description: The average bus bandwidth nccl-tests printed (GB/s); null when the run ended before its summary.
  returned: always
  type: float
max_busbw_gbps:
  description: The best bus bandwidth of any row, out-of-place or in-place (GB/s).
  returned: always
  type: float
largest_busbw_gbps:
  description: The better bus bandwidth of the largest message size (GB/s).
  returned: always
  type: float
out_of_bounds:
  description: The count from C(Out of bounds values), when printed.
  returned: always
  type: int
nccl_warnings:
  description: The C(NCCL WARN) messages, each once.
  returned: always
  type: list
  elements: str
errors:
  description: >-
    Errors found in the output: C(Test NCCL failure) lines (unhandled cuda error...), C(#wrong) results, out of bounds
    values, an aborted mpirun job, a run that ended before its summary, an output with no nccl-tests content.
  returned: always
  type: list
  elements: str
transport:
  description: >-
    What NCCL reported of its network (needs C(NCCL_DEBUG=INFO)): C(network) (IB, Socket, a plugin name),
    C(net_devices), C(channels) (count per transport, NET/IB, P2P/IPC...), C(net_channels), C(gdr_channels),
    C(gpudirect_rdma) (true when every network channel used GPUDirect RDMA, false when one did not or NCCL
    disabled it; null when the output does not say) and C(gpudirect_rdma_evidence) (channels, rings or hca).
  returned: always
  type: dict
output_tail:
  description: The last 40 lines of what the run printed, for the report.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import nccl_tests

MPIRUN_KEYS = {"executable", "hostfile", "np", "npernode", "extra_args", "export"}
TIMEOUT_RC = 124
RESULT_KEYS = (
    "nccl_version",
    "cuda_version",
    "tests_version",
    "params",
    "devices",
    "results",
    "avg_busbw_gbps",
    "max_busbw_gbps",
    "largest_busbw_gbps",
    "out_of_bounds",
    "errors",
    "transport",
)


def mpirun_options(module, value):
    """None, or the mpirun dict, from the raw option (bool or dict); bad values end the module."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, str) and value.lower() in ("yes", "true", "no", "false"):
        return {} if value.lower() in ("yes", "true") else None
    if not isinstance(value, dict):
        module.fail_json(msg=f"mpirun must be true, false or a dict, got {type(value).__name__}: {value!r}")
    unknown = sorted(set(value) - MPIRUN_KEYS)
    if unknown:
        module.fail_json(msg=f"mpirun has unknown keys {unknown}; known keys are {sorted(MPIRUN_KEYS)}")
    for key in ("np", "npernode"):
        if value.get(key) is not None:
            try:
                number = int(value[key])
            except (TypeError, ValueError, OverflowError):
                number = 0
            if number < 1:
                module.fail_json(msg=f"mpirun.{key} must be a positive integer, got {value[key]!r}")
    for key in ("extra_args", "export"):
        if value.get(key) is not None and not isinstance(value[key], list):
            module.fail_json(msg=f"mpirun.{key} must be a list, got {value[key]!r}")
    hostfile = value.get("hostfile")
    if hostfile and not os.path.isfile(hostfile):
        module.fail_json(msg=f"mpirun.hostfile {hostfile} does not exist on this host")
    return value


def summary(test, passed, parsed, reasons):
    name = test or "nccl-tests"
    if passed:
        best = parsed["max_busbw_gbps"]
        return f"{name} passed" + (f": peak bus bandwidth {best:g} GB/s" if best is not None else "")
    return f"{name} failed: {reasons[0]}" + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else "")


def report(module, parsed, rc, cmd=None, test=None, timed_out=False):
    params = module.params
    passed, reasons = nccl_tests.verdict(parsed, rc, params["min_busbw_gbps"], params["busbw_metric"])
    if timed_out:
        reasons.insert(0, f"the benchmark was stopped after the timeout of {params['timeout']} seconds")
    test = parsed["test"] or test
    result = {key: parsed[key] for key in RESULT_KEYS}
    # "warnings" is Ansible's own return key: NCCL's go under their own name.
    result["nccl_warnings"] = parsed["warnings"]
    # A failed benchmark is data, not a failed task: without failed false, Ansible marks any result whose rc is not 0
    # (None too, as with log_path) failed.
    result.update(
        changed=False,
        failed=False,
        passed=passed,
        reasons=reasons,
        msg=summary(test, passed, parsed, reasons),
        rc=rc,
        timed_out=timed_out,
        test=test,
    )
    if cmd is not None:
        result["cmd"] = cmd
    return result


def parse_log(module):
    path = module.params["log_path"]
    if not os.path.isfile(path):
        module.fail_json(msg=f"log_path {path} does not exist or is not a file")
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"log_path {path} cannot be read: {exc}")
    result = report(module, nccl_tests.parse(text), None)
    result["output_tail"] = text.splitlines()[-40:]
    return result


def run_benchmark(module):
    params = module.params
    mpirun = mpirun_options(module, params["mpirun"])
    limited = False
    env = {str(k): str(v) for k, v in (params["env"] or {}).items()}
    bench = nccl_tests.BenchmarkRunner(module, params["binary"])
    runner = bench
    cmd = [bench.path, *params["args"]]
    if mpirun is not None:
        runner = nccl_tests.BenchmarkRunner(module, mpirun.get("executable") or "mpirun")
        cmd = [runner.path, *nccl_tests.mpirun_args(mpirun, env), *cmd]
    if params["timeout"]:
        timeout = nccl_tests.BenchmarkRunner(module, "timeout", required=False)
        if timeout.available:
            runner, limited = timeout, True
            cmd = [timeout.path, "--kill-after=30", str(params["timeout"]), *cmd]
        else:
            module.warn("coreutils timeout is not installed: the benchmark runs without a time limit")
    test = os.path.basename(params["binary"])
    if module.check_mode:
        return {
            "changed": False,
            "failed": False,
            "skipped": True,
            "passed": None,
            "reasons": [],
            "msg": f"check mode: {test} not run",
            "cmd": cmd,
            "rc": None,
            "timed_out": False,
            "test": test,
            "output_tail": [],
            "nccl_warnings": [],
            **{key: nccl_tests.empty_result()[key] for key in RESULT_KEYS},
        }
    cmd, rc, out, err = runner.run(cmd[1:], env)
    text = (out or "") + ("\n" + err if err else "")
    timed_out = limited and rc == TIMEOUT_RC
    result = report(module, nccl_tests.parse(text), rc, cmd=cmd, test=test, timed_out=timed_out)
    result["output_tail"] = text.splitlines()[-40:]
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "binary": {"type": "str"},
            "args": {"type": "list", "elements": "str", "default": []},
            "mpirun": {"type": "raw"},
            "env": {"type": "dict", "default": {}},
            "log_path": {"type": "path"},
            "min_busbw_gbps": {"type": "float"},
            "busbw_metric": {"type": "str", "choices": ["max", "largest", "avg"], "default": "max"},
            "timeout": {"type": "int", "default": 1800},
        },
        mutually_exclusive=[["binary", "log_path"]],
        required_one_of=[["binary", "log_path"]],
        supports_check_mode=True,
    )
    if module.params["timeout"] < 0:
        module.fail_json(msg=f"timeout must be 0 (no limit) or a number of seconds, got {module.params['timeout']}")
    if module.params["min_busbw_gbps"] is not None and module.params["min_busbw_gbps"] < 0:
        module.fail_json(msg=f"min_busbw_gbps must not be negative, got {module.params['min_busbw_gbps']}")
    if module.params["log_path"]:
        module.exit_json(**parse_log(module))
    module.exit_json(**run_benchmark(module))


if __name__ == "__main__":
    main()
