"""A batched stage refuses a node's bad value before its first batch changes any node (playbooks/stage_inputs.yml).

Three nodes the controller cannot reach (TEST-NET addresses), the third with a value that would add a chrony
directive: its refusal comes before the canary batch contacts its node, and the second node is never contacted (the
canary's failure stops the rollout). Controller-side only, no bench node needed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

from preflight_harness import ROOT, unfold

NODES = {"node-a": "192.0.2.1", "node-b": "192.0.2.2", "node-c": "192.0.2.3"}
BAD = {"os_baseline_ntp_servers": ["ntp.example.com\nallow all"]}


def test_a_bad_value_on_the_last_node_is_refused_before_the_canary_batch(tmp_path):
    hosts = {name: {"ansible_host": address, **(BAD if name == "node-c" else {})} for name, address in NODES.items()}
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts, "vars": {
        "ansible_ssh_common_args": "-o ConnectTimeout=2 -o ConnectionAttempts=1"}}}))  # fmt: skip
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(inventory), "--skip-tags", "gpuops_inventory", "playbooks/os_baseline.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_HOST_KEY_CHECKING": "False"},
    )
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode != 0, output[-3000:]
    refused = output.find("node-c: os_baseline_ntp_servers")
    canary = output.find("PLAY [Stage 1: OS baseline]")
    assert 0 < refused < canary, output[-4000:]
    # The canary is contacted (and fails: nobody is there); the next batch never is.
    assert "fatal: [node-a]: UNREACHABLE!" in output, output[-3000:]
    assert "[node-b]: UNREACHABLE" not in output, output[-3000:]
    recap = dict(re.findall(r"(node-\w) : ok=\d+ changed=\d+ unreachable=(\d+) failed=\d+", output))
    assert recap == {"node-a": "1", "node-b": "0", "node-c": "0"}, output[-1500:]
