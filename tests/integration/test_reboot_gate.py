"""The reboot contract's gate (module_utils reboot.gate, applied by the decide action), through Ansible: each stage's
preflight decision carries the reasons its changes need a reboot. A real run stops before any change unless
<role>_reboot_ok; a dry run previews the whole plan and says where the real run would stop; an allowed reboot is
announced. One real run and one dry run, each case a host of its own (preflight_harness.CaseRun)."""

from __future__ import annotations

import pytest
from preflight_harness import CaseRun, local_cases, unfold

PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: The gate
      gpuops.bringup.decide:
        decision:
          problems: "{{ problems | default([]) }}"
          reboot_reasons: "{{ reasons }}"
        reboot:
          role: nvidia_driver
          allowed: "{{ nvidia_driver_reboot_ok }}"
          change: install the driver
    - name: After the gate
      ansible.builtin.debug:
        msg: the role goes on
"""
REASONS = ["nouveau is loaded and holds the GPUs", "the running kernel 6.1.0-40 is not one DKMS builds for"]
STOP = (
    "{host} will need a reboot (nouveau is loaded and holds the GPUs; the running kernel 6.1.0-40 is not one DKMS "
    "builds for) and nvidia_driver_reboot_ok is false, so nothing was changed. Fix: set nvidia_driver_reboot_ok: "
    "true to let the role install the driver and reboot the node (drain it first if it runs workloads)."
)
ALLOWED = (
    "{host} will need a reboot (nouveau is loaded and holds the GPUs; the running kernel 6.1.0-40 is not one DKMS "
    "builds for), which nvidia_driver_reboot_ok allows: the role will install the driver and reboot the node."
)
# The words -e nvidia_driver_reboot_ok=false and =no give (strings) are not truthy.
REFUSED = {"refused": False, "refused_word_false": "false", "refused_word_no": "no"}
CASES = {
    **{case: {"reasons": REASONS, "nvidia_driver_reboot_ok": ok} for case, ok in REFUSED.items()},
    "allowed": {"reasons": REASONS, "nvidia_driver_reboot_ok": "true"},
    "no_reboot": {"reasons": [], "nvidia_driver_reboot_ok": False},
    # Refused for its input anyway: the operator is not asked to allow a reboot too.
    "refused_input": {"reasons": REASONS, "nvidia_driver_reboot_ok": False, "problems": ["refused_input: bad input"]},
}


@pytest.fixture(scope="module", params=[False, True], ids=["real", "dry"])
def gate(request, tmp_path_factory):
    """(the run, whether it was a dry run)."""
    tmp = tmp_path_factory.mktemp("gate")
    (tmp / "play.yml").write_text(PLAY)
    return CaseRun(tmp / "play.yml", "all", tmp, local_cases(CASES), check=request.param), request.param


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_reboot_stops_a_real_run_and_is_previewed_in_a_dry_run(gate, case):
    run, dry = gate
    stop = unfold(STOP.replace("{host}", case))
    if dry:
        output = run.assert_passes_unchanged(case)
        assert f"Check mode, so the preview goes on; a real run stops here: {stop}" in output
        assert output.endswith("the role goes on")
    else:
        run.assert_fails_with(case, [STOP])
        assert "the role goes on" not in run.text(case)


def test_an_allowed_reboot_is_announced_and_the_role_goes_on(gate):
    run, _dry = gate
    output = run.assert_passes_unchanged("allowed")
    assert unfold(ALLOWED.replace("{host}", "allowed")) in output and output.endswith("the role goes on")


def test_no_reboot_needed_says_nothing(gate):
    run, _dry = gate
    output = run.assert_passes_unchanged("no_reboot")
    assert "reboot" not in output and output.endswith("the role goes on")


def test_a_node_refused_for_its_input_is_not_asked_for_a_reboot(gate):
    run, _dry = gate
    run.assert_fails_with("refused_input", ["refused_input: bad input"])
    assert "reboot" not in run.text("refused_input")
