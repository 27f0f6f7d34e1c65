"""inventory.system_serial: the node's system serial as dmidecode reads it (captures in tests/fixtures/dmidecode,
SOURCES.md) against the one the rack manifest lists for it (gpuops_system_serial); its input check; its verdicts."""

from __future__ import annotations

import pytest
from test_acceptance import H100, check, evidence, fixture, run

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance, acceptance_faults

SERIAL = "inventory.system_serial"
# The Dell PowerEdge XE9680 capture's serial.
DELL = "HSR8X04"


def judge(system_serial, dmidecode="dell-xe9680-system.txt", optional=("nccl.single_node",), **kwargs):
    """The healthy H100 node with its dmidecode output (a capture's name, or an evidence item) and expected serial."""
    items = evidence()
    items["dmidecode.txt"] = run(fixture(f"dmidecode/{dmidecode}")) if isinstance(dmidecode, str) else dmidecode
    return acceptance.node_results("n1", H100, items, optional=optional, system_serial=system_serial, **kwargs)


@pytest.mark.parametrize(
    ("expected", "shown"),
    [(DELL, "'HSR8X04'"), ("hsr8x04", "'hsr8x04'"), (" HSR8x04\t", "' HSR8x04\\\\t'"), ("  hsr8X04 ", "'  hsr8X04 '")],
)
def test_the_serial_on_record_passes_whatever_its_case_and_blanks(expected, shown):
    result = judge(expected)
    found = check(result, SERIAL)
    assert (found["status"], found["required"], found["value"], found["gate"]) == ("PASS", True, DELL, expected)
    assert found["reason"] == (
        f"dmidecode reports the system serial 'HSR8X04', the rack manifest's {shown} (gpuops_system_serial; "
        "compared without regard to case or surrounding blanks)"
    )
    assert found["evidence"] == ["dmidecode.txt"] and found["fault"] is None
    assert result["verdict"] == "accepted"


@pytest.mark.parametrize(
    "expected",
    [
        "HSR8X05",  # one character off
        "HSR8X0",  # a prefix
        "HSR8X044",  # one longer
        "HSR8-X04",  # a character between
        "0HSR8X04",
    ],
)
def test_another_serial_fails_and_rejects_the_node(expected):
    result = judge(expected)
    found = check(result, SERIAL)
    assert (found["status"], found["required"], found["fault"]) == ("FAIL", True, "system_serial_mismatch")
    assert (found["value"], found["gate"]) == (DELL, expected)
    assert found["reason"] == (
        f"dmidecode reports the system serial 'HSR8X04', the rack manifest lists {expected!r} for this node "
        "(gpuops_system_serial): this is not the machine the manifest names for its slot"
    )
    fault = acceptance_faults.FAULTS["system_serial_mismatch"]
    assert (found["severity"], found["action"]) == (fault["severity"], fault["action"]) == ("high", fault["action"])
    assert "re-rack" in found["action"] and "correct its serial column" in found["action"]
    assert result["verdict"] == "rejected" and result["accepted"] is False
    assert f"{SERIAL} FAIL: dmidecode reports the system serial 'HSR8X04'" in result["summary"]


def test_a_unicode_lookalike_from_the_firmware_is_not_the_ascii_serial():
    """The Kelvin sign (U+212A) lowers to 'k' in Unicode: a firmware serial holding it is not the manifest's."""
    dmidecode = run("System Information\n\tSerial Number: \u212a100\n")
    assert check(judge("k100", dmidecode), SERIAL)["status"] == "FAIL"
    assert check(judge("K100", run("System Information\n\tSerial Number: k100\n")), SERIAL)["status"] == "PASS"


