"""A rack manifest read into the rack inventory contract: its formats, every problem with its line, all at once."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.bringup.plugins.module_utils import hardware_profiles, inventory_schema
from ansible_collections.gpuops.bringup.plugins.plugin_utils import rack_manifest

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "rack_manifest"
PROFILES = set(hardware_profiles.BUILTIN)
HEADER = "hostname,address,rack,u,profile,serial,bmc"
GOOD = "a01-gpu01,10.20.1.11,A01,3,hgx_h100_8gpu,SN1,10.30.1.11"
SPREADSHEET_COLUMNS = {"hostname": "Host Name", "address": "Mgmt IP", "u": "RU", "serial": "Serial Number",
                       "bmc": "iDRAC IP"}  # fmt: skip


def load(text, name="racks.csv", **kwargs):
    return rack_manifest.load(text.encode() if isinstance(text, str) else text, name, PROFILES, **kwargs)


def problems_of(*rows, header=HEADER):
    nodes, problems = load("\n".join([header, *rows]) + "\n")
    assert nodes == [] or not problems
    return problems


def test_the_handover_csv_becomes_nodes_with_their_lines():
    nodes, problems = rack_manifest.load((FIXTURES / "handover.csv").read_bytes(), "handover.csv", PROFILES)
    assert problems == []
    assert [n["hostname"] for n in nodes] == ["a01-gpu01", "a01-gpu02", "a02-gpu01", "a02-inf01"]
    # Lines as the file numbers them: a comment first, a blank line between the racks.
    assert [n["line"] for n in nodes] == [3, 4, 6, 7]
    assert nodes[0] == {
        "hostname": "a01-gpu01", "address": "10.20.1.11", "rack": "A01", "u": 3, "profile": "hgx_h100_8gpu",
        "serial": "1S2X9F0001", "bmc": "10.30.1.11", "line": 3, "rack_group": "rack_a01",
    }  # fmt: skip
    # Columns beyond the plugin's (asset tag, notes, a quoted comma) are left alone; a serial keeps its leading zero.
    assert "notes" not in nodes[1]
    assert nodes[3]["serial"] == "0123" and nodes[3]["address"] == "a02-inf01.mgmt.example.net"


def test_the_yaml_manifest_gives_the_same_nodes_as_the_csv_but_its_lines():
    csv_nodes, _problems = rack_manifest.load((FIXTURES / "handover.csv").read_bytes(), "handover.csv", PROFILES)
    yaml_nodes, problems = rack_manifest.load((FIXTURES / "handover.yml").read_bytes(), "handover.YAML", PROFILES)
    assert problems == []
    assert [n["line"] for n in yaml_nodes] == [4, 5, 13, 14]
    strip = [{k: v for k, v in n.items() if k != "line"} for n in csv_nodes]
    # YAML reads serial: 0123 as the text it is, not octal 83.
    assert [{k: v for k, v in n.items() if k != "line"} for n in yaml_nodes] == strip


def test_a_spreadsheet_export_with_its_own_headers_semicolons_a_bom_and_crlf():
    data = (FIXTURES / "spreadsheet-export.csv").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    nodes, problems = rack_manifest.load(data, "x.csv", PROFILES, columns=SPREADSHEET_COLUMNS, delimiter=";")
    assert problems == []
    assert [(n["hostname"], n["rack_group"], n["u"], n["bmc"]) for n in nodes] == [
        ("b01-gpu01", "rack_b01", 5, "10.50.1.11"),
        ("b01-gpu02", "rack_b01", 13, None),
    ]
    # Without the mapping the required columns are not found, and the message names the option.
    _nodes, problems = rack_manifest.load(data, "x.csv", PROFILES, delimiter=";")
    assert problems == [
        "line 1: the header row has no column for hostname (header 'hostname'), address (header 'address'); name "
        "the columns in the header, or map the manifest's own headers with the plugin's columns option"
    ]


def test_the_faulty_manifest_reports_every_problem_by_line_and_no_node():
    nodes, problems = rack_manifest.load((FIXTURES / "faulty.csv").read_bytes(), "faulty.csv", PROFILES)
    assert nodes == []
    assert [p.split(":")[0] for p in problems] == ["line 3"] * 6 + ["line 4"] * 7
    text = "\n".join(problems)
    for expected in (
        "line 3: hostname 'A01_GPU02' is not a lower-case DNS name",
        "line 3: address '10.20.1.311' is neither an IPv4 address nor a DNS name",
        "line 3: profile 'HGX_H100_8GPU' is not a hardware profile (profile names are lower case); use one of "
        "hgx_h100_8gpu, hgx_h200_8gpu, pcie_l40s_4gpu",
        "line 3: serial '1S2X9F0001' is also on line 2",
        "line 3: rack and unit 'rack_a01 U3' is also on line 2",
        "line 3: bmc '10.20.1.11' is the address of a01-gpu01",
        "line 4: rack is empty; every node needs its rack",
        "line 4: u '61' is not a rack unit; give the lowest U it occupies, 1 to 60",
        "line 4: profile 'dgx_b200' is not a hardware profile; use one of",
        "line 4: serial 'SN 3' is not a serial number",
        "line 4: bmc 'bmc..example' is not an IP address or DNS name",
        "line 4: hostname 'a01-gpu01' is also on line 2",
        "line 4: address '10.20.1.11' is also on line 2",
    ):
        assert expected in text


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (",10.0.0.1,A01,,hgx_h100_8gpu,,", "hostname is empty; every node needs its hostname"),
        ("n1,,A01,,hgx_h100_8gpu,,", "address is empty; every node needs its address"),
        ("n1,10.0.0.1,,,hgx_h100_8gpu,,", "rack is empty"),
        ("n1,10.0.0.1,A01,,,,", "profile is empty"),
        ("n1,10.0.0.1,--,,hgx_h100_8gpu,,", "rack '--' has no letter or digit to name its group rack_<rack> by"),
        ("N1,10.0.0.1,A01,,hgx_h100_8gpu,,", "hostname 'N1' is not a lower-case DNS name"),
        ("n_1,10.0.0.1,A01,,hgx_h100_8gpu,,", "hostname 'n_1' is not"),
        ("-n1,10.0.0.1,A01,,hgx_h100_8gpu,,", "hostname '-n1' is not"),
        ("n1-,10.0.0.1,A01,,hgx_h100_8gpu,,", "hostname 'n1-' is not"),
        ("n1..x,10.0.0.1,A01,,hgx_h100_8gpu,,", "hostname 'n1..x' is not"),
        (f"{'a' * 64},10.0.0.1,A01,,hgx_h100_8gpu,,", "is not a lower-case DNS name"),
        ("n1,10.0.0,A01,,hgx_h100_8gpu,,", "address '10.0.0' is neither an IPv4 address nor a DNS name"),
        ("n1,fe80::1::2,A01,,hgx_h100_8gpu,,", "address 'fe80::1::2' is not an IPv6 address"),
        ("n1,host name,A01,,hgx_h100_8gpu,,", "address 'host name' is not an IP address or DNS name"),
        ("n1,10.0.0.1,A01,0,hgx_h100_8gpu,,", "u '0' is not a rack unit"),
        ("n1,10.0.0.1,A01,61,hgx_h100_8gpu,,", "u '61' is not a rack unit"),
        ("n1,10.0.0.1,A01,+3,hgx_h100_8gpu,,", "u '+3' is not a rack unit"),
        ("n1,10.0.0.1,A01,٣,hgx_h100_8gpu,,", "u '٣' is not a rack unit"),
        ("n1,10.0.0.1,A01,3U,hgx_h100_8gpu,,", "u '3U' is not a rack unit"),
        ("n1,10.0.0.1,A01,,hgx_h100_8gpu,=cmd|' /C calc'!A0,", "serial \"=cmd|' /C calc'!A0\" is not a serial"),
        (f"n1,10.0.0.1,A01,,hgx_h100_8gpu,{'S' * 65},", "is not a serial number"),
        ("n1,10.0.0.1,A01,,hgx_h100_8gpu,,10.0.0.1", "bmc '10.0.0.1' is the address of n1 (line 2)"),
        ("n1,10.0.0.1,A01,,hgx_h100_8gpu,,bmc_1", "bmc 'bmc_1' is not an IP address or DNS name"),
        (f"n1,10.0.0.1,A01,,hgx_h100_8gpu,,{'b' * 254}", "bmc is 254 characters long, more than 253"),
        ("n1,10.0.0.1,A\x1b[31m01,,hgx_h100_8gpu,,", "rack 'A\\x1b[31m01' holds control codes; give it as plain text"),
    ],
)
def test_a_bad_cell_is_named_with_its_line_and_fix(row, expected):
    problems = problems_of(row)
    assert any(p.startswith("line 2: ") and expected in p for p in problems), problems


@pytest.mark.parametrize(
    "row",
    [
        f"{'a' * 63}.example,10.0.0.1,A01,1,hgx_h100_8gpu,,",
        "n1,fe80::1%eth0,A01,60,hgx_h100_8gpu,SN-1/2_3.4,",
        "n1,2001:db8::11,A01,,hgx_h100_8gpu,,2001:db8::12",
        "n1,n1.mgmt.example.net,hall 2 / row 3,7,pcie_l40s_4gpu,S,n1-bmc",
        f"n1,{'.'.join(['a' * 63] * 3 + ['b' * 61])},A01,,hgx_h100_8gpu,{'S' * 64},",
    ],
)
def test_the_edges_of_the_grammar_are_accepted(row):
    assert problems_of(row) == []


def test_duplicates_are_found_without_regard_to_case_and_name_both_lines():
    problems = problems_of(
        "n1,10.0.0.1,A01,3,hgx_h100_8gpu,SN1,bmc1",
        "n2,10.0.0.2,a01,3,hgx_h100_8gpu,sn1,BMC1",
        "n3,N1,B01,3,hgx_h100_8gpu,SN3,",
    )
    assert problems == [
        "line 3: serial 'sn1' is also on line 2",
        "line 3: bmc 'BMC1' is also on line 2",
        "line 3: rack and unit 'rack_a01 U3' is also on line 2",
    ]
    # The same U in another rack is another slot; hostnames differing only in case are one host.
    assert problems_of("n1,10.0.0.1,A01,3,hgx_h100_8gpu,,", "n2,10.0.0.2,A02,3,hgx_h100_8gpu,,") == []
    assert problems_of("n1,10.0.0.1,A01,,hgx_h100_8gpu,,", "n1,10.0.0.2,A01,,hgx_h100_8gpu,,") == [
        "line 3: hostname 'n1' is also on line 2"
    ]


def test_rack_groups():
    assert rack_manifest.rack_group("A01") == "rack_a01"
    assert rack_manifest.rack_group("B-02") == "rack_b_02"
    assert rack_manifest.rack_group(" hall 2 / row 3 ") == "rack_hall_2_row_3"
    assert rack_manifest.rack_group("Ä1") == "rack_1"
    assert rack_manifest.rack_group("--") == "rack_"


def test_the_site_s_own_profiles_are_accepted_when_named():
    row = "n1,10.0.0.1,A01,,gb200_nvl,,"
    assert "profile 'gb200_nvl' is not a hardware profile" in problems_of(row)[0]
    text = f"{HEADER}\n{row}\n".encode()
    nodes, problems = rack_manifest.load(text, "r.csv", PROFILES | {"gb200_nvl"})
    assert problems == [] and nodes[0]["profile"] == "gb200_nvl"


@pytest.mark.parametrize(
    ("data", "name", "expected"),
    [
        (b"", "r.csv", "the manifest has no header row; its first line names the columns: hostname,address,rack,u"),
        (b"# only a comment\n\n", "r.csv", "the manifest has no header row"),
        (f"{HEADER}\n".encode(), "r.csv", "the manifest lists no node; add a row per server"),
        (f"{HEADER}\n,,,,,,\n".encode(), "r.csv", "the manifest lists no node"),
        (b"hostname,rack,profile\n", "r.csv", "line 1: the header row has no column for address (header 'address')"),
        (f"{HEADER}\n{GOOD}\n\xff\n".encode("latin-1"), "r.csv", "line 3: the manifest is not UTF-8 (byte 99)"),
        (f'{HEADER}\n"a,b\n'.encode(), "r.csv", "line 2: not CSV with ',' between the columns"),
        (b"nodes: [", "r.yml", "the manifest is not YAML"),
        (b"- hostname: n1\n", "r.yml", "the manifest has no list of nodes; write `nodes:`"),
        (b"nodes: {hostname: n1}\n", "r.yml", "the manifest has no list of nodes"),
        (b"nodes:\n  - n1\n", "r.yml", "line 2: a node is a mapping of hostname, address, rack, u, profile"),
        (b"nodes:\n  - hostname: [n1]\n", "r.yml", "line 2: hostname is a list or mapping; give one value"),
        (b"hostname\n", "r.json", "r.json is neither .csv nor .yml/.yaml; name the manifest by its format"),
    ],
)
def test_a_manifest_that_cannot_be_read_says_why(data, name, expected):
    nodes, problems = rack_manifest.load(data, name, PROFILES)
    assert nodes == []
    assert any(expected in p for p in problems), problems


def test_yaml_cells_are_kept_as_written():
    text = (
        "nodes:\n  - {hostname: n1, address: 10.0.0.1, rack: 7, u: 07, profile: hgx_h100_8gpu, serial: 1e5, bmc: ~}\n"
    )
    nodes, problems = load(text, "r.yaml")
    assert problems == []
    assert (nodes[0]["rack"], nodes[0]["u"], nodes[0]["serial"], nodes[0]["bmc"]) == ("7", 7, "1e5", None)
    # A key the manifest maps is read under its own name; others are left alone.
    text = "nodes:\n  - {Host: n1, address: 10.0.0.1, rack: A, profile: hgx_h100_8gpu, hostname: ignored}\n"
    nodes, _problems = load(text, "r.yml", columns={"hostname": "Host"})
    assert nodes[0]["hostname"] == "n1"


def test_a_quoted_cell_over_two_lines_keeps_the_next_row_s_line():
    nodes, problems = load(
        f'{HEADER},notes\nn1,10.0.0.1,A01,,hgx_h100_8gpu,,,"two\nlines"\n# x\nn2,bad address,A01,,hgx_h100_8gpu,,\n'
    )
    assert nodes == [] and problems[0].startswith("line 5: address 'bad address'")


def test_the_row_bound(monkeypatch):
    monkeypatch.setattr(rack_manifest, "MAX_ROWS", 2)
    assert problems_of(GOOD, "a01-gpu02,10.20.1.12,A01,4,hgx_h100_8gpu,SN2,") == []
    assert problems_of(GOOD, "b,10.0.0.2,A01,,hgx_h100_8gpu,,", "c,10.0.0.3,A01,,hgx_h100_8gpu,,") == [
        "the manifest has 3 nodes, more than 2; split it into one manifest per hall"
    ]


def test_a_manifest_larger_than_the_byte_bound_is_refused_before_it_is_read(tmp_path):
    """A sparse file one byte over the bound: its size is refused from os.stat, nothing of it is read."""
    manifest = tmp_path / "racks.csv"
    with open(manifest, "wb") as handle:
        handle.truncate(rack_manifest.MAX_BYTES + 1)
    assert rack_manifest.MAX_BYTES == 64 * 1024 * 1024
    assert rack_manifest.read(str(manifest)) == (None, (
        f"the manifest {manifest} is 67108865 bytes, more than 67108864; split it into one manifest per hall, each at "
        "most 67108864 bytes"))  # fmt: skip


def test_the_byte_bound_and_a_file_that_reports_no_size(tmp_path, monkeypatch):
    monkeypatch.setattr(rack_manifest, "MAX_BYTES", len(f"{HEADER}\n{GOOD}\n"))
    manifest = tmp_path / "racks.csv"
    manifest.write_text(f"{HEADER}\n{GOOD}\n")
    assert rack_manifest.read(str(manifest)) == (manifest.read_bytes(), None)
    manifest.write_text(f"{HEADER}\n{GOOD}\n\n")
    assert rack_manifest.read(str(manifest))[1] == (
        f"the manifest {manifest} is {rack_manifest.MAX_BYTES + 1} bytes, more than {rack_manifest.MAX_BYTES}; split "
        f"it into one manifest per hall, each at most {rack_manifest.MAX_BYTES} bytes"
    )
    # A device or pipe reports size 0: the read itself stops past the bound.
    assert rack_manifest.read("/dev/zero")[1] == (
        f"the manifest /dev/zero holds more than {rack_manifest.MAX_BYTES} bytes; split it into one manifest per "
        f"hall, each at most {rack_manifest.MAX_BYTES} bytes"
    )


def test_a_manifest_that_is_not_there(tmp_path):
    data, problem = rack_manifest.read(str(tmp_path / "racks.csv"))
    assert data is None and problem.startswith(f"the manifest {tmp_path / 'racks.csv'} cannot be read: [Errno 2]")


def test_a_long_hostile_value_is_cut_in_its_message():
    problems = problems_of(f"n1,10.0.0.1,A01,,{'<script>' * 30},,")
    assert len(problems) == 1 and len(problems[0]) < 400 and "<scr... is not a hardware profile" in problems[0]
    # Longer than any name: refused for its length alone, not also as empty.
    assert problems_of(f"n1,10.0.0.1,A01,,{'<script>' * 100},,") == [
        "line 2: profile is 800 characters long, more than 253"
    ]


def test_the_nodes_meet_the_rack_inventory_contract():
    """What the inventory plugin makes of the handover passes every stage's inventory check."""
    nodes, _problems = rack_manifest.load((FIXTURES / "handover.csv").read_bytes(), "handover.csv", PROFILES)
    hosts = {
        n["hostname"]: {
            "group_names": [n["rack_group"], n["profile"]],
            "ansible_host": n["address"],
            "gpuops_hardware": hardware_profiles.resolve([n["rack_group"], n["profile"]]),
        }
        for n in nodes
    }
    problems, summary = inventory_schema.check_inventory(hosts, PROFILES)
    assert problems == []
    assert summary["racks"] == {"rack_a01": ["a01-gpu01", "a01-gpu02"], "rack_a02": ["a02-gpu01", "a02-inf01"]}


LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
NODE = st.fixed_dictionaries(
    {
        "hostname": st.lists(LABEL, min_size=1, max_size=3).map(".".join),
        "rack": st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9 _-]{0,7}[A-Za-z0-9])?", fullmatch=True),
        "u": st.one_of(st.none(), st.integers(1, rack_manifest.MAX_UNIT)),
        "profile": st.sampled_from(sorted(PROFILES)),
        "serial": st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,20}", fullmatch=True)),
    }
)


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(st.lists(NODE, min_size=1, max_size=8, unique_by=lambda n: n["hostname"]))
def test_what_is_written_as_csv_reads_back(written):
    rows = []
    for index, node in enumerate(written):
        # Addresses, serials and slots unique by construction, as a correct manifest has them.
        serial = f"{node['serial']}-{index}" if node["serial"] else None
        rows.append({**node, "address": f"10.0.{index // 250}.{index % 250 + 1}", "serial": serial, "bmc": None,
                     "u": node["u"] and (node["u"] + index) % rack_manifest.MAX_UNIT + 1})  # fmt: skip
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=rack_manifest.FIELD_NAMES)
    writer.writeheader()
    writer.writerows(rows)
    slots = [(rack_manifest.rack_group(r["rack"]), r["u"]) for r in rows if r["u"]]
    nodes, problems = load(out.getvalue())
    if len(set(slots)) < len(slots):
        assert any("rack and unit" in p for p in problems)
        return
    assert problems == []
    assert [{k: n[k] for k in rack_manifest.FIELD_NAMES} for n in nodes] == [{**r, "u": r["u"] or None} for r in rows]
    assert [n["line"] for n in nodes] == list(range(2, len(rows) + 2))


@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["r.csv", "r.yml"]))
def test_any_bytes_give_nodes_or_problems_never_a_crash(data, name):
    nodes, problems = rack_manifest.load(data, name, PROFILES)
    assert (nodes == []) or (problems == [])
    assert all(isinstance(p, str) and len(p) < 1200 for p in problems)
