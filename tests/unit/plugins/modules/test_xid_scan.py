"""xid_scan's main() with journalctl and dmesg answering from captured outputs (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import simulation, xid
from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE
from ansible_collections.gpuops.bringup.plugins.modules import xid_scan

LOGS = Path(__file__).resolve().parents[3] / "fixtures" / "xid"
JOURNALCTL = "/usr/bin/journalctl"
DMESG = "/usr/bin/dmesg"
BOTH = {"journalctl": JOURNALCTL, "dmesg": DMESG}
JOURNAL_ARGV = (JOURNALCTL, "-k", "-b", "--no-pager", "-o", "short-iso")
DMESG_ARGV = (DMESG,)


def log(name):
    """A captured log as a command's (rc, stdout, stderr)."""
    return 0, (LOGS / name).read_text(), ""


def captured(name):
    """(rc, stdout, stderr) of a command captured as NAME.rc, NAME.out and NAME.err."""
    path = LOGS / name
    return (
        int(path.with_suffix(".rc").read_text()),
        path.with_suffix(".out").read_text(),
        path.with_suffix(".err").read_text(),
    )


@pytest.fixture(autouse=True)
def real_hardware(monkeypatch, tmp_path):
    """No simulated-hardware marker unless a test writes one."""
    monkeypatch.setattr(simulation, "MARKER", str(tmp_path / "simulated-hardware.json"))
    return tmp_path / "simulated-hardware.json"


@pytest.mark.parametrize(
    ("args", "tools", "outputs", "expected", "xid_counts"),
    [
        # The journal holds kernel lines: it is what is read.
        (
            {},
            BOTH,
            {JOURNAL_ARGV: log("journal-iso-clean.log")},
            {"source": "journal", "command": list(JOURNAL_ARGV), "fallback_reason": None, "lines": 47},
            {},
        ),
        # A journal without kernel messages (containers): dmesg is read instead, and the result says why.
        (
            {},
            BOTH,
            {JOURNAL_ARGV: captured("journalctl-no-entries"), DMESG_ARGV: log("dmesg-gsp-timeout-no-xid.log")},
            {
                "source": "dmesg",
                "command": [DMESG],
                "fallback_reason": xid.NO_KERNEL_MESSAGES,
                "lines": 10,
                "events_total": 3,
            },
            {},
        ),
        # No journalctl at all: dmesg.
        (
            {},
            {"dmesg": DMESG},
            {DMESG_ARGV: log("dmesg-xid32-31.log")},
            {"source": "dmesg", "fallback_reason": "journalctl is not installed", "events_total": 3},
            {"31": 1, "32": 2},
        ),
        # journalctl fails: dmesg, with journalctl's complaint as the reason.
        (
            {},
            BOTH,
            {JOURNAL_ARGV: captured("journalctl-no-such-boot"), DMESG_ARGV: log("dmesg-fallen-off-bus-no-xid.log")},
            {
                "source": "dmesg",
                "fallback_reason": "journalctl failed with return code 1: No journal files were found.\n"
                "Data from the specified boot (+5) is not available: No such boot ID in journal",
            },
            {},
        ),
        # source=dmesg never asks the journal.
        (
            {"source": "dmesg"},
            BOTH,
            {DMESG_ARGV: log("dmesg-xid32-31.log")},
            {"source": "dmesg", "fallback_reason": None, "events_total": 3},
            {"31": 1, "32": 2},
        ),
        # since_boot: false reads every boot the journal keeps.
        (
            {"source": "journal", "since_boot": False},
            BOTH,
            {(JOURNALCTL, "-k", "--no-pager", "-o", "short-iso"): log("journal-iso-clean.log")},
            {"source": "journal", "command": [JOURNALCTL, "-k", "--no-pager", "-o", "short-iso"]},
            {},
        ),
        # A saved log: no command runs.
        (
            {"path": str(LOGS / "dmesg-ctime-xid119-gsp.log")},
            {},
            {},
            {"source": "file", "command": None, "log_file": str(LOGS / "dmesg-ctime-xid119-gsp.log"), "lines": 43},
            {"119": 5},
        ),
        # max_events keeps the most recent events; the summary still counts all.
        (
            {"path": str(LOGS / "dmesg-ctime-xid119-gsp.log"), "max_events": 2},
            {},
            {},
            {"events_total": 5, "events_truncated": True},
            {"119": 5},
        ),
    ],
    ids=[
        "journal",
        "journal-without-kernel-lines",
        "no-journalctl",
        "journalctl-fails",
        "source-dmesg",
        "all-boots",
        "path",
        "max-events",
    ],
)
def test_reads(run_module, command_table, args, tools, outputs, expected, xid_counts):
    table = command_table(tools, outputs)
    result, failed = run_module(xid_scan.main, args, table)
    assert not failed, result
    assert result["changed"] is False
    assert {key: result[key] for key in expected} == expected
    assert result["summary"]["xid_counts"] == xid_counts
    assert result["summary"]["events"] == result["events_total"]
    assert result["simulated"] is False
    # Every command ran in the C locale and was expected.
    assert all(env == C_LOCALE for _argv, env in table.calls)


