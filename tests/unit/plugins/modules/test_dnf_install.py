"""dnf_install's main() with dnf's resolution as the resolver printed it (tests/fixtures/dnf/resolve-*.json, captured on
the bench with Debian's dnf 4.14 and bench-built rpms)."""

from __future__ import annotations

import json
from pathlib import Path

from ansible_collections.gpuops.bringup.plugins.module_utils import dnf
from ansible_collections.gpuops.bringup.plugins.modules import dnf_install

DNF = Path(__file__).resolve().parents[3] / "fixtures" / "dnf"
TOOLS = {"python3": "/usr/bin/python3", "dnf": "/usr/bin/dnf"}
SPEC = "cuda-demo-suite-12-6-12.6.68-1"
INSTALL = ("/usr/bin/dnf", "install", "--assumeyes", "--setopt=install_weak_deps=False", "--", SPEC)


def resolve(*specs, weak=False):
    return ("/usr/bin/python3", "-c", dnf.RESOLVE_SCRIPT, json.dumps({"specs": list(specs), "install_weak_deps": weak}))


def resolved(name):
    # The captured JSON, after the line prefix the script prints it with.
    return (0, dnf.RESULT_PREFIX + (DNF / f"resolve-{name}.json").read_text(), "")


def test_installs_what_dnf_resolved_and_reports_it(run_module, command_table):
    table = command_table(TOOLS, {resolve(SPEC): resolved("driver-upgrade"), INSTALL: (0, "Complete!\n", "")})
    result, failed = run_module(dnf_install.main, {"name": [SPEC]}, table)
    assert not failed, result
    assert result["changed"] is True
    assert [p["name"] for p in result["transaction"]["install"]] == [
        "cuda-demo-suite-12-6",
        "cuda-drivers",
        "nvidia-driver-cuda-libs",
    ]
    assert "nvidia-driver-cuda-libs: 3:550.163.01-1.el9\n" in result["diff"]["before"]
    assert "nvidia-driver-cuda-libs: 3:560.35.03-1.el9\n" in result["diff"]["after"]
    assert table.calls[-1][0] == INSTALL


def test_check_mode_resolves_and_installs_nothing(run_module, command_table):
    table = command_table(TOOLS, {resolve(SPEC): resolved("driver-upgrade")})
    result, failed = run_module(dnf_install.main, {"name": [SPEC]}, table, check_mode=True)
    assert not failed, result
    assert result["changed"] is True
    assert [call[0][0] for call in table.calls] == ["/usr/bin/python3"]


def test_what_is_installed_already_changes_nothing(run_module, command_table):
    specs = ["cuda-toolkit-12-2-12.2.2-1", "cuda-toolkit-11-8-11.8.0-1"]
    table = command_table(TOOLS, {resolve(*specs): resolved("installed")})
    result, failed = run_module(dnf_install.main, {"name": specs}, table)
    assert not failed, result
    assert result["changed"] is False


def test_a_version_versionlock_excludes_fails_with_dnf_s_words(run_module, command_table):
    spec = "cuda-toolkit-12-2-12.2.0-1"
    table = command_table(TOOLS, {resolve(spec): resolved("versionlocked")})
    result, failed = run_module(dnf_install.main, {"name": [spec]}, table)
    assert failed
    assert result["msg"] == (
        "dnf cannot install cuda-toolkit-12-2-12.2.0-1: All matches were filtered out by exclude filtering for "
        "argument: cuda-toolkit-12-2-12.2.0-1"
    )


def test_an_install_that_would_remove_a_package_is_refused(run_module, command_table):
    table = command_table(TOOLS, {resolve("gpuops-bench-base-next"): resolved("obsoletes")})
    result, failed = run_module(dnf_install.main, {"name": ["gpuops-bench-base-next"]}, table)
    assert failed
    assert result["msg"] == (
        "installing gpuops-bench-base-next would remove gpuops-bench-base 1-1; nothing was installed"
    )


def test_simulate_reports_dnf_s_error_without_failing(run_module, command_table):
    spec = "cuda-toolkit-12-2-12.2.9-1"
    table = command_table(TOOLS, {resolve(spec): resolved("no-match")})
    result, failed = run_module(dnf_install.main, {"name": [spec], "simulate": True}, table)
    assert not failed, result
    assert result["changed"] is False
    assert result["transaction"]["error"] == "No match for argument: cuda-toolkit-12-2-12.2.9-1"


def test_rhel_8_s_platform_python_is_asked_first_and_a_python_without_dnf_skipped(run_module, command_table):
    platform = ("/usr/libexec/platform-python", "-c", dnf.RESOLVE_SCRIPT,
                json.dumps({"specs": [SPEC], "install_weak_deps": True}))  # fmt: skip
    tools = {**TOOLS, "platform-python": "/usr/libexec/platform-python"}
    table = command_table(tools, {platform: (dnf.NO_DNF, "", ""), resolve(SPEC, weak=True): resolved("installed")})
    result, failed = run_module(dnf_install.main, {"name": [SPEC], "install_weak_deps": True}, table)
    assert not failed, result
    assert [call[0][0] for call in table.calls] == ["/usr/libexec/platform-python", "/usr/bin/python3"]


def test_no_python_with_dnf_fails_naming_what_was_tried(run_module, command_table):
    table = command_table(TOOLS, {resolve(SPEC): (dnf.NO_DNF, "", "")})
    result, failed = run_module(dnf_install.main, {"name": [SPEC]}, table)
    assert failed
    assert result["msg"] == (
        "no Python with dnf's bindings on this host (tried platform-python, python3): is dnf installed?"
    )


def test_a_resolver_crash_fails_with_its_output(run_module, command_table):
    table = command_table(TOOLS, {resolve(SPEC): (1, "", "Traceback (most recent call last):\n  ...\nOSError: boom\n")})
    result, failed = run_module(dnf_install.main, {"name": [SPEC]}, table)
    assert failed
    assert result["msg"].startswith("dnf's resolver (/usr/bin/python3) failed with return code 1: Traceback")
