"""playbooks/site.yml: the stages in order, and the NCCL stage handing its gate to acceptance there (the early check of
acceptance's inputs runs in tests/integration/test_acceptance_bad_input.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def imports():
    return {
        play["ansible.builtin.import_playbook"]: play
        for play in yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
        if "ansible.builtin.import_playbook" in play
    }


def test_the_stages_run_in_order_acceptance_last():
    assert list(imports()) == ["os_baseline.yml", "nvidia_driver.yml", "cuda_toolkit.yml", "rdma_fabric.yml",
                               "k8s_node.yml", "nccl_tests.yml", "acceptance.yml"]  # fmt: skip


def test_a_node_below_an_nccl_gate_goes_on_to_acceptance_in_site_yml_only():
    """Alone, the NCCL stage fails a node below its gate (the role's default); in site.yml it reports only, so that
    acceptance, which fails the nodes it does not accept, judges that node with its evidence (a failed node would
    leave the run before it)."""
    defaults = yaml.safe_load((ROOT / "roles" / "nccl_tests" / "defaults" / "main.yml").read_text())
    assert defaults["nccl_tests_fail_on_gate"] is True
    assert imports()["nccl_tests.yml"]["vars"] == {"__stage_inputs_checked": True, "nccl_tests_fail_on_gate": False}
    acceptance = yaml.safe_load((ROOT / "roles" / "acceptance" / "defaults" / "main.yml").read_text())
    assert acceptance["acceptance_fail_unaccepted"] is True