def test_max_events_keeps_the_latest(run_module, command_table):
    path = str(LOGS / "dmesg-ctime-xid119-gsp.log")
    result, _failed = run_module(xid_scan.main, {"path": path, "max_events": 2}, command_table({}, {}))
    assert [e["timestamp"] for e in result["events"]] == ["Sun Feb 23 16:27:12 2025", "Sun Feb 23 16:30:13 2025"]


def test_event_in_the_result(run_module, command_table):
    table = command_table({"dmesg": DMESG}, {DMESG_ARGV: log("dmesg-fallen-off-bus-no-xid.log")})
    result, _failed = run_module(xid_scan.main, {}, table)
    (event,) = result["events"]
    assert event["event"] == "fallen_off_bus"
    assert event["pci_bus_id"] == "0000:b3:00.0"
    assert event["severity"] == "critical"
    assert result["summary"]["gpus"]["0000:b3:00.0"]["worst_severity"] == "critical"


def test_gzip_file(run_module, command_table, tmp_path):
    path = tmp_path / "kern.log.gz"
    path.write_bytes(gzip.compress((LOGS / "dmesg-ctime-xid79-fallen-off-bus.log").read_bytes()))
    result, failed = run_module(xid_scan.main, {"path": str(path)}, command_table({}, {}))
    assert not failed
    assert result["summary"]["xid_counts"] == {"79": 1}
    assert result["summary"]["event_counts"]["fallen_off_bus"] == 1


def test_undecodable_bytes_are_replaced(run_module, command_table, tmp_path):
    path = tmp_path / "kern.log"
    path.write_bytes(b"\xff\xfe garbage\n" + (LOGS / "dmesg-xid32-31.log").read_bytes())
    result, failed = run_module(xid_scan.main, {"path": str(path)}, command_table({}, {}))
    assert not failed
    assert result["events_total"] == 3


def test_check_mode_reads_the_same(run_module, command_table):
    outputs = {JOURNAL_ARGV: captured("journalctl-no-entries"), DMESG_ARGV: log("dmesg-xid32-31.log")}
    result, failed = run_module(xid_scan.main, {}, command_table(BOTH, outputs), check_mode=True)
    assert not failed
    assert (result["changed"], result["source"], result["events_total"]) == (False, "dmesg", 3)


def test_simulated_marker_is_reported(run_module, command_table, real_hardware):
    real_hardware.write_text('{"profile": "hgx_h100_8gpu", "captures": ["xid/dmesg-xid32-31.log"]}')
    table = command_table({"dmesg": DMESG}, {DMESG_ARGV: log("dmesg-xid32-31.log")})
    result, _failed = run_module(xid_scan.main, {}, table)
    assert result["simulated"] == {"profile": "hgx_h100_8gpu", "captures": ["xid/dmesg-xid32-31.log"]}


