"""nccl_tests' bad input fails in preflight, before any change, with a message naming the variable, the value and
the fix.

Every case runs against the machine running the tests, in an inventory that puts it in the hardware profile's group
(and, for the multi-node cases, in a group of its own). Preflight reports every problem of the node at once: the
machine is Debian 12, which carries no NCCL, and has no NVIDIA GPU, so each case's message comes with those two. The
control case has only those two.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from preflight_harness import ROOT, assert_fails_with, hardware_profile, run_preflight

PLAYBOOK = Path(__file__).with_name("nccl_tests_preflight.yml")
TAG = "nccl_tests_preflight"
# The inventory's own profile.
H100 = hardware_profile("hgx_h100_8gpu")
CASES = {
    "gate_for_an_unknown_profile": (
        {"nccl_tests_gates": {"hgx_h100_8gpux": 480}},
        [
            "nccl_tests_gates names profile 'hgx_h100_8gpux', which is no hardware profile: it has no published gate "
            "and no host of the inventory has it as gpuops_hardware.profile (known: hgx_h100_8gpu). Fix: a profile "
            "name from that list, or remove the entry."
        ],
    ),
    "gate_not_a_bandwidth": (
        {"nccl_tests_gates": {"hgx_h100_8gpu": 0}},
        ["nccl_tests_gates.hgx_h100_8gpu is 0, not a bus bandwidth. Fix: GB/s as a positive number "
         "(nccl_tests_gates: {hgx_h100_8gpu: 460})."],
    ),
    "multinode_group_with_a_single_host": (
        {"nccl_tests_multinode_group": "lonely"},
        ["nccl_tests_multinode_group 'lonely' has 1 host (localhost): a multi-node run needs at least two. Fix: add "
         "the group's other nodes to the inventory group, or nccl_tests_multinode_group: '' for single-node runs "
         "only."],
    ),
    "multinode_group_unknown": (
        {"nccl_tests_multinode_group": "pair"},
        ["nccl_tests_multinode_group is 'pair', which is no group of the inventory. Fix: the name of the inventory "
         "group whose nodes run together"],
    ),
    "source_not_pinned": (
        {"nccl_tests_source_checksum": ""},
        ["nccl_tests_source_checksum is '': the nccl-tests source https://github.com/NVIDIA/nccl-tests/archive/"
         "v2.16.3.tar.gz must be verified. Fix: nccl_tests_source_checksum: sha256:<64 hex digits>"],
    ),
    "source_commit_not_a_commit": (
        {"nccl_tests_source_url": "https://github.com/NVIDIA/nccl-tests.git", "nccl_tests_source_commit": "v2.16.3"},
        ["nccl_tests_source_commit is 'v2.16.3', which is no full commit: a tag or branch can move, so the source "
         "https://github.com/NVIDIA/nccl-tests.git would not be pinned. Fix: the commit's full 40-digit SHA-1 (git "
         "rev-parse v2.16.3^{commit} in a clone), or nccl_tests_source_commit: '' for the checksum-pinned tarball."],
    ),
    "benchmark_unknown": (
        {"nccl_tests_benchmarks": ["all_reduce_perf", "sendrecv_perf"]},
        ["nccl_tests_benchmarks is ['all_reduce_perf', 'sendrecv_perf'], which names unknown benchmarks. Fix: one or "
         "more of all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf."],
    ),
    "gpu_count_in_the_arguments": (
        {"nccl_tests_args": ["-b", "8", "-e", "8G", "-g", "8"]},
        ["nccl_tests_args sets -g: the role sets it (all GPUs of the node in a single-node run, one per rank across "
         "nodes). Fix: remove -g and its value from nccl_tests_args."],
    ),
    "gpudirect_rdma_mode_unknown": (
        {"nccl_tests_gpudirect_rdma": "yes"},
        ["value of nccl_tests_gpudirect_rdma must be one of: auto, required, ignore, got: yes"],
    ),
    "profile_without_gpus": (
        {"gpuops_hardware": dict(H100, profile="cpu_node", gpu={"model": "", "count": 0})},
        ["localhost's hardware profile 'cpu_node' has no GPU (gpuops_hardware.gpu.count is 0): nccl-tests needs "
         "GPUs. Fix: run the nccl_tests stage on GPU nodes only."],
    ),
    "nccl_source_unknown": (
        {"nccl_tests_nccl_source": "nvidia"},
        ["value of nccl_tests_nccl_source must be one of: distribution, cuda_repo, got: nvidia"],
    ),
    "cuda_repo_version_without_its_cuda_build": (
        {"nccl_tests_nccl_source": "cuda_repo", "nccl_tests_nccl_version": "2.23.4-1"},
        ["nccl_tests_nccl_version is '2.23.4-1', which names no CUDA build: NVIDIA's repository names its NCCL "
         "packages <NCCL version>+cuda<CUDA version>. Fix: the full version, e.g. nccl_tests_nccl_version: "
         '2.23.4-1+cuda12.6, or "" for that default.'],
    ),
    "cuda_repo_on_debian_12": (
        {"nccl_tests_nccl_source": "cuda_repo"},
        ["nccl_tests_nccl_source is cuda_repo (NVIDIA's CUDA repository), whose NCCL packages this collection "
         "installs on Ubuntu 22.04 and 24.04 (NVIDIA's ubuntu2204 and ubuntu2404 repositories); localhost runs "
         "Debian GNU/Linux 12 (bookworm) (ID=debian, VERSION_ID=12). Fix: one of those releases, or "
         "nccl_tests_nccl_source: distribution on Debian 13."],
    ),
    # An account of this machine's (Debian's daemon): the role would give it a shell and the group's SSH key.
    "user_an_existing_account": (
        {"nccl_tests_user": "daemon"},
        ["localhost: nccl_tests_user is daemon, an existing account this role did not create (uid 1, shell "
         "/usr/sbin/nologin): the role would change its shell and let the group's SSH key log into it on every node. "
         "Nothing was changed. Fix: a name of its own (the default gpuops-nccl, which the role creates), or remove "
         "that account."],
    ),
    "multinode_group_named_as_the_pairs": (
        {"nccl_tests_multinode_group": "pairs", "nccl_tests_pairs": "true"},
        ["nccl_tests_multinode_group is 'pairs', the name nccl_tests_pairs keeps its SSH key and configuration under: "
         "the two would share them. Fix: another group name (rename the inventory group), or nccl_tests_pairs: "
         "false."],
    ),
    # Every problem of the variables, the account, the release and the GPUs in one failure.
    "every_problem_at_once": (
        {"nccl_tests_source_checksum": "", "nccl_tests_args": ["-g", "8"], "nccl_tests_user": "daemon"},
        ["nccl_tests_source_checksum is '': the nccl-tests source",
         "| nccl_tests_args sets -g: the role sets it",
         "| localhost: nccl_tests_user is daemon, an existing account this role did not create",
         "| nccl_tests_nccl_source is distribution (the OS's own libnccl2 and libnccl-dev), which this collection "
         "supports on Debian 13 (contrib, NCCL 2.22.3); localhost runs Debian GNU/Linux 12 (bookworm)",
         "| localhost: nvidia-smi sees 0 of the 8 GPUs of profile hgx_h100_8gpu"],
    ),
    # The control: the role's defaults (its nccl-tests tarball and checksum included) and the hardware profile pass;
    # what is left is this machine's: its OS (and its GPUs).
    "valid_variables_on_an_unsupported_os": (
        {},
        ["nccl_tests_nccl_source is distribution (the OS's own libnccl2 and libnccl-dev), which this collection "
         "supports on Debian 13 (contrib, NCCL 2.22.3); localhost runs Debian GNU/Linux 12 (bookworm)",
         "Fix: a Debian 13 node, or nccl_tests_nccl_source: cuda_repo on Ubuntu 22.04 or 24.04. Debian 12 carries "
         "no NCCL, and NVIDIA publishes its NCCL packages for Ubuntu and RHEL. For a node to be accepted without "
         "NCCL: gpuops_nccl_tests: false (site.yml skips this stage on it) and nccl.single_node and nccl.pairs in "
         "acceptance_optional."],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_in_preflight(tmp_path: Path, case: str) -> None:
    variables, expected = CASES[case]
    inventory = tmp_path / "hosts.yml"
    groups = {
        "hgx_h100_8gpu": {"hosts": {"localhost": {}}},
        "lonely": {"hosts": {"localhost": {}}},
        "pairs": {"hosts": {"localhost": {}}},
    }
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory.write_text(yaml.safe_dump({"all": {"children": groups, "vars": local}}))
    proc = run_preflight(
        PLAYBOOK, TAG, tmp_path, ["--inventory", str(inventory)], {"gpuops_hardware": H100, **variables}
    )
    assert_fails_with(proc, "localhost", expected)


@pytest.mark.parametrize(
    ("value", "failed"),
    [("false", False), ("maybe", True)],
)
def test_a_node_set_to_run_no_nccl_stage_leaves_it(tmp_path: Path, value: str, failed: bool) -> None:
    """gpuops_nccl_tests=false (a string, as from the command line) takes the node out of playbooks/nccl_tests.yml
    before the role: this Debian 12 machine, which the role would refuse, ends the play without a failure. A value
    that is no boolean stops it with the variable's message."""
    inventory = tmp_path / "hosts.yml"
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpuops_hardware": H100}
    groups = {"rack_a": {"hosts": {"localhost": {}}}, "hgx_h100_8gpu": {"hosts": {"localhost": {}}}}
    inventory.write_text(yaml.safe_dump({"all": {"children": groups, "vars": local}}))
    proc = run_preflight(ROOT / "playbooks" / "nccl_tests.yml", "nccl_tests", tmp_path,
                         ["--inventory", str(inventory)], {"gpuops_nccl_tests": value})  # fmt: skip
    if failed:
        assert_fails_with(proc, "localhost", ['gpuops_nccl_tests is "maybe": not a boolean (true or false;'])
    else:
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert re.search(r"localhost\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", proc.stdout)
        assert "Work out and check the node's problems" not in proc.stdout
