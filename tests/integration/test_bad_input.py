"""Bad input fails in preflight, before any change, with a message naming the variable, the value and the fix.

The preflight runs against the machine running the tests (a real kernel, so
the reboot contract is exercised for real), limited to the preflight tag and
in check mode: it only reads.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_harness import CaseRun, local_case_tests, local_cases

PLAYBOOK = Path(__file__).with_name("preflight.yml")
TAG = "os_baseline_preflight"
# The machine's own command line never carries this argument.
ABSENT_ARG = "gpuops.reboot_probe=1"
VALID = {"os_baseline_kernel_cmdline": []}

CASES = {
    "cmdline_is_a_string": (
        {"os_baseline_kernel_cmdline": "iommu=pt pci=realloc=off"},
        [
            'os_baseline_kernel_cmdline is "iommu=pt pci=realloc=off": not a list (got str)',
            "Fix: split it, e.g. [iommu=pt, pci=realloc=off]; one kernel argument per list item",
        ],
    ),
    "cmdline_item_holds_two_arguments": (
        {"os_baseline_kernel_cmdline": ["iommu=pt pci=realloc=off"]},
        ['os_baseline_kernel_cmdline has ["iommu=pt pci=realloc=off"]', "Fix: split it"],
    ),
    "module_name_malformed": (
        {**VALID, "os_baseline_kernel_modules": ["ib_umad", "rdma ucm"]},
        ['os_baseline_kernel_modules has ["rdma ucm"]', "Fix: names as lsmod prints them"],
    ),
    "sysctl_value_is_a_boolean": (
        {**VALID, "os_baseline_sysctl": {"net.ipv4.ip_forward": True}},
        ['os_baseline_sysctl has ["net.ipv4.ip_forward"]', "Fix: e.g. net.ipv4.ip_forward: 1"],
    ),
    "sysctl_is_a_list": (
        {**VALID, "os_baseline_sysctl": ["kernel.numa_balancing=0"]},
        ["os_baseline_sysctl", "dict"],
    ),
    "mirror_url_malformed": (
        {**VALID, "gpuops_mirror_url": "ftp://mirror.example.com/debian"},
        ['gpuops_mirror_url is "ftp://mirror.example.com/debian"', "http://, https:// or file://", "Fix: set it to"],
    ),
    "mirror_url_with_a_space": (
        {**VALID, "gpuops_mirror_url": "http://mirror.example.com/site mirror"},
        ['gpuops_mirror_url is "http://mirror.example.com/site mirror"', "no spaces"],
    ),
    "package_lock_timeout_negative": (
        {**VALID, "gpuops_package_lock_timeout": -1},
        [
            "gpuops_package_lock_timeout is -1: out of range: from 0 to 3600.",
            "(300, the default), or 0 to fail at once",
        ],
    ),
    "package_lock_timeout_not_a_number": (
        {**VALID, "gpuops_package_lock_timeout": "5m"},
        # The grammar check names the value and the fix (the role's own variables check, before any read).
        [
            'package_lock_timeout_not_a_number: gpuops_package_lock_timeout is "5m": not a whole number from 0 to 3600',
            "Fix: the seconds to wait for another apt or dpkg to release its locks",
        ],
    ),
    "swap_kept_while_joining_kubernetes": (
        {**VALID, "os_baseline_disable_swap": False},
        [
            "os_baseline_disable_swap is false (swap kept) but gpuops_kubernetes_join is true",
            "Fix: set os_baseline_disable_swap: true",
        ],
    ),
    "repository_without_a_key": (
        {
            **VALID,
            "os_baseline_package_repositories": [
                {
                    "name": "example",
                    "uris": ["https://repo.example.com/apt"],
                    "suites": ["stable"],
                    "components": ["main"],
                }
            ],
        },
        ["os_baseline_package_repositories[0] has no signing key", "never trusted without its key"],
    ),
    "repository_key_checksum_malformed": (
        {
            **VALID,
            "os_baseline_package_repositories": [
                {
                    "name": "example",
                    "uris": ["https://repo.example.com/apt"],
                    "suites": ["stable"],
                    "components": ["main"],
                    "key_url": "https://repo.example.com/key.asc",
                    "key_sha256": "abc123",
                }
            ],
        },
        ["os_baseline_package_repositories[0] key_sha256 'abc123' is not a SHA-256 hex digest", "sha256sum"],
    ),
    "flat_repository_with_components": (
        {
            **VALID,
            "os_baseline_package_repositories": [
                {
                    "name": "cuda",
                    "uris": ["https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"],
                    "suites": ["/"],
                    "components": ["main"],
                    "key_content": "-----BEGIN PGP PUBLIC KEY BLOCK-----",
                }
            ],
        },
        ["a flat repository (suite '/') takes no components"],
    ),
    "drift_action_unknown": (
        {**VALID, "os_baseline_kernel_drift_action": "block"},
        ["os_baseline_kernel_drift_action", "warn, fail", "block"],
    ),
    "every_problem_at_once": (
        {
            **VALID,
            "os_baseline_disable_swap": False,
            "os_baseline_kernel_drift_action": "fail",
            "os_baseline_package_repositories": [
                {
                    "name": "x",
                    "uris": ["https://repo.example.com/apt"],
                    "suites": ["/"],
                    "components": ["main"],
                    "key_content": "-----BEGIN PGP",
                }
            ],
        },
        [
            "os_baseline_disable_swap is false (swap kept) but gpuops_kubernetes_join is true",
            "| os_baseline_package_repositories[0] a flat repository (suite '/') takes no components",
        ],
    ),
}


# A node whose changes need a reboot: a real run stops before any change; a dry run previews the whole plan and says
# where the real run would stop.
REBOOT = {"os_baseline_kernel_cmdline": [ABSENT_ARG], "os_baseline_reboot_ok": False}
GRUB = Path("/etc/default/grub").exists()


# Every case, the control (valid variables) and the reboot preview in one run.
case_run, test_bad_input_fails_in_preflight = local_case_tests(
    PLAYBOOK, TAG, CASES, {"control": VALID, "reboot_preview": REBOOT}
)


@pytest.mark.skipif(not GRUB, reason="without GRUB the command line is a problem before any reboot (next test)")
def test_a_needed_reboot_stops_a_real_run_before_any_change(tmp_path: Path) -> None:
    run = CaseRun(PLAYBOOK, TAG, tmp_path, local_cases({"reboot": REBOOT}), check=False)
    run.assert_fails_with("reboot", [
        f"{{host}} will need a reboot (kernel arguments {ABSENT_ARG} are not in the running command line) and "
        "os_baseline_reboot_ok is false, so nothing was changed. Fix: set os_baseline_reboot_ok: true to let the role "
        "apply the change and reboot the node (drain it first if it runs workloads).",
    ])  # fmt: skip


def test_a_needed_reboot_is_previewed_in_check_mode(case_run: CaseRun) -> None:
    output = case_run.text("reboot_preview")
    if GRUB:
        case_run.assert_passes_unchanged("reboot_preview")
        assert (
            "Check mode, so the preview goes on; a real run stops here: reboot_preview will need a reboot (kernel "
            f"arguments {ABSENT_ARG} are not in the running command line) and os_baseline_reboot_ok is false"
        ) in output
    else:
        # This machine has no bootloader the role manages: that problem comes first, and no reboot is asked for.
        case_run.assert_fails_with("reboot_preview", ["{host} has no bootloader this role manages"])
        assert "will need a reboot" not in output


def test_valid_input_passes_preflight(case_run: CaseRun) -> None:
    """The control: the same run with valid variables succeeds, so the failures above come from the input."""
    case_run.assert_passes_unchanged("control")


@pytest.mark.skipif(Path("/etc/default/grub").exists(), reason="this machine has GRUB: the role can manage it")
def test_kernel_cmdline_without_a_bootloader(tmp_path: Path) -> None:
    variables = {"os_baseline_kernel_cmdline": [ABSENT_ARG], "os_baseline_reboot_ok": True}
    run = CaseRun(PLAYBOOK, TAG, tmp_path, local_cases({"no_bootloader": variables}))
    run.assert_fails_with(
        "no_bootloader",
        [
            f'os_baseline_kernel_cmdline is ["{ABSENT_ARG}"] but {{host}} has no bootloader this role manages',
            "Fix: install GRUB, or set os_baseline_kernel_cmdline: []",
        ],
    )
