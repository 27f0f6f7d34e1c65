# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The OS baseline stage's preflight: every problem of a node at once, and why its changes will need a reboot.

From one read of the node (os_facts' gpuops_os) and the role's variables. A node with problems is refused with all of
them in one message, so one round of fixes clears it; the reboot reasons feed the reboot contract's gate
(_common/tasks/reboot_gate.yml), which comes after the problems: an operator is never asked to allow a reboot for a
node that would be refused anyway.
"""

from __future__ import annotations

import json

from ansible_collections.gpuops.bringup.plugins.module_utils.repositories import list_problems

# os-release ID -> the major releases the role supports.
SUPPORTED = {"debian": ("12", "13"), "ubuntu": ("22", "24"), "rocky": ("8", "9"), "rhel": ("8", "9")}
SUPPORTED_TEXT = "Debian 12/13, Ubuntu 22.04/24.04, Rocky Linux and RHEL 8/9"
REPOSITORY_EXAMPLE = (
    "{name: example, uris: [https://repo.example.com/apt], suites: [stable], components: [main], "
    "key_url: https://repo.example.com/key.asc, key_fingerprint: <the vendor's fingerprint>}"
)


def _get(mapping, *path, default=None):
    for key in path:
        mapping = mapping.get(key) if isinstance(mapping, dict) else None
    return default if mapping is None else mapping


def reboot_reasons(*, node, cmdline, blacklist_nouveau):
    """Why the baseline's changes need a reboot: kernel arguments missing from the running command line, nouveau
    loaded; none on a node that does not own its kernel (a container: its host's command line and modules)."""
    if not _get(node, "capabilities", "own_kernel"):
        return []
    running = _get(node, "kernel", "cmdline", default=[])
    missing = [argument for argument in cmdline if argument not in running]
    reasons = [f"kernel arguments {' '.join(missing)} are not in the running command line"] if missing else []
    if blacklist_nouveau and _get(node, "kernel_modules", "nouveau") == "loaded":
        reasons.append("nouveau is loaded")
    return reasons


def preflight(*, host, node, variables):
    """{problems, reboot_reasons} of one node from os_facts' gpuops_os and the role's variables (os_baseline_*,
    gpuops_kubernetes_join), each problem naming the value and the fix."""
    problems = []
    if not variables.get("os_baseline_disable_swap") and variables.get("gpuops_kubernetes_join"):
        problems.append(
            "os_baseline_disable_swap is false (swap kept) but gpuops_kubernetes_join is true: kubelet refuses to "
            "start with swap on (failSwapOn). Fix: set os_baseline_disable_swap: true, or gpuops_kubernetes_join: "
            "false for nodes that stay out of Kubernetes."
        )
    release = _get(node, "os", default={})
    if release.get("major") not in SUPPORTED.get(release.get("id"), ()):
        problems.append(
            f"{host} runs {release.get('name') or 'an unknown OS'} (ID={release.get('id')}, "
            f"VERSION_ID={release.get('version_id')}), which os_baseline does not support. Supported: "
            f"{SUPPORTED_TEXT}. Fix: install a supported release, or remove the host from this play."
        )
    manager = release.get("package_manager")
    # A node of an unknown package manager has its OS refused above; its repositories are not judged against it.
    found = (
        list_problems(variables.get("os_baseline_package_repositories") or [], manager)
        if manager in ("apt", "dnf")
        else []
    )
    if found:
        problems.append(
            "os_baseline_package_repositories"
            + "; os_baseline_package_repositories".join(found)
            + f". Fix the entry, e.g. {REPOSITORY_EXAMPLE}."
        )
    kernel = _get(node, "kernel", default={})
    if variables.get("os_baseline_kernel_drift_action") == "fail" and kernel.get("drift"):
        problems.append(
            f"{host} runs kernel {kernel.get('running')} but {kernel.get('newest')} is installed too, so the next "
            "boot changes kernel under DKMS, and os_baseline_kernel_drift_action is fail. Fix: reboot into "
            f"{kernel.get('newest')} (or remove it), or set os_baseline_kernel_drift_action: warn."
        )
    cmdline = variables.get("os_baseline_kernel_cmdline") or []
    own_kernel = _get(node, "capabilities", "own_kernel")
    if cmdline and own_kernel and _get(node, "boot", "loader", default="none") == "none":
        problems.append(
            f"os_baseline_kernel_cmdline is {json.dumps(cmdline)} but {host} has no bootloader this role manages "
            "(GRUB with /etc/default/grub and update-grub, or grubby). Fix: install GRUB, or set "
            "os_baseline_kernel_cmdline: [] and manage the command line yourself."
        )
    return {
        "problems": problems,
        "reboot_reasons": reboot_reasons(
            node=node, cmdline=cmdline, blacklist_nouveau=bool(variables.get("os_baseline_blacklist_nouveau"))
        ),
    }
