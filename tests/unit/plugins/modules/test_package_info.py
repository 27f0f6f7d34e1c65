"""package_info's main() with dpkg-query and apt-cache policy captured in the bench's Debian 12 and 13 containers."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.gpuops.bringup.plugins.module_utils import rpm
from ansible_collections.gpuops.bringup.plugins.modules import package_info

APT = Path(__file__).resolve().parents[3] / "fixtures" / "apt"
DNF = APT.parent / "dnf"
DNF_TOOLS = {"rpm": "/usr/bin/rpm", "dnf": "/usr/bin/dnf"}
TOOLS = {"dpkg-query": "/usr/bin/dpkg-query", "apt-cache": "/usr/bin/apt-cache"}
FORMAT = package_info.DPKG_FORMAT
TESLA = "535.274.02-1~deb13u1"
TRIXIE = [
    "nvidia-tesla-535-kernel-dkms", "firmware-nvidia-tesla-535-gsp", "nvidia-tesla-535-smi",
    "libnvidia-tesla-535-cuda1", "libnvidia-tesla-535-cfg1", "libnvidia-tesla-535-ml1", "nvidia-persistenced",
    "nvidia-kernel-dkms", "nvidia-open-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "libcuda1",
    "libnvidia-cfg1", "libnvidia-ml1", "nvidia-tesla-535-open-kernel-dkms", "linux-image-amd64",
    "linux-headers-amd64", "linux-headers-6.12.117+deb13-amd64", "linux-headers-6.18.44-fc-v509",
]  # fmt: skip


def captured(name):
    return (
        int((APT / f"{name}.dpkg-query.rc").read_text()),
        (APT / f"{name}.dpkg-query.stdout").read_text(),
        (APT / f"{name}.dpkg-query.stderr").read_text(),
    )


def commands(names, case):
    names = sorted(set(names))
    return {
        ("/usr/bin/dpkg-query", "-W", "-f", FORMAT, "--", *names): captured(case),
        ("/usr/bin/apt-cache", "policy", "--", *names): (0, (APT / f"{case}.policy.txt").read_text(), ""),
    }


def test_an_installed_held_driver_and_names_nobody_knows(run_module, command_table):
    table = command_table(TOOLS, commands(TRIXIE, "trixie-tesla-535-installed"))
    result, failed = run_module(package_info.main, {"name": TRIXIE}, table, check_mode=True)
    assert not failed
    packages = result["packages"]
    assert packages["nvidia-tesla-535-kernel-dkms"] == {
        "installed": TESLA,
        "held": True,
        "broken": False,
        "candidate": TESLA,
        "available": [TESLA],
    }
    assert packages["linux-image-amd64"]["available"] == ["6.12.118-1", "6.12.117-1"]
    assert packages["nvidia-smi"] == {
        "installed": None,
        "held": False,
        "broken": False,
        "candidate": "550.163.01-2",
        "available": ["550.163.01-2"],
    }
    for unknown in ("nvidia-tesla-535-open-kernel-dkms", "linux-headers-6.18.44-fc-v509"):
        assert packages[unknown] == {
            "installed": None,
            "held": False,
            "broken": False,
            "candidate": None,
            "available": [],
        }
    assert "installed_names" not in result
    assert all(env["LANG"] == "C" for _argv, env in table.calls)


def test_installed_names_list_what_dpkg_has_installed_or_left_broken(run_module, command_table):
    listing = (
        "linux-image-amd64\t6.12.117-1\tii \tinstall\n"
        "nvidia-open-kernel-dkms\t550.163.01-2\tiF \tinstall\n"
        "chrony\t\tun \tunknown\n"
        "old-config\t1.0\trc \tdeinstall\n"
    )
    table = command_table(TOOLS, {("/usr/bin/dpkg-query", "-W", "-f", FORMAT): (0, listing, "")})
    result, failed = run_module(package_info.main, {"list_installed": True}, table)
    assert not failed
    assert result == {
        "changed": False,
        "packages": {},
        "installed_names": ["linux-image-amd64", "nvidia-open-kernel-dkms"],
    }


def test_a_broken_package_reports_its_version(run_module, command_table):
    names = ["nvidia-open-kernel-dkms"]
    table = command_table(
        TOOLS,
        {
            ("/usr/bin/dpkg-query", "-W", "-f", FORMAT, "--", *names): (
                0,
                "nvidia-open-kernel-dkms\t550.163.01-2\tiF \tinstall\n",
                "",
            ),
            ("/usr/bin/apt-cache", "policy", "--", *names): (0, "", ""),
        },
    )
    result, _failed = run_module(package_info.main, {"name": names}, table)
    assert result["packages"]["nvidia-open-kernel-dkms"]["installed"] == "550.163.01-2"
    assert result["packages"]["nvidia-open-kernel-dkms"]["broken"] is True


def test_without_apt_cache_the_task_fails(run_module, command_table):
    table = command_table({"dpkg-query": "/usr/bin/dpkg-query"}, {})
    result, failed = run_module(package_info.main, {"name": ["x"], "manager": "apt"}, table)
    assert failed
    assert result["msg"] == "apt-cache was not found on this host (searched PATH and the sbin directories)"


def dnf_table(command_table, names, repoquery):
    names = sorted(set(names))
    return command_table(
        DNF_TOOLS,
        {
            ("/usr/bin/rpm", "-q", "--qf", rpm.RPM_QUERY_FORMAT, "--", *names): (
                1, (DNF / "rpm-q-evr.stdout").read_text(), ""
            ),
            ("/usr/bin/dnf", "repoquery", "--quiet", "--disableplugin=versionlock", "--showduplicates",
             f"--qf={rpm.REPOQUERY_FORMAT}", "--", *names): repoquery,
        },
    )  # fmt: skip


def test_dnf_reads_rpm_versionlock_and_every_version_the_repositories_carry(
    run_module, command_table, monkeypatch, tmp_path
):
    """Outputs of Debian 12's rpm 4.18 and dnf 4.14 (RHEL 9's dnf) on the bench; versionlock.list as dnf wrote it."""
    names = ["cuda-toolkit-12-4", "nvidia-driver", "cuda-toolkit-12-2"]
    locks = tmp_path / "versionlock.list"
    locks.write_text((DNF / "versionlock-add.list").read_text())
    monkeypatch.setattr(rpm, "VERSIONLOCK_LIST", str(locks))
    repoquery = (0, (DNF / "repoquery-repofrompath.stdout").read_text(), "")
    table = dnf_table(command_table, names, repoquery)
    result, failed = run_module(package_info.main, {"name": names, "manager": "dnf"}, table, check_mode=True)
    assert not failed, result
    assert result["packages"] == {
        "cuda-toolkit-12-4": {"installed": "12.4.0-1", "held": True, "broken": False, "candidate": "12.4.1-1",
                              "available": ["12.4.1-1", "12.4.0-1"]},
        "nvidia-driver": {"installed": "3:550.163.01-1.el9", "held": True, "broken": False,
                          "candidate": "3:550.163.01-1.el9", "available": ["3:550.163.01-1.el9"]},
        "cuda-toolkit-12-2": {"installed": None, "held": False, "broken": False, "candidate": "12.2.2-1",
                              "available": ["12.2.2-1"]},
    }  # fmt: skip


def test_dnf_without_locks_holds_nothing(run_module, command_table, monkeypatch, tmp_path):
    monkeypatch.setattr(rpm, "VERSIONLOCK_LIST", str(tmp_path / "absent.list"))
    table = dnf_table(command_table, ["nvidia-driver"], (0, "", ""))
    result, failed = run_module(package_info.main, {"name": ["nvidia-driver"], "manager": "dnf"}, table)
    assert not failed, result
    assert result["packages"]["nvidia-driver"] == {
        "installed": "3:550.163.01-1.el9", "held": False, "broken": False, "candidate": None, "available": [],
    }  # fmt: skip


def test_dnf_a_repository_it_cannot_read_fails_the_task_with_dnf_s_words(run_module, command_table, tmp_path):
    error = (DNF / "repoquery-unreachable.stderr").read_text()
    table = dnf_table(command_table, ["nvidia-driver"], (1, "", error))
    result, failed = run_module(package_info.main, {"name": ["nvidia-driver"], "manager": "dnf"}, table)
    assert failed
    assert result["msg"] == f"dnf failed with return code 1: {error.strip()}"


def test_dnf_installed_names_come_from_rpm(run_module, command_table):
    """Each name once; rpm's gpg-pubkey entries (imported keys) are no packages: a rollback must not remove them."""
    listing = "kernel\nkernel\ncuda-toolkit-12-4\ngpg-pubkey\n"
    table = command_table(DNF_TOOLS, {("/usr/bin/rpm", "-qa", "--qf", "%{NAME}\n"): (0, listing, "")})
    result, failed = run_module(package_info.main, {"list_installed": True, "manager": "dnf"}, table)
    assert not failed, result
    assert result == {
        "changed": False,
        "packages": {},
        "installed_names": ["cuda-toolkit-12-4", "kernel"],
    }
