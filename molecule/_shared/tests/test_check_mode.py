"""Check mode on the converged nodes reports no change (shared by every scenario).

Molecule's own `check` step runs before converge, on fresh nodes; this one
runs in verify, after idempotence, and fails on any change check mode reports.
"""

import os
import re
import subprocess

# Recap lines may wrap: match across whitespace, newlines included.
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", re.MULTILINE)


def test_check_mode_reports_no_change_on_converged_nodes():
    playbook = os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "converge.yml")
    proc = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "--check", "--diff", playbook],
        capture_output=True,
        text=True,
        check=False,
        # Molecule forces colour for its own output; the recap is parsed here.
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    recap = RECAP.findall(proc.stdout)
    assert recap, f"no PLAY RECAP in the output:\n{output[-4000:]}"
    changed = {host: int(n) for host, n in recap if int(n)}
    assert not changed, f"check mode would change converged nodes {changed}:\n{output[-6000:]}"
