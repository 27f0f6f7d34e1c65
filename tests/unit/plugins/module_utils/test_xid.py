"""xid.scan over real kernel logs (tests/fixtures/xid, sources in tests/fixtures/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import xid

LOGS = Path(__file__).resolve().parents[3] / "fixtures" / "xid"


def scan(name):
    return xid.scan((LOGS / name).read_text())


def brief(event):
    """The fields a table row states, in a fixed order."""
    return (
        event["event"],
        event["xid"],
        event["pci_bus_id"],
        event["timestamp"],
        event["uptime_seconds"],
        event["format"],
        event["severity"],
    )


# Each log: (lines, every event as brief(), summary fields).
CASES = {
    "dmesg-ctime-xid119-gsp.log": (
        43,
        [
            ("xid", 119, "0000:9b:00.0", ts, None, "dmesg_ctime", "critical")
            for ts in (
                "Sun Feb 23 16:24:18 2025",
                "Sun Feb 23 16:24:24 2025",
                "Sun Feb 23 16:24:30 2025",
                "Sun Feb 23 16:27:12 2025",
                "Sun Feb 23 16:30:13 2025",
            )
        ],
        {"xid_counts": {"119": 5}, "worst_severity": "critical", "unknown_xids": []},
    ),
    "dmesg-ctime-xid13-31-109.log": (
        10,
        [
            ("xid", 13, "0000:cb:00.0", "Fri Aug 30 11:43:09 2024", None, "dmesg_ctime", "error"),
            ("xid", 13, "0000:cb:00.0", "Fri Aug 30 11:43:09 2024", None, "dmesg_ctime", "error"),
            ("xid", 13, "0000:cb:00.0", "Fri Aug 30 11:43:09 2024", None, "dmesg_ctime", "error"),
            ("xid", 109, "0000:cb:00.0", "Fri Aug 30 11:43:14 2024", None, "dmesg_ctime", "critical"),
            ("xid", 31, "0000:cb:00.0", "Sat Aug 31 07:06:03 2024", None, "dmesg_ctime", "error"),
            ("xid", 109, "0000:cb:00.0", "Sat Aug 31 08:53:21 2024", None, "dmesg_ctime", "critical"),
        ],
        {"xid_counts": {"13": 3, "31": 1, "109": 2}, "worst_severity": "critical", "unknown_xids": []},
    ),
    "dmesg-ctime-xid43-31-94.log": (
        11,
        [
            ("xid", 43, "0000:00:05.0", "Wed Jul 31 23:14:18 2024", None, "dmesg_ctime", "warning"),
            ("xid", 43, "0000:00:05.0", "Wed Jul 31 23:15:26 2024", None, "dmesg_ctime", "warning"),
            ("xid", 31, "0000:00:07.0", "Mon Aug  5 03:54:13 2024", None, "dmesg_ctime", "error"),
            ("xid", 94, "0000:00:08.0", "Fri Aug  9 13:32:56 2024", None, "dmesg_ctime", "error"),
        ],
        {"xid_counts": {"31": 1, "43": 2, "94": 1}, "worst_severity": "error", "unknown_xids": []},
    ),
    "dmesg-ctime-xid79-fallen-off-bus.log": (
        7,
        [
            ("xid", 79, "0000:a1:00.0", "Fri Apr  5 21:29:39 2024", None, "dmesg_ctime", "critical"),
            ("fallen_off_bus", None, "0000:a1:00.0", "Fri Apr  5 21:29:39 2024", None, "dmesg_ctime", "critical"),
        ],
        {"xid_counts": {"79": 1}, "worst_severity": "critical", "unknown_xids": []},
    ),
    "dmesg-fallen-off-bus-no-xid.log": (
        5,
        [("fallen_off_bus", None, "0000:b3:00.0", "1843.308145", 1843.308145, "dmesg", "critical")],
        {"xid_counts": {}, "worst_severity": "critical", "unknown_xids": []},
    ),
    "dmesg-gsp-timeout-no-xid.log": (
        10,
        [
            ("gsp_rpc_timeout", None, None, "24.302465", 24.302465, "dmesg", "critical"),
            ("gsp_rpc_timeout", None, None, "24.302484", 24.302484, "dmesg", "critical"),
            ("gsp_rpc_timeout", None, None, "84.300488", 84.300488, "dmesg", "critical"),
        ],
        {"xid_counts": {}, "worst_severity": "critical", "unknown_xids": []},
    ),
    "dmesg-xid32-31.log": (
        3,
        [
            ("xid", 32, "0000:01:00.0", "24128.828315", 24128.828315, "dmesg", "error"),
            ("xid", 32, "0000:01:00.0", "24128.828608", 24128.828608, "dmesg", "error"),
            ("xid", 31, "0000:01:00.0", "24128.834365", 24128.834365, "dmesg", "error"),
        ],
        {"xid_counts": {"31": 1, "32": 2}, "worst_severity": "error", "unknown_xids": []},
    ),
    "kmsg-xid32-31.log": (
        3,
        [
            ("xid", 32, "0000:01:00.0", "24128828315", 24128.828315, "kmsg", "error"),
            ("xid", 32, "0000:01:00.0", "24128828608", 24128.828608, "kmsg", "error"),
            ("xid", 31, "0000:01:00.0", "24128834365", 24128.834365, "kmsg", "error"),
        ],
        {"xid_counts": {"31": 1, "32": 2}, "worst_severity": "error", "unknown_xids": []},
    ),
    "journal-xid79-fallen-off-bus.log": (
        3,
        [
            ("xid", 79, "0000:2b:00.0", "May 18 19:02:39", None, "journal", "critical"),
            ("fallen_off_bus", None, "0000:2b:00.0", "May 18 19:02:39", None, "journal", "critical"),
        ],
        {"xid_counts": {"79": 1}, "worst_severity": "critical", "unknown_xids": []},
    ),
    "journal-xid45-after-nvlink5.log": (
        7,
        [
            ("xid", 45, bus, None, None, "unknown", "warning")
            for bus in (
                "0000:dc:00.0",
                "0000:ed:00.0",
                "0000:ba:00.0",
                "0000:97:00.0",
                "0000:dc:00.0",
                "0000:ba:00.0",
                "0000:ed:00.0",
            )
        ],
        {"xid_counts": {"45": 7}, "worst_severity": "warning", "unknown_xids": []},
    ),
    "syslog-fallen-off-bus-xid3.log": (
        10,
        [
            ("fallen_off_bus", None, "0000:01:00.0", "Jan 18 11:38:05", 269.516977, "journal", "critical"),
            # Xid 3 is not in the catalog: an event all the same, severity unknown.
            ("xid", 3, "0000:01:00.0", "Jan 18 11:38:05", 269.517039, "journal", "unknown"),
        ],
        {"xid_counts": {"3": 1}, "worst_severity": "critical", "unknown_xids": [3]},
    ),
    "nvlink5-messages.log": (
        5,
        [
            ("xid", 144, "0000:01:00.0", None, None, "unknown", "warning"),
            ("xid", 149, "0000:00:00.0", None, None, "unknown", "critical"),
            ("xid", 149, "0000:00:00.0", None, None, "unknown", "critical"),
            ("xid", 149, "0019:01:00.0", None, None, "unknown", "critical"),
            ("xid", 145, "0018:01:00.0", None, None, "unknown", "warning"),
        ],
        {"xid_counts": {"144": 1, "145": 1, "149": 3}, "worst_severity": "critical", "unknown_xids": []},
    ),
    # Clean logs and an empty one: no events.
    "kmsg-clean.log": (47, [], {"xid_counts": {}, "worst_severity": "none", "unknown_xids": []}),
    "journal-iso-clean.log": (47, [], {"xid_counts": {}, "worst_severity": "none", "unknown_xids": []}),
    "dmesg-iso-clean.log": (2, [], {"xid_counts": {}, "worst_severity": "none", "unknown_xids": []}),
    "empty.log": (0, [], {"xid_counts": {}, "worst_severity": "none", "unknown_xids": []}),
    # The driver's version messages are no GPU error events (driver_messages reads them, below).
    "dmesg-loading-api-mismatch-570.log": (7, [], {"xid_counts": {}, "worst_severity": "none"}),
    # Xid 154 names the recovery the GPU needs: anything but 0x0 (None) is critical.
    "dmesg-ctime-xid79-154-node-reboot.log": (
        3,
        [
            ("xid", 79, "0000:02:00.0", "Mon Sep 14 04:48:45 2026", None, "dmesg_ctime", "critical"),
            ("xid", 154, "0000:02:00.0", "Mon Sep 14 04:48:45 2026", None, "dmesg_ctime", "critical"),
        ],
        {"xid_counts": {"79": 1, "154": 1}, "worst_severity": "critical", "unknown_xids": []},
    ),
    "syslog-xid149-154-drain-and-reset.log": (
        2,
        [
            ("xid", 149, "0018:01:00.0", "Sep 19 10:30:06", None, "journal", "critical"),
            ("xid", 154, "0018:01:00.0", "Sep 19 10:30:06", None, "journal", "critical"),
        ],
        {"xid_counts": {"149": 1, "154": 1}, "worst_severity": "critical", "unknown_xids": []},
    ),
    "nvrm-xid51-154-pf-flr.log": (
        3,
        [
            ("xid", 51, "0000:0d:00.0", None, None, "unknown", "unknown"),
            ("xid", 154, "0000:0d:00.0", None, None, "unknown", "critical"),
        ],
        {"xid_counts": {"51": 1, "154": 1}, "worst_severity": "critical", "unknown_xids": [51]},
    ),
    "dmesg-api-mismatch-client-pid.log": (6, [], {"xid_counts": {}, "worst_severity": "none"}),
    "journal-api-mismatch-client-pid.log": (5, [], {"xid_counts": {}, "worst_severity": "none"}),
    "syslog-api-mismatch-hash012.log": (1, [], {"xid_counts": {}, "worst_severity": "none"}),
}


@pytest.mark.parametrize(("name", "lines", "events", "summary"), [(k, *v) for k, v in CASES.items()], ids=list(CASES))
def test_scan(name, lines, events, summary):
    result = scan(name)
    assert result["lines"] == lines
    assert [brief(e) for e in result["events"]] == events
    assert {key: result["summary"][key] for key in summary} == summary
    assert result["summary"]["events"] == len(events)


def test_every_fixture_has_a_case():
    assert sorted(p.name for p in LOGS.glob("*.log")) == sorted(CASES)


@pytest.mark.parametrize(
    ("name", "index", "fields"),
    [
        # pid and process name, and the driver's text after them.
        (
            "dmesg-ctime-xid119-gsp.log",
            3,
            {
                "pid": 1263500,
                "process": "cache_mgr_main",
                "message": "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 76 "
                "(GSP_RM_CONTROL) (0x20801813 0x4c).",
                "line_number": 42,
            },
        ),
        # pid='<unknown>', name=<unknown>: neither is reported.
        (
            "dmesg-ctime-xid79-fallen-off-bus.log",
            0,
            {"pid": None, "process": None, "message": "GPU has fallen off the bus.", "line_number": 3},
        ),
        # Without pid and name at all.
        (
            "journal-xid79-fallen-off-bus.log",
            0,
            {"pid": None, "process": None, "message": "GPU has fallen off the bus.", "line_number": 2},
        ),
        # A message over three lines is one record: its address from the first, "fallen off the bus" from the last.
        (
            "dmesg-fallen-off-bus-no-xid.log",
            0,
            {
                "message": "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen "
                "off the bus and is not responding to commands.",
                "line": "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
                "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                "               NVRM: fallen off the bus and is not responding to commands.",
                "line_number": 1,
            },
        ),
        # Xid 45 names the Xid it follows; the catalog tells to follow that one.
        (
            "journal-xid45-after-nvlink5.log",
            0,
            {"pid": 1818990, "process": "python3", "message": "Ch 00000001 caused by previous Xid 149"},
        ),
    ],
)
def test_event_fields(name, index, fields):
    event = scan(name)["events"][index]
    assert {key: event[key] for key in fields} == fields


def test_catalog_fields_reach_the_event():
    event = scan("dmesg-ctime-xid79-fallen-off-bus.log")["events"][0]
    assert event["mnemonic"] == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert event["meaning"] == "GPU has fallen off the bus"
    assert event["category"] == "bus"
    assert event["nvidia_action"] == {"immediate": "RESTART_BM", "investigatory": "CONTACT_SUPPORT"}
    assert "reboot" in event["action"]
    assert event["documented"] and event["in_catalog"]


def test_unknown_xid_says_not_in_catalog():
    event = scan("syslog-fallen-off-bus-xid3.log")["events"][1]
    assert (event["in_catalog"], event["documented"], event["category"]) == (False, False, "unknown")
    assert "not in this collection's catalog" in event["meaning"]


def test_per_gpu_summary():
    gpus = scan("dmesg-ctime-xid43-31-94.log")["summary"]["gpus"]
    assert sorted(gpus) == ["0000:00:05.0", "0000:00:07.0", "0000:00:08.0"]
    assert gpus["0000:00:05.0"] == {
        "events": 2,
        "xids": [43],
        "event_kinds": ["xid"],
        "worst_severity": "warning",
        "actions": [gpus["0000:00:05.0"]["actions"][0]],
        "first_seen": "Wed Jul 31 23:14:18 2024",
        "last_seen": "Wed Jul 31 23:15:26 2024",
    }


def test_per_gpu_summary_puts_the_worst_action_first():
    gpu = scan("dmesg-ctime-xid13-31-109.log")["summary"]["gpus"]["0000:cb:00.0"]
    assert gpu["xids"] == [13, 31, 109]
    assert gpu["worst_severity"] == "critical"
    assert gpu["actions"][0].startswith("Drain the GPU")  # Xid 109: RESET_GPU
    assert len(gpu["actions"]) == 3  # 13 and 31 have their own actions; repeats appear once


def test_events_without_an_address_are_unattributed():
    summary = scan("dmesg-gsp-timeout-no-xid.log")["summary"]
    assert summary["event_counts"] == {"xid": 0, "fallen_off_bus": 0, "gsp_rpc_timeout": 3}
    assert list(summary["gpus"]) == ["unattributed"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PCI:0000:3b:00", "0000:3b:00.0"),
        ("GPU 0000:A1:00.0: GPU has fallen off the bus.", "0000:a1:00.0"),
        ("00000000:1A:00.0", "0000:1a:00.0"),  # nvidia-smi's form
        ("PCI:0019:01:00", "0019:01:00.0"),
        ("(PCI ID: 10de:26b5)", None),  # a vendor:device id, not an address
        ("PCI:...", None),
        ("", None),
    ],
)
def test_normalize_pci(text, expected):
    assert xid.normalize_pci(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ((LOGS / "journalctl-no-entries.out").read_text(), False),
        ("", False),
        ("-- Boot 0123 --\n-- No entries --\n", False),
        ((LOGS / "journal-iso-clean.log").read_text(), True),
    ],
)
def test_journal_has_entries(text, expected):
    assert xid.journal_has_entries(text) is expected


def test_formats_mixed_in_one_log():
    """A saved log concatenating captures of several formats: every record keeps its own format."""
    names = ["kmsg-xid32-31.log", "dmesg-fallen-off-bus-no-xid.log", "journal-xid79-fallen-off-bus.log"]
    text = "\n".join((LOGS / n).read_text().rstrip("\n") for n in names) + "\n"
    events = xid.scan(text)["events"]
    assert [e["format"] for e in events] == ["kmsg", "kmsg", "kmsg", "dmesg", "journal", "journal"]
    assert [e["line_number"] for e in events] == [1, 2, 3, 4, 10, 11]


@pytest.mark.parametrize(
    ("name", "log_format", "first"),
    [
        ("dmesg-xid32-31.log", "dmesg", ("24128.828315", 24128.828315)),
        ("dmesg-ctime-xid119-gsp.log", "dmesg_ctime", ("Sun Feb 23 16:24:18 2025", None)),
        ("dmesg-iso-clean.log", "dmesg_iso", ("2025-01-21T04:41:44,285060+00:00", None)),
        ("journal-xid79-fallen-off-bus.log", "journal", ("May 18 19:02:39", None)),
        ("journal-iso-clean.log", "journal_iso", ("2025-01-17T17:10:43+0000", None)),
        ("kmsg-clean.log", "kmsg", ("206764307", 206.764307)),
        ("syslog-fallen-off-bus-xid3.log", "journal", ("Jan 18 11:38:05", 269.516977)),
    ],
)
def test_every_line_of_a_capture_has_its_format(name, log_format, first):
    """The prefix of every record line, clean lines included, is read as the capture's format."""
    lines = [line for line in (LOGS / name).read_text().splitlines() if line[:1] not in (" ", "\t")]
    prefixes = [xid.line_prefix(line) for line in lines]
    assert {p[0] for p in prefixes} == {log_format}
    assert prefixes[0][1:3] == first


