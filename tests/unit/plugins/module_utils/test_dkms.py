"""dkms's parsers on outputs captured in the bench's Debian 13 containers (tests/fixtures/dkms, SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import dkms

DKMS = Path(__file__).resolve().parents[3] / "fixtures" / "dkms"
MAKE_LOG = DKMS / "trixie-nvidia-current-open-550.163.01-6.12.117.make.log"
BUILD_DIR = "/var/lib/dkms/nvidia-current-open/550.163.01/build"
KERNEL = "6.12.117+deb13-amd64"
NOTE = "(WARNING! Diff between built and installed)"


def test_dkms_status_of_an_installed_module():
    assert dkms.parse_dkms_status((DKMS / "trixie-tesla-535-installed.status.txt").read_text()) == [
        {
            "module": "nvidia-tesla-535",
            "version": "535.274.02",
            "kernel": KERNEL,
            "arch": "x86_64",
            "state": "installed",
            "note": "",
        }
    ]


def test_dkms_status_of_a_module_whose_build_failed_is_only_added():
    records = dkms.parse_dkms_status((DKMS / "trixie-open-550-failed.status.txt").read_text())
    assert records == [
        {"module": "nvidia-current-open", "version": "550.163.01", "kernel": None, "arch": None, "state": "added",
         "note": ""}
    ]  # fmt: skip
    assert dkms.build_state(records, "nvidia-current-open", "550.163.01", KERNEL) == "added"
    assert dkms.build_state(records, "nvidia-tesla-535", "535.274.02", KERNEL) == "absent"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # dkms 2.x separates module and version with a comma.
        (
            "nvidia, 470.57.02, 5.4.0-80-generic, x86_64: installed",
            ("nvidia", "470.57.02", "5.4.0-80-generic", "x86_64", "installed", ""),
        ),
        # A note after the state stays out of it.
        (
            "nvidia-current/535.261.03, 6.1.0-50-amd64, x86_64: installed (WARNING! Diff between built and installed)",
            ("nvidia-current", "535.261.03", "6.1.0-50-amd64", "x86_64", "installed", NOTE),
        ),
        (
            "nvidia-tesla-535/535.274.02, 6.18.44-fc-v509, x86_64: built",
            ("nvidia-tesla-535", "535.274.02", "6.18.44-fc-v509", "x86_64", "built", ""),
        ),
    ],
)
def test_dkms_status_formats(line, expected):
    (record,) = dkms.parse_dkms_status(line + "\n")
    assert tuple(record[k] for k in ("module", "version", "kernel", "arch", "state", "note")) == expected


def test_dkms_status_ignores_warnings_and_blank_lines():
    text = "Deprecated feature: REMAKE_INITRD\n\nnvidia-tesla-535/535.274.02, 6.12.117+deb13-amd64, x86_64: installed\n"
    assert [r["state"] for r in dkms.parse_dkms_status(text)] == ["installed"]


def test_build_state_per_kernel():
    records = dkms.parse_dkms_status(
        "nvidia-tesla-535/535.274.02, 6.12.117+deb13-amd64, x86_64: installed\n"
        "nvidia-tesla-535/535.274.02, 6.12.118+deb13-amd64, x86_64: built\n"
    )
    assert dkms.build_state(records, "nvidia-tesla-535", "535.274.02", "6.12.117+deb13-amd64") == "installed"
    assert dkms.build_state(records, "nvidia-tesla-535", "535.274.02", "6.12.118+deb13-amd64") == "built"
    # Registered but not built for a kernel (the running kernel without headers, in a container).
    assert dkms.build_state(records, "nvidia-tesla-535", "535.274.02", "6.18.44-fc-v509") == "added"


def test_the_failed_build_log_names_kernel_exit_code_and_the_compiler_error():
    log = dkms.parse_make_log(MAKE_LOG.read_text(), build_dir=BUILD_DIR)
    assert (log["kernel"], log["arch"], log["exit_code"], log["error_count"]) == (KERNEL, "x86_64", 2, 1)
    assert log["errors"] == [
        "nvidia/nv-pci.c: In function 'nv_resize_pcie_bars':\n"
        "nvidia/nv-pci.c:237:9: error: too few arguments to function 'pci_resize_resource'\n"
        "  237 |     r = pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size);\n"
        "      |         ^~~~~~~~~~~~~~~~~~~"
    ]


def test_the_summary_puts_the_errors_on_one_line():
    log = dkms.parse_make_log(MAKE_LOG.read_text(), build_dir=BUILD_DIR)
    assert log["summary"] == (
        "nvidia/nv-pci.c: In function 'nv_resize_pcie_bars': | nvidia/nv-pci.c:237:9: error: too few arguments to "
        "function 'pci_resize_resource' | 237 | r = pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size);"
    )


def test_gccs_typographic_quotes_are_reported_as_ascii():
    # An edited copy: what gcc writes under a UTF-8 locale (the apt module's), as the Molecule scenario saw it.
    text = MAKE_LOG.read_text().replace("'nv_resize_pcie_bars'", "\u2018nv_resize_pcie_bars\u2019")
    text = text.replace("'pci_resize_resource'", "\u2018pci_resize_resource\u2019")
    assert dkms.parse_make_log(text, build_dir=BUILD_DIR) == dkms.parse_make_log(MAKE_LOG.read_text(), BUILD_DIR)


def test_build_log_errors_are_capped_deduplicated_and_cut():
    error = "nv.c:1:1: error: " + "x" * 400
    text = "\n".join([error, error] + [f"nv{i}.c:1:1: error: e{i}" for i in range(12)])
    log = dkms.parse_make_log(text, limit=3)
    assert log["error_count"] == 13
    assert len(log["errors"]) == 3
    assert log["errors"][0].endswith("...") and len(log["errors"][0]) == 300
    assert (log["kernel"], log["exit_code"]) == (None, None)


def test_a_link_failure_without_compiler_errors_reports_its_error_lines():
    text = (
        "DKMS (dkms-3.2.2) make.log for nvidia-tesla-535/535.274.02 for kernel 6.12.117+deb13-amd64 (x86_64)\n"
        "  MODPOST Module.symvers\n"
        "ERROR: modpost: GPL-incompatible module nvidia.ko uses GPL-only symbol 'follow_pfn'\n"
        "make: *** [Makefile:140: modules] Error 2\n"
        "# exit code: 2\n"
    )
    log = dkms.parse_make_log(text)
    assert log["error_count"] == 0
    assert log["errors"] == [
        "ERROR: modpost: GPL-incompatible module nvidia.ko uses GPL-only symbol 'follow_pfn'",
        "make: *** [Makefile:140: modules] Error 2",
    ]


def test_module_files_accepts_every_compression_and_names_the_missing():
    names = ["nvidia-tesla-535.ko.xz", "nvidia-tesla-535-uvm.ko.xz", "nvidia-tesla-535-drm.ko", "nvidia-current.ko.xz"]
    present, missing = dkms.module_files(names, "nvidia-tesla-535")
    assert present == ["nvidia-tesla-535.ko.xz", "nvidia-tesla-535-drm.ko", "nvidia-tesla-535-uvm.ko.xz"]
    assert missing == ["nvidia-tesla-535-modeset", "nvidia-tesla-535-peermem"]


def test_a_dkms_3_0_10_log_without_exit_code_line_takes_make_s_error():
    """dkms 3.0.10 (Debian 12's) writes no "# exit code:" line: the top-level make's "Error 2" gives it."""
    build_dir = "/var/lib/dkms/nvidia/550.144.03/build"
    text = (DKMS / "bookworm-dkms3.0.10-standin-nvidia-550.144.03-6.1.0-50.make.log").read_text()
    log = dkms.parse_make_log(text, build_dir=build_dir)
    assert (log["kernel"], log["arch"], log["exit_code"], log["error_count"]) == ("6.1.0-50-amd64", "x86_64", 2, 2)
    assert log["summary"].startswith(
        "nvidia.c: In function 'standin_resize': | nvidia.c:13:16: error: too few arguments to function "
        "'pci_resize_resource' |"
    )


def test_nvidia_s_rhel_open_dkms_module_builds_files_named_nvidia():
    """NVIDIA's RHEL DKMS module nvidia-open installs nvidia.ko, nvidia-uvm.ko... (as the bench's stand-in does)."""
    names = ["nvidia.ko", "nvidia-modeset.ko", "nvidia-drm.ko", "nvidia-uvm.ko", "nvidia-peermem.ko"]
    assert dkms.module_files(names, "nvidia-open") == (names, [])


# The two layouts of /proc/driver/nvidia/version, as NVIDIA's modules print them (public captures: a
# Tesla T4 host with the open 555.42.02 module, an Ubuntu host with the proprietary 515.76 one).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  555.42.02  Release Build  "
            "(dvs-builder@U16-I3-A03-02-4)  Mon May 13 17:10:33 UTC 2024\n"
            "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n",
            {"version": "555.42.02", "flavor": "open"},
        ),
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 19:21:56 UTC 2022\n"
            "GCC version:  gcc version 7.5.0 (Ubuntu 7.5.0-3ubuntu1~18.04)\n",
            {"version": "515.76", "flavor": "proprietary"},
        ),
        ("", None),
        ("something else\n", None),
    ],
)
def test_nvrm_version(text, expected):
    assert dkms.parse_nvrm_version(text) == expected


def test_loaded_nvidia_modules():
    proc = (
        "nvidia_uvm 1126400 0 - Live 0x0000000000000000 (POE)\n"
        "nvidia_drm 61440 0 - Live 0x0000000000000000 (POE)\n"
        "nvidia 40812544 16 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
        "nvme 49152 2 - Live 0x0000000000000000\n"
    )
    assert dkms.loaded_nvidia_modules(proc) == ["nvidia", "nvidia_drm", "nvidia_uvm"]