def test_a_vendor_placeholder_cannot_be_verified():
    """The ASUS capture's serial reads 'System Serial Number': ERROR, required, so the node is incomplete."""
    result = judge("SN0001", "asus-placeholders.txt")
    found = check(result, SERIAL)
    assert (found["status"], found["required"], found["fault"]) == ("ERROR", True, "system_serial_unreported")
    assert found["reason"] == (
        "cannot verify the rack manifest's serial 'SN0001' (gpuops_system_serial): dmidecode prints the serial "
        "number 'System Serial Number', a vendor's placeholder"
    )
    assert (found["value"], found["gate"]) == ("System Serial Number", "SN0001")
    assert found["action"] == acceptance_faults.FAULTS["system_serial_unreported"]["action"]
    assert result["verdict"] == "incomplete"


def test_no_system_section_cannot_be_verified():
    """Synthetic: dmidecode's BIOS section alone (the Dell capture has only the system section), no serial line."""
    found = check(judge("SN0001", run("BIOS Information\n\tVendor: Dell Inc.\n")), SERIAL)
    assert (found["status"], found["fault"], found["value"]) == ("ERROR", "system_serial_unreported", None)
    assert found["reason"].endswith(": dmidecode prints no System Information serial number")


@pytest.mark.parametrize(
    ("dmidecode", "fault", "why"),
    [
        ({"tool": "dmidecode", "missing": True}, "tool_missing", "dmidecode is not installed on the node"),
        (run("", 1, "/sys/firmware/dmi/tables/smbios_entry_point: Permission denied\n"), "tool_failed",
         "dmidecode -t system -t bios exited with 1: /sys/firmware/dmi/tables/smbios_entry_point: Permission denied"),
        (run(""), "tool_failed", "dmidecode -t system -t bios printed nothing"),
        ({}, "tool_failed", "dmidecode -t system -t bios was not collected"),
    ],
)  # fmt: skip
def test_without_dmidecode_the_serial_cannot_be_verified(dmidecode, fault, why):
    result = judge("SN0001", dmidecode)
    found = check(result, SERIAL)
    assert (found["status"], found["required"], found["fault"], found["severity"]) == ("ERROR", True, fault, "low")
    assert found["reason"] == f"cannot verify the rack manifest's serial 'SN0001' (gpuops_system_serial): {why}"
    assert result["verdict"] == "incomplete"


@pytest.mark.parametrize("unset", [None, ""])
def test_a_node_without_a_serial_skips_the_check_and_is_not_held_to_it(unset):
    result = judge(unset)
    found = check(result, SERIAL)
    assert (found["status"], found["required"]) == ("SKIPPED", False)
    assert found["reason"] == (
        "not applicable: gpuops_system_serial is not set for this node (the rack manifest's serial column sets it)"
    )
    assert found["value"] is None and found["evidence"] == []
    assert result["verdict"] == "accepted"
    # Listed by the profile's or the operator's required checks, it is still not required of a node without one
    # (input_problems refuses that list for such a node before anything is read).
    found = check(judge(unset, required=[SERIAL, "gpu.count"]), SERIAL)
    assert (found["status"], found["required"]) == ("SKIPPED", False)
    # Not required by the list either: the not-applicable marker is still no field of the document.
    found = check(judge(unset, required=["gpu.count"]), SERIAL)
    assert sorted(found) == sorted(check(judge(DELL), SERIAL)) and "not_applicable" not in found


def test_the_check_is_required_by_default_and_optional_when_told():
    assert SERIAL in acceptance.required_checks(H100)
    assert SERIAL not in acceptance.required_checks(H100, optional=[SERIAL])
    result = judge("HSR8X05", optional=("nccl.single_node", SERIAL))
    assert (check(result, SERIAL)["status"], check(result, SERIAL)["required"]) == ("FAIL", False)
    assert result["verdict"] == "accepted"


