"""nvidia_driver_facts.gather over trees laid out as the bench's Debian 13 containers had them (tests/fixtures/dkms).

A built node: tesla-535 installed by DKMS for the image's kernel, the host's kernel without headers. A failed
node: the open 550 module only added, its build/make.log the one captured after the failed build.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.modules import nvidia_driver_facts

DKMS = Path(__file__).resolve().parents[3] / "fixtures" / "dkms"
KERNEL = "6.12.117+deb13-amd64"
HOST_KERNEL = "6.18.44-fc-v509"
FILES = [f"nvidia-tesla-535{s}.ko.xz" for s in ("", "-modeset", "-drm", "-uvm", "-peermem")]


class Reader(nvidia_driver_facts.DriverReader):
    def __init__(self, root, status):
        super().__init__(module=None, root=str(root))
        self.status = status

    def dkms_status(self):
        return self.status


def touch(root, path, text=""):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


@pytest.fixture
def built(tmp_path):
    touch(tmp_path, f"/lib/modules/{KERNEL}/build/Makefile")
    for name in FILES:
        touch(tmp_path, f"/lib/modules/{KERNEL}/updates/dkms/{name}")
    (tmp_path / "lib" / "modules" / HOST_KERNEL).mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    return Reader(tmp_path, (DKMS / "trixie-tesla-535-installed.status.txt").read_text())


def test_rhel_s_dkms_installs_under_extra(tmp_path):
    """dkms on RHEL installs to /lib/modules/<kernel>/extra (seen with dkms 3.0.10 under RHEL 9's os-release)."""
    for name in ("nvidia.ko", "nvidia-modeset.ko", "nvidia-drm.ko", "nvidia-uvm.ko", "nvidia-peermem.ko"):
        touch(tmp_path, f"/lib/modules/{KERNEL}/extra/{name}")
    (tmp_path / "dev").mkdir()
    facts = nvidia_driver_facts.gather(Reader(tmp_path, ""), params(dkms_modules=["nvidia"], kernels=[KERNEL]))
    assert facts["kernels"][KERNEL]["dkms_modules"]["nvidia"]["missing"] == []


def params(**changes):
    return {"dkms_modules": [], "kernels": [], "error_limit": 8, **changes}


def test_a_built_driver_in_a_container(built):
    facts = nvidia_driver_facts.gather(built, params(dkms_modules=["nvidia-tesla-535"]))
    assert facts["dkms_available"] is True
    assert [(r["module"], r["version"], r["kernel"], r["state"]) for r in facts["dkms"]] == [
        ("nvidia-tesla-535", "535.274.02", KERNEL, "installed")
    ]
    assert facts["kernels"][KERNEL] == {
        "headers": True,
        "module_files": sorted(FILES),
        "dkms_modules": {"nvidia-tesla-535": {"files": FILES, "missing": []}},
    }
    # The container host's kernel: no headers, nothing built.
    missing = [f"nvidia-tesla-535{s}" for s in ("", "-modeset", "-drm", "-uvm", "-peermem")]
    assert facts["kernels"][HOST_KERNEL] == {
        "headers": False,
        "module_files": [],
        "dkms_modules": {"nvidia-tesla-535": {"files": [], "missing": missing}},
    }
    assert facts["build_logs"] == []
    assert facts["loaded"] == {"version": None, "flavor": None, "modules": []}
    assert (facts["devices"], facts["runfile"]) == ([], {"installed": False})


def test_only_the_named_kernels_and_modules_are_reported(built):
    facts = nvidia_driver_facts.gather(built, params(dkms_modules=["nvidia-current"], kernels=[KERNEL]))
    assert facts["dkms"] == []
    assert list(facts["kernels"]) == [KERNEL]
    assert facts["kernels"][KERNEL]["dkms_modules"]["nvidia-current"]["files"] == []


def test_a_failed_build_reports_its_log(tmp_path):
    build = "/var/lib/dkms/nvidia-current-open/550.163.01/build"
    touch(tmp_path, f"{build}/make.log", (DKMS / "trixie-nvidia-current-open-550.163.01-6.12.117.make.log").read_text())
    reader = Reader(tmp_path, (DKMS / "trixie-open-550-failed.status.txt").read_text())
    facts = nvidia_driver_facts.gather(reader, params())
    assert [r["state"] for r in facts["dkms"]] == ["added"]
    (log,) = facts["build_logs"]
    assert (log["module"], log["version"], log["kernel"], log["exit_code"], log["path"]) == (
        "nvidia-current-open",
        "550.163.01",
        KERNEL,
        2,
        f"{build}/make.log",
    )
    assert "nvidia/nv-pci.c:237:9: error: too few arguments to function 'pci_resize_resource'" in log["errors"][0]


def test_a_node_without_dkms(tmp_path):
    facts = nvidia_driver_facts.gather(Reader(tmp_path, None), params())
    assert (facts["dkms_available"], facts["dkms"], facts["kernels"], facts["build_logs"]) == (False, [], {}, [])


def test_a_loaded_open_module_with_its_devices_and_a_run_file_driver(tmp_path):
    touch(tmp_path, "/sys/module/nvidia/version", "550.163.01\n")
    touch(
        tmp_path,
        "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.163.01  Release Build  (dvs-builder@U16)\n",
    )
    touch(tmp_path, "/proc/modules", "nvidia_uvm 1 0 - Live 0x0\nnvidia 2 1 nvidia_uvm, Live 0x0\n")
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm", "null"):
        touch(tmp_path, f"/dev/{name}")
    touch(tmp_path, "/usr/bin/nvidia-uninstall")
    facts = nvidia_driver_facts.gather(Reader(tmp_path, ""), params())
    assert facts["loaded"] == {"version": "550.163.01", "flavor": "open", "modules": ["nvidia", "nvidia_uvm"]}
    assert facts["devices"] == ["/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidiactl"]
    assert facts["runfile"] == {"installed": True}


def test_main_runs_dkms_status_with_the_c_locale(run_module, command_table, monkeypatch, tmp_path):
    table = command_table(
        {"dkms": "/usr/sbin/dkms"},
        {("/usr/sbin/dkms", "status"): (0, (DKMS / "trixie-tesla-535-installed.status.txt").read_text(), "")},
    )
    original = nvidia_driver_facts.DriverReader.__init__

    def rooted(self, module, root="/"):
        original(self, module, root=str(tmp_path))

    monkeypatch.setattr(nvidia_driver_facts.DriverReader, "__init__", rooted)
    result, failed = run_module(nvidia_driver_facts.main, {"dkms_modules": ["nvidia-tesla-535"]}, table)
    assert not failed
    assert result["changed"] is False
    assert result["ansible_facts"]["nvidia_driver"]["dkms"][0]["state"] == "installed"
    assert table.calls[0][1]["LANG"] == "C"