@pytest.mark.parametrize(
    ("args", "tools", "outputs", "expected"),
    [
        # Neither tool: say what is missing and what to do.
        (
            {},
            {},
            {},
            {
                "msg": "cannot read the kernel log: journalctl is not installed, and dmesg was not found on this host. "
                "Give path= to scan a saved log.",
                "cmd": "dmesg",
            },
        ),
        (
            {"source": "journal"},
            {"dmesg": DMESG},
            {},
            {"msg": "journalctl was not found on this host (searched PATH and the sbin directories)"},
        ),
        (
            {"source": "dmesg"},
            {"journalctl": JOURNALCTL},
            {},
            {
                "msg": "cannot read the kernel log: dmesg was not found on this host. Give path= to scan a saved log.",
            },
        ),
        # dmesg refused (kernel.dmesg_restrict, not root): its words, command, status and streams.
        (
            {"source": "dmesg"},
            BOTH,
            {DMESG_ARGV: captured("dmesg-eperm")},
            {
                "msg": "dmesg failed with return code 1: dmesg: read kernel buffer failed: Operation not permitted",
                "cmd": [DMESG],
                "rc": 1,
                "stdout": "",
                "stderr": "dmesg: read kernel buffer failed: Operation not permitted\n",
            },
        ),
        # In auto mode the message also says why dmesg was read.
        (
            {},
            BOTH,
            {JOURNAL_ARGV: captured("journalctl-no-entries"), DMESG_ARGV: captured("dmesg-eperm")},
            {
                "msg": f"dmesg failed with return code 1 (read because {xid.NO_KERNEL_MESSAGES}): "
                "dmesg: read kernel buffer failed: Operation not permitted",
                "rc": 1,
            },
        ),
        # source=journal and journalctl fails: no fallback.
        (
            {"source": "journal"},
            BOTH,
            {JOURNAL_ARGV: captured("journalctl-no-such-boot")},
            {
                "msg": "journalctl failed with return code 1: No journal files were found.\n"
                "Data from the specified boot (+5) is not available: No such boot ID in journal",
                "cmd": list(JOURNAL_ARGV),
                "rc": 1,
            },
        ),
        # source=journal and the journal holds no kernel messages: nothing was scanned, so no verdict.
        (
            {"source": "journal"},
            BOTH,
            {JOURNAL_ARGV: captured("journalctl-no-entries")},
            {
                "msg": f"{xid.NO_KERNEL_MESSAGES}: nothing was scanned. Use source=dmesg, or path= for a saved log.",
                "stdout": "-- No entries --\n",
            },
        ),
        # An empty kernel log never reads as a clean GPU.
        (
            {"source": "dmesg"},
            BOTH,
            {DMESG_ARGV: (0, "", "")},
            {"msg": f"the kernel log read from {DMESG} is empty: nothing was scanned"},
        ),
        (
            {"path": str(LOGS / "empty.log")},
            {},
            {},
            {"msg": f"the kernel log read from {LOGS / 'empty.log'} is empty: nothing was scanned"},
        ),
        (
            {"path": str(LOGS / "absent.log")},
            {},
            {},
            {"msg": f"cannot read {LOGS / 'absent.log'}: No such file or directory"},
        ),
        ({"path": str(LOGS)}, {}, {}, {"msg": f"cannot read {LOGS}: Is a directory"}),
        ({"max_events": -1}, BOTH, {}, {"msg": "max_events must be 0 (all) or more, got -1"}),
    ],
    ids=[
        "no-tools",
        "journal-missing",
        "dmesg-missing",
        "dmesg-fails",
        "dmesg-fails-after-fallback",
        "journal-fails",
        "journal-empty",
        "dmesg-empty",
        "file-empty",
        "file-missing",
        "file-is-directory",
        "bad-max-events",
    ],
)
def test_failures(run_module, command_table, args, tools, outputs, expected):
    result, failed = run_module(xid_scan.main, args, command_table(tools, outputs))
    assert failed
    assert {key: result[key] for key in expected} == expected


def test_unreadable_file(run_module, command_table, monkeypatch):
    def denied(path, mode="r"):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(xid_scan, "open", denied, raising=False)
    result, failed = run_module(xid_scan.main, {"path": "/var/log/kern.log"}, command_table({}, {}))
    assert failed
    assert result["msg"] == "cannot read /var/log/kern.log: Permission denied"


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (gzip.compress((LOGS / "dmesg-xid32-31.log").read_bytes())[:20], "the compressed data is truncated"),
        # A damaged member: zlib.error, which gzip.decompress let through.
        (b"\x1f\x8b\x08\x00" + bytes(range(200)), "the compressed data is corrupt"),
    ],
    ids=["truncated", "corrupt"],
)
def test_corrupt_gzip(run_module, command_table, tmp_path, data, why):
    path = tmp_path / "kern.log.gz"
    path.write_bytes(data)
    result, failed = run_module(xid_scan.main, {"path": str(path)}, command_table({}, {}))
    assert failed
    assert result["msg"].startswith(f"cannot read {path} as a gzip-compressed kernel log: {why}")