def test_hostile_serials_are_cut_and_escaped_in_the_reason():
    """Synthetic: a serial line with terminal escapes and one 100,000 characters long, as a hostile firmware could
    write them; the reason stays one short line, the value keeps what was read for the record."""
    escape = "\x1b[2J\x1b[31mHSR8X04\x07"
    found = check(judge(DELL, run(f"System Information\n\tSerial Number: {escape}\n")), SERIAL)
    assert found["status"] == "FAIL" and found["value"] == escape
    assert "\x1b" not in found["reason"] and "\\x1b[2J" in found["reason"]
    long = "A" * 100_000
    found = check(judge(DELL, run(f"System Information\n\tSerial Number: {long}\n")), SERIAL)
    assert found["status"] == "FAIL" and found["value"] == long and len(found["reason"]) < 400


@pytest.mark.parametrize(
    "serial",
    [None, "", "A", "0123", "1S2X9F0001", "SN.01_a/b-c", "A" * 64, "a" * 64],
)
def test_a_serial_as_labels_print_it_passes_the_input_check(serial):
    assert acceptance.system_serial_problem(serial) is None
    assert acceptance.input_problems(H100, system_serial=serial) == []


FIX = (
    "Fix: copy it as the chassis label shows it (the rack manifest's serial column sets it), or leave it unset to skip "
    "inventory.system_serial."
)


@pytest.mark.parametrize(
    ("serial", "shown"),
    [
        ("A" * 65, repr("A" * 65)),
        ("SN 0001", "'SN 0001'"),
        (" SN0001", "' SN0001'"),
        ("-SN0001", "'-SN0001'"),
        ("SN0001\n", "'SN0001\\\\n'"),
        ("S\u00e9rie1", "'S\u00e9rie1'"),
        ("SN\x1b[31m1", "'SN\\\\x1b[31m1'"),
    ],
)
def test_a_serial_no_label_prints_is_named_with_its_fix(serial, shown):
    problem = acceptance.system_serial_problem(serial)
    assert problem == (
        f"gpuops_system_serial is {shown}: not a system serial (letters, digits, '.', '_', '/' or '-', starting with a "
        f"letter or digit, at most 64). {FIX}"
    )
    assert acceptance.input_problems(H100, system_serial=serial) == [problem]


def test_a_long_hostile_serial_is_cut_in_its_message():
    problem = acceptance.system_serial_problem("\x00" * 100_000)
    assert len(problem) < 800 and "\x00" not in problem


@pytest.mark.parametrize(("serial", "shown"), [(83, "83"), (1.5, "1.5"), (True, "True"), (["SN1"], "['SN1']")])
def test_a_serial_that_is_no_text_is_to_be_quoted(serial, shown):
    assert acceptance.system_serial_problem(serial) == (
        f"gpuops_system_serial is {shown}, not text. Fix: quote it as the chassis label shows it (YAML reads an "
        "unquoted 0123 as the number 83), or leave it unset to skip inventory.system_serial."
    )


REQUIRED_WITHOUT_SERIAL = (
    "inventory.system_serial is required, but gpuops_system_serial is not set for this node: it would never be "
    "compared. Fix: give the node its serial (the rack manifest's serial column, or gpuops_system_serial), or take "
    "inventory.system_serial out of the required checks."
)


def test_a_list_naming_the_check_needs_the_node_s_serial():
    assert acceptance.input_problems(H100, [SERIAL, "gpu.count"]) == [REQUIRED_WITHOUT_SERIAL]
    profile = {**H100, "acceptance": {"required": ["gpu.count", SERIAL]}}
    assert acceptance.input_problems(profile, system_serial="") == [REQUIRED_WITHOUT_SERIAL]
    # With a serial, taken out again, or required only by default (not named): nothing to refuse.
    assert acceptance.input_problems(H100, [SERIAL], system_serial="SN1") == []
    assert acceptance.input_problems(profile, optional=[SERIAL]) == []
    assert acceptance.input_problems(H100) == []


def test_the_manifest_reads_serials_with_the_same_grammar():
    from ansible_collections.gpuops.bringup.plugins.plugin_utils import rack_manifest

    assert rack_manifest.SYSTEM_SERIAL is acceptance.SYSTEM_SERIAL
