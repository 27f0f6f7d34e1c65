"""A batched stage refuses a node's bad value before its first batch changes any node (playbooks/stage_inputs.yml);
site.yml checks every stage's inputs before stage 1, and leaves a node that joins no cluster out of stage 4.

Three nodes the controller cannot reach (TEST-NET addresses), the third with a value that would add a chrony
directive: its refusal comes before the canary batch contacts its node, and the second node is never contacted (the
canary's failure stops the rollout). Controller-side only, no bench node needed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from preflight_harness import ROOT, unfold

NODES = {"node-a": "192.0.2.1", "node-b": "192.0.2.2", "node-c": "192.0.2.3"}
BAD = {"os_baseline_ntp_servers": ["ntp.example.com\nallow all"]}


def run(tmp_path, hosts: dict, children: dict, *args: str) -> tuple[int, str]:
    """ansible-playbook on nodes nobody answers at (they fail fast as unreachable): its status and output, unfolded."""
    inventory = tmp_path / "inventory.json"
    unreachable = {"ansible_ssh_common_args": "-o ConnectTimeout=2 -o ConnectionAttempts=1"}
    inventory.write_text(json.dumps({"all": {"hosts": hosts, "children": children, "vars": unreachable}}))
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(inventory), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_HOST_KEY_CHECKING": "False"},
    )
    return proc.returncode, unfold(proc.stdout + proc.stderr)


def test_a_bad_value_on_the_last_node_is_refused_before_the_canary_batch(tmp_path):
    hosts = {name: {"ansible_host": address, **(BAD if name == "node-c" else {})} for name, address in NODES.items()}
    status, output = run(tmp_path, hosts, {}, "--skip-tags", "gpuops_inventory", "playbooks/os_baseline.yml")
    assert status != 0, output[-3000:]
    refused = output.find("node-c: os_baseline_ntp_servers")
    canary = output.find("PLAY [Stage 1: OS baseline]")
    assert 0 < refused < canary, output[-4000:]
    # The canary is contacted (and fails: nobody is there); the next batch never is.
    assert "fatal: [node-a]: UNREACHABLE!" in output, output[-3000:]
    assert "[node-b]: UNREACHABLE" not in output, output[-3000:]
    recap = dict(re.findall(r"(node-\w) : ok=\d+ changed=\d+ unreachable=(\d+) failed=\d+", output))
    assert recap == {"node-a": "1", "node-b": "0", "node-c": "0"}, output[-1500:]


def test_site_leaves_a_node_that_joins_no_cluster_out_of_the_kubernetes_stage_untouched(tmp_path):
    """gpuops_kubernetes_join false: the node leaves stage 4's plays at their first task, so stage 4 never contacts it
    (nor shows it); a joining node in the same run is contacted there (and, unreachable here, fails). --tags k8s_node:
    the other stages run only their controller-side always-tagged checks."""
    hosts = {
        "node-a": {"ansible_host": NODES["node-a"], "gpuops_kubernetes_join": "false"},
        "node-b": {"ansible_host": NODES["node-b"]},
    }
    rack = {"rack_r1": {"hosts": dict.fromkeys(hosts)}, "pcie_l40s_4gpu": {"hosts": dict.fromkeys(hosts)}}
    _status, output = run(tmp_path, hosts, rack, "--tags", "k8s_node", "playbooks/site.yml")
    # One play header per batch: node-a alone is the canary batch.
    stage = "".join(part for part in re.split(r"(?=PLAY \[|PLAY RECAP)", output) if part.startswith("PLAY [Stage 4:"))
    assert "[node-b]: UNREACHABLE" in stage, output[-3000:]
    assert "node-a" not in stage, stage[-3000:]
    recap = {
        host: (int(unreachable), int(skipped))
        for host, unreachable, skipped in re.findall(
            r"(node-\w) : ok=\d+ changed=\d+ unreachable=(\d+) failed=\d+ skipped=(\d+)", output
        )
    }
    assert recap["node-a"][0] == 0 and recap["node-b"][0] == 1, output[-1500:]
    # Left out, not skipped task by task (a condition on each of the stage's tasks showed ~100 skipped results): its
    # skipped results are those of the other stages' always-tagged checks, which node-b has too.
    assert recap["node-a"][1] <= recap["node-b"][1], output[-1500:]


@pytest.mark.parametrize(
    ("variable", "value"),
    [("rdma_fabric_roce_dscp", "64"), ("nccl_tests_dir", "relative/nccl-tests")],
)
def test_site_refuses_a_bad_value_of_a_later_stage_before_stage_1(tmp_path, variable, value):
    """site.yml checks every stage's inputs in its first play: a bad value for stage 3 (the fabric, the NCCL stage)
    refuses its node there, before stage 1's canary batch is contacted; the stages' own input plays then have no host
    (no result per node)."""
    hosts = {name: {"ansible_host": address} for name, address in NODES.items()}
    hosts["node-c"][variable] = value
    rack = {"rack_r1": {"hosts": dict.fromkeys(hosts)}, "pcie_l40s_4gpu": {"hosts": dict.fromkeys(hosts)}}
    status, output = run(tmp_path, hosts, rack, "playbooks/site.yml")
    assert status != 0, output[-3000:]
    refused = output.find(f"node-c: {variable}")
    first = output.find("PLAY [Inputs of every stage, before any stage changes a node]")
    canary = output.find("PLAY [Stage 1: OS baseline]")
    assert 0 <= first < refused < canary, output[-4000:]
    assert "fatal: [node-a]: UNREACHABLE!" in output, output[-3000:]
    assert "[node-c]: UNREACHABLE" not in output, output[-3000:]
    own = r"PLAY \[Inputs of every node, before the first batch\] \**\s*(skipping: no hosts)?"
    stage_inputs = re.findall(own, output)
    assert stage_inputs and set(stage_inputs) == {"skipping: no hosts"}, output[-3000:]
