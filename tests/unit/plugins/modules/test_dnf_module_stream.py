"""dnf_module_stream on dnf's own files and words, captured on the bench with Debian's dnf 4.14 (RHEL 9's) against the
bench's modular stand-in of NVIDIA's rhel9 repository (tests/fixtures/SOURCES.md): the modules.d file after an enable
and after a reset, and dnf's refusal of a stream no repository carries."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.modules import dnf_module_stream

DNF = Path(__file__).resolve().parents[3] / "fixtures" / "dnf"
TOOLS = {"dnf": "/usr/bin/dnf"}
ENABLE_550_DKMS = ("/usr/bin/dnf", "module", "enable", "--assumeyes", "--", "nvidia-driver:550-dkms")
RESET = ("/usr/bin/dnf", "module", "reset", "--assumeyes", "--", "nvidia-driver")


@pytest.fixture
def modules_d(monkeypatch, tmp_path):
    monkeypatch.setattr(dnf_module_stream, "MODULES_D", str(tmp_path))
    return tmp_path


def state(modules_d, fixture):
    shutil.copyfile(DNF / fixture, modules_d / "nvidia-driver.module")


def test_parse_reads_the_enabled_stream_and_a_reset_as_none():
    enabled = (DNF / "modules.d-nvidia-driver-550-open.module").read_text()
    assert dnf_module_stream.parse_module_state(enabled, "nvidia-driver") == {"stream": "550-open", "state": "enabled"}
    reset = (DNF / "modules.d-nvidia-driver-reset.module").read_text()
    assert dnf_module_stream.parse_module_state(reset, "nvidia-driver") == {"stream": None, "state": None}
    assert dnf_module_stream.parse_module_state(enabled, "other") == {"stream": None, "state": None}


def test_the_enabled_stream_is_left_alone(run_module, command_table, modules_d):
    state(modules_d, "modules.d-nvidia-driver-550-open.module")
    table = command_table(TOOLS, {})
    result, failed = run_module(dnf_module_stream.main, {"name": "nvidia-driver", "stream": "550-open"}, table)
    assert (failed, result["changed"], table.calls) == (False, False, [])


@pytest.mark.parametrize("fixture", [None, "modules.d-nvidia-driver-reset.module"])
def test_a_stream_is_enabled_where_none_is(run_module, command_table, modules_d, fixture):
    if fixture:
        state(modules_d, fixture)
    table = command_table(TOOLS, {ENABLE_550_DKMS: (0, "Complete!\n", "")})
    result, failed = run_module(dnf_module_stream.main, {"name": "nvidia-driver", "stream": "550-dkms"}, table)
    assert (failed, result["changed"]) == (False, True)
    assert [call for call, _env in table.calls] == [ENABLE_550_DKMS]
    assert result["diff"] == {
        "before": "nvidia-driver: no stream (not enabled)\n",
        "after": "nvidia-driver: 550-dkms (enabled)\n",
    }


def test_another_enabled_stream_is_reset_first(run_module, command_table, modules_d):
    """dnf refuses to enable a second stream of a module: the enabled one is reset first."""
    state(modules_d, "modules.d-nvidia-driver-550-open.module")
    table = command_table(TOOLS, {RESET: (0, "Complete!\n", ""), ENABLE_550_DKMS: (0, "Complete!\n", "")})
    result, failed = run_module(dnf_module_stream.main, {"name": "nvidia-driver", "stream": "550-dkms"}, table)
    assert (failed, result["changed"], result["before"]) == (False, True, {"stream": "550-open", "state": "enabled"})
    assert [call for call, _env in table.calls] == [RESET, ENABLE_550_DKMS]


def test_check_mode_reports_without_running_dnf(run_module, command_table, modules_d):
    state(modules_d, "modules.d-nvidia-driver-550-open.module")
    table = command_table(TOOLS, {})
    args = {"name": "nvidia-driver", "stream": "550-dkms"}
    result, failed = run_module(dnf_module_stream.main, args, table, check_mode=True)
    assert (failed, result["changed"], table.calls) == (False, True, [])


def test_a_stream_no_repository_carries_fails_with_dnf_s_words(run_module, command_table, modules_d):
    enable = ("/usr/bin/dnf", "module", "enable", "--assumeyes", "--", "nvidia-driver:570-open")
    stderr = (DNF / "module-enable-missing-stream.stderr").read_text()
    table = command_table(TOOLS, {enable: (1, "", stderr)})
    result, failed = run_module(dnf_module_stream.main, {"name": "nvidia-driver", "stream": "570-open"}, table)
    assert failed
    assert result["msg"] == (
        "dnf failed with return code 1: Error: Problems in request:\nmissing groups or modules: nvidia-driver:570-open"
    )
