# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reboot contract's gate, one for every stage: a stage whose changes need a reboot stops in preflight, before any
change, unless <role>_reboot_ok. In check mode nothing changes, so the preview goes on and says where the real run
would stop: a first dry run of a fresh node shows its whole plan. An allowed reboot is announced. The decide action
applies it to a stage's decision (its reboot_reasons) once the decision has no other problem: an operator is never
asked to allow a reboot for a node that would be refused anyway.
"""

from __future__ import annotations


def gate(*, host, role, reasons, allowed, change, check_mode):
    """{problem, notice}: problem (or None) stops the node; notice (or None) is what the operator is told.

    reasons: why the stage's changes need a reboot (empty: none is needed, and the gate says nothing). role: the
    role's variable prefix (<role>_reboot_ok). change: what the role does before it reboots, as a verb phrase.
    """
    if not reasons:
        return {"problem": None, "notice": None}
    why = "; ".join(reasons)
    if allowed:
        return {
            "problem": None,
            "notice": (
                f"{host} will need a reboot ({why}), which {role}_reboot_ok allows: the role will {change} and reboot "
                "the node."
            ),
        }
    stop = (
        f"{host} will need a reboot ({why}) and {role}_reboot_ok is false, so nothing was changed. Fix: set "
        f"{role}_reboot_ok: true to let the role {change} and reboot the node (drain it first if it runs workloads)."
    )
    if check_mode:
        return {"problem": None, "notice": f"Check mode, so the preview goes on; a real run stops here: {stop}"}
    return {"problem": stop, "notice": None}
