"""package_hold's main() with apt-mark/dpkg-query (captured on the bench's Debian 12 node) and dnf/rpm outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import rpm
from ansible_collections.gpuops.bringup.plugins.modules import package_hold

CAPTURES = Path(__file__).resolve().parents[3] / "fixtures" / "package_hold"
FIXTURES = CAPTURES.parent
DPKG_FORMAT = "${Package}\t${Version}\t${db:Status-Abbrev}\t${db:Status-Want}\n"
APT_TOOLS = {"apt-mark": "/usr/bin/apt-mark", "dpkg-query": "/usr/bin/dpkg-query"}
DNF_TOOLS = {"rpm": "/usr/bin/rpm", "dnf": "/usr/bin/dnf"}
RUNNING = "linux-image-6.1.0-50-amd64"
META = "linux-image-amd64"


def captured(name):
    """(rc, stdout, stderr) of a command captured as NAME.rc, NAME.out and NAME.err."""
    path = CAPTURES / name
    return (
        int(path.with_suffix(".rc").read_text()),
        path.with_suffix(".out").read_text(),
        path.with_suffix(".err").read_text(),
    )


def query(*names):
    return ("/usr/bin/dpkg-query", "-W", "-f", DPKG_FORMAT, "--", *names)


def apt_mark(action, *names):
    return ("/usr/bin/apt-mark", action, "--", *names)


@pytest.mark.parametrize(
    ("args", "check_mode", "outputs", "expected", "marked"),
    [
        # One of two is held already: only the other is marked.
        (
            {"name": [RUNNING, META]},
            False,
            {
                query(RUNNING, META): captured("apt/dpkg-query-before"),
                apt_mark("hold", RUNNING): captured("apt/apt-mark-hold"),
            },
            {"changed": True, "held": [RUNNING, META], "changed_names": [RUNNING]},
            [apt_mark("hold", RUNNING)],
        ),
        # Duplicates and order do not matter.
        (
            {"name": [META, RUNNING, META]},
            False,
            {
                query(RUNNING, META): captured("apt/dpkg-query-before"),
                apt_mark("hold", RUNNING): captured("apt/apt-mark-hold"),
            },
            {"changed": True, "held": [RUNNING, META], "changed_names": [RUNNING]},
            [apt_mark("hold", RUNNING)],
        ),
        # Check mode reports the change and marks nothing.
        (
            {"name": [RUNNING, META]},
            True,
            {query(RUNNING, META): captured("apt/dpkg-query-before")},
            {"changed": True, "held": [RUNNING, META], "changed_names": [RUNNING]},
            [],
        ),
        # Second run: nothing to do.
        (
            {"name": [RUNNING, META]},
            False,
            {query(RUNNING, META): captured("apt/dpkg-query-after")},
            {"changed": False, "held": [RUNNING, META], "changed_names": []},
            [],
        ),
        (
            {"name": [RUNNING, META], "state": "released"},
            False,
            {
                query(RUNNING, META): captured("apt/dpkg-query-after"),
                apt_mark("unhold", RUNNING, META): captured("apt/apt-mark-unhold"),
            },
            {"changed": True, "held": [], "changed_names": [RUNNING, META]},
            [apt_mark("unhold", RUNNING, META)],
        ),
        (
            {"name": [RUNNING, META], "state": "released"},
            False,
            {query(RUNNING, META): captured("apt/dpkg-query-released")},
            {"changed": False, "held": [], "changed_names": []},
            [],
        ),
        # Nothing named: nothing run.
        ({"name": []}, False, {}, {"changed": False, "held": [], "changed_names": []}, []),
    ],
)
def test_apt(run_module, command_table, args, check_mode, outputs, expected, marked):
    table = command_table(APT_TOOLS, outputs)
    result, failed = run_module(package_hold.main, args, table, check_mode=check_mode)
    assert not failed
    assert {key: result[key] for key in expected} == expected
    assert [argv for argv, _env in table.calls if argv[0] == APT_TOOLS["apt-mark"]] == marked


def test_apt_diff_shows_each_package_before_and_after(run_module, command_table):
    table = command_table(
        APT_TOOLS,
        {
            query(RUNNING, META): captured("apt/dpkg-query-before"),
            apt_mark("hold", RUNNING): captured("apt/apt-mark-hold"),
        },
    )
    result, _failed = run_module(package_hold.main, {"name": [RUNNING, META]}, table)
    assert result["diff"] == {
        "before": f"{RUNNING}: not held\n{META}: held\n",
        "after": f"{RUNNING}: held\n{META}: held\n",
    }


def test_packages_not_installed_are_refused_by_name(run_module, command_table):
    # Unknown (nvidia-driver), half-configured (gpuops-fixture-broken) and removed (gpuops-fixture-removed).
    names = ["gpuops-fixture-broken", "gpuops-fixture-removed", META, "nvidia-driver"]
    table = command_table(APT_TOOLS, {query(*names): captured("apt/dpkg-query-missing")})
    result, failed = run_module(package_hold.main, {"name": names}, table)
    assert failed
    assert result["msg"] == (
        "cannot change the hold of packages that are not installed: "
        "gpuops-fixture-broken, gpuops-fixture-removed, nvidia-driver"
    )
    assert result["missing"] == ["gpuops-fixture-broken", "gpuops-fixture-removed", "nvidia-driver"]
    assert [argv for argv, _env in table.calls if argv[0] == APT_TOOLS["apt-mark"]] == []


def test_tools_run_in_the_c_locale(run_module, command_table):
    table = command_table(
        APT_TOOLS,
        {
            query(RUNNING, META): captured("apt/dpkg-query-before"),
            apt_mark("hold", RUNNING): captured("apt/apt-mark-hold"),
        },
    )
    run_module(package_hold.main, {"name": [RUNNING, META]}, table)
    assert [env["LC_ALL"] for _argv, env in table.calls] == ["C", "C"]


RPM_KERNEL = ("/usr/bin/rpm", "-q", "--qf", "%{NAME}\n", "--", "kernel")
# Only the return code of `dnf versionlock --help` matters: 0 with the plugin, 1 without it.
VERSIONLOCK_HELP = ("/usr/bin/dnf", "versionlock", "--help")
HAS_VERSIONLOCK = (0, "", "")
NO_VERSIONLOCK = (1, "", "")
OK = (0, "", "")


@pytest.fixture
def versionlock(monkeypatch, tmp_path):
    """Point package_hold at a versionlock.list in tmp_path, a copy of the named fixture or none."""

    def use(fixture=None):
        path = tmp_path / "versionlock.list"
        if fixture:
            path.write_text((FIXTURES / "versionlock" / fixture).read_text())
        monkeypatch.setattr(rpm, "VERSIONLOCK_LIST", str(path))

    return use


@pytest.mark.parametrize(
    ("args", "lock_list", "outputs", "expected", "dnf_calls"),
    [
        (
            {"name": ["kernel"]},
            None,
            {
                RPM_KERNEL: captured("dnf/rpm-q-kernel"),
                VERSIONLOCK_HELP: HAS_VERSIONLOCK,
                ("/usr/bin/dnf", "versionlock", "add", "--", "kernel"): OK,
            },
            {"changed": True, "held": ["kernel"], "changed_names": ["kernel"]},
            [VERSIONLOCK_HELP, ("/usr/bin/dnf", "versionlock", "add", "--", "kernel")],
        ),
        (
            {"name": ["kernel"]},
            "lock-running-kernel.list",
            {RPM_KERNEL: captured("dnf/rpm-q-kernel")},
            {"changed": False, "held": ["kernel"], "changed_names": []},
            [],
        ),
        # An exclude entry is no hold.
        (
            {"name": ["kernel"]},
            "exclude-only.list",
            {
                RPM_KERNEL: captured("dnf/rpm-q-kernel"),
                VERSIONLOCK_HELP: HAS_VERSIONLOCK,
                ("/usr/bin/dnf", "versionlock", "add", "--", "kernel"): OK,
            },
            {"changed": True, "held": ["kernel"], "changed_names": ["kernel"]},
            [VERSIONLOCK_HELP, ("/usr/bin/dnf", "versionlock", "add", "--", "kernel")],
        ),
        (
            {"name": ["kernel"], "state": "released"},
            "lock-and-exclude.list",
            {
                RPM_KERNEL: captured("dnf/rpm-q-kernel"),
                VERSIONLOCK_HELP: HAS_VERSIONLOCK,
                ("/usr/bin/dnf", "versionlock", "delete", "--", "kernel"): OK,
            },
            {"changed": True, "held": [], "changed_names": ["kernel"]},
            [VERSIONLOCK_HELP, ("/usr/bin/dnf", "versionlock", "delete", "--", "kernel")],
        ),
    ],
)
def test_dnf(run_module, command_table, versionlock, args, lock_list, outputs, expected, dnf_calls):
    versionlock(lock_list)
    table = command_table(DNF_TOOLS, outputs)
    result, failed = run_module(package_hold.main, args, table)
    assert not failed
    assert {key: result[key] for key in expected} == expected
    assert [argv for argv, _env in table.calls if argv[0] == DNF_TOOLS["dnf"]] == dnf_calls


def test_dnf_check_mode_runs_no_dnf(run_module, command_table, versionlock):
    versionlock()
    table = command_table(DNF_TOOLS, {RPM_KERNEL: captured("dnf/rpm-q-kernel")})
    result, failed = run_module(package_hold.main, {"name": ["kernel"]}, table, check_mode=True)
    assert not failed
    assert result["changed"] is True
    assert [argv for argv, _env in table.calls] == [RPM_KERNEL]


def test_dnf_without_versionlock_plugin_says_what_to_install(run_module, command_table, versionlock):
    versionlock()
    table = command_table(DNF_TOOLS, {RPM_KERNEL: captured("dnf/rpm-q-kernel"), VERSIONLOCK_HELP: NO_VERSIONLOCK})
    result, failed = run_module(package_hold.main, {"name": ["kernel"]}, table)
    assert failed
    assert result["msg"] == (
        "dnf has no versionlock command: install python3-dnf-plugin-versionlock (RHEL 8/9) "
        "to let this collection hold packages"
    )


def test_dnf_packages_not_installed_are_refused(run_module, command_table, versionlock):
    versionlock()
    rpm_query = ("/usr/bin/rpm", "-q", "--qf", "%{NAME}\n", "--", "kernel", "nvidia-driver")
    table = command_table(DNF_TOOLS, {rpm_query: captured("dnf/rpm-q-missing")})
    result, failed = run_module(package_hold.main, {"name": ["nvidia-driver", "kernel"]}, table)
    assert failed
    assert result["msg"] == "cannot change the hold of packages that are not installed: nvidia-driver"


def test_a_tool_that_fails_ends_the_module_with_its_output(run_module, command_table):
    # apt-mark's real refusal of an unknown name stands in for any apt-mark failure.
    outputs = {
        query(RUNNING, META): captured("apt/dpkg-query-before"),
        apt_mark("hold", RUNNING): captured("apt/apt-mark-hold-unknown"),
    }
    table = command_table(APT_TOOLS, outputs)
    result, failed = run_module(package_hold.main, {"name": [RUNNING, META]}, table)
    assert failed
    assert result["rc"] == 100
    assert result["cmd"] == list(apt_mark("hold", RUNNING))
    assert result["msg"] == (
        "apt-mark failed with return code 100: E: Can't select installed nor candidate version from package "
        "'nvidia-driver' as it has neither of them\nE: No packages found"
    )


def test_missing_tool_is_named(run_module, command_table):
    table = command_table({"apt-mark": "/usr/bin/apt-mark"}, {})
    result, failed = run_module(package_hold.main, {"name": [RUNNING]}, table)
    assert failed
    assert result["msg"] == "dpkg-query was not found on this host (searched PATH and the sbin directories)"
    assert table.calls == []