@pytest.mark.parametrize(
    ("name", "loaded", "mismatches"),
    [
        # Each line of the message carries its own timestamp: one stream, attributed to the line it starts on.
        ("dmesg-loading-api-mismatch-570.log", [("570.148.06", "proprietary", 1)],
         [("570.148.08", "570.148.06", None, 4)]),
        # Newer drivers name the client; continuation lines indented under the first.
        ("dmesg-api-mismatch-client-pid.log", [], [("595.84", "595.80", "kwin_wayland", 2)]),
        ("journal-api-mismatch-client-pid.log", [], [("570.133.07", "575.51.02", "nvidia-powerd", 1)]),
        # syslog writes the line breaks as #012.
        ("syslog-api-mismatch-hash012.log", [], [("535.54.03", "530.30.02", None, 1)]),
        ("dmesg-fallen-off-bus-no-xid.log", [("570.158.01", "open", 5)], []),
        ("dmesg-ctime-xid43-31-94.log", [("535.183.01", "proprietary", 1)], []),
        ("dmesg-iso-clean.log", [], []),
    ],
)  # fmt: skip
def test_driver_messages(name, loaded, mismatches):
    found = xid.driver_messages((LOGS / name).read_text())
    assert [(m["version"], m["flavor"], m["line_number"]) for m in found["loaded"]] == loaded
    assert [(m["client_version"], m["module_version"], m["client"], m["line_number"])
            for m in found["api_mismatch"]] == mismatches  # fmt: skip


@pytest.mark.parametrize(
    ("line", "severity"),
    [
        ("NVRM: Xid (PCI:0000:0d:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
         "critical"),
        # Back to no action: the Xid that needed it is over (its own event says how bad it was).
        ("NVRM: Xid (PCI:0000:0d:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
         "info"),
        # Without the action code, its words.
        ("NVRM: Xid (PCI:0000:0d:00): 154, GPU Reset Required", "critical"),
        ("NVRM: Xid (PCI:0000:0d:00): 154, GPU recovery action changed", "info"),
    ],
)  # fmt: skip
def test_xid_154_by_the_recovery_it_names(line, severity):
    """Lines in the form of the Xid 154 captures above, with the action changed."""
    assert [(e["xid"], e["severity"]) for e in xid.scan(line)["events"]] == [(154, severity)]
