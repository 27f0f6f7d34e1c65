"""One case per crash site the hardening review and the fuzzers found: what each input gives now.

Each of these raised an exception of no parser's own (KeyError, OverflowError, ValueError from int(), IndexError,
zlib.error, UnicodeEncodeError, RecursionError, TypeError) or took minutes. The property tests
(test_parser_properties.py) keep the whole class away; these pin the exact inputs and the answer expected.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    apt,
    container_toolkit,
    cuda_toolkit,
    dnf,
    infiniband,
    inventory_schema,
    kubernetes_node,
    nccl_tests,
    nvidia_smi,
    openpgp,
    osinfo,
    parsing,
    pci,
    perftest,
    repositories,
    rpm,
    simulation,
    xid,
)
from ansible_collections.gpuops.bringup.plugins.modules import dnf_module_stream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H100 = (FIXTURES / "nvidia_smi" / "h100-sxm-x8-565.derived.xml").read_text()
A10G = (FIXTURES / "nvidia_smi" / "a10g-515.xml").read_text()
NCCL = (FIXTURES / "nccl" / "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt").read_text()
HEADER = NCCL[: NCCL.index("   134217728")]


def row(wrong):
    """The capture's first result row with its out-of-place #wrong cell replaced."""
    return f"   134217728      33554432     float     sum      -1    613.3  218.85  382.99 {wrong}    614.3  218.48  382.34 0\n"  # noqa: E501


def test_undecodable_byte_in_a_process_name():
    # run_command's surrogateescape turned the byte into '\udcff'; ElementTree raised UnicodeEncodeError.
    text = A10G.replace("/usr/lib/xorg/Xorg", "/usr/lib/xorg/X\udcfforg")
    parsed = nvidia_smi.parse_query_xml(text)
    assert parsed["devices"][0]["name"] == "NVIDIA A10G"
    json.dumps(parsed, ensure_ascii=False).encode("utf-8")


def test_a_400_digit_number_in_the_xml_is_unknown():
    # float() made it inf and int(inf) raised OverflowError.
    text = H100.replace("<total>81559 MiB</total>", f"<total>{'9' * 400} MiB</total>", 1)
    assert nvidia_smi.parse_query_xml(text)["devices"][0]["memory_total_mib"] is None


def test_an_unclosed_doctype_is_refused_at_once():
    text = "<!DOCTYPE x [" * 20000 + H100
    with pytest.raises(nvidia_smi.NvidiaSmiParseError, match=r"never ends|not well-formed"):
        nvidia_smi.parse_query_xml(text)


def test_more_gpus_attached_than_described_is_a_finding():
    text = H100.replace("<attached_gpus>8</attached_gpus>", "<attached_gpus>9</attached_gpus>")
    found = nvidia_smi.findings(nvidia_smi.parse_query_xml(text))
    assert [(f["code"], f["severity"]) for f in found] == [("gpus_not_listed", "error")]
    assert found[0]["message"] == "nvidia-smi says 9 GPUs are attached but describes 8"


def test_nvlink_line_with_a_long_run_of_blanks():
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)" + " " * 200000 + "x\n\t Link 0:" + " " * 200000 + "26.562 GB/s\n"
    )
    gpus = nvidia_smi.parse_nvlink_status(text)
    assert gpus[0]["links"] == [{"link": 0, "speed_gbps": 26.562, "active": True}]


def test_nccl_row_of_eight_numbers_without_a_header():
    # _row got no columns and raised KeyError 'size'.
    parsed = nccl_tests.parse("1 2 3 4 5 6 7 8\n")
    assert parsed["results"] == []
    assert parsed["errors"] == ["the run ended before its summary ('# Avg bus bandwidth' missing)"] or parsed[
        "errors"
    ] == ["no nccl-tests output found: no header, result rows or summary"]


@pytest.mark.parametrize("wrong", ["inf", "1e400", "nan", "²", "٣"])
def test_nccl_wrong_count_that_is_no_number(wrong):
    # int(float('inf')) raised OverflowError; '²' passed isdigit() and failed int().
    parsed = nccl_tests.parse(HEADER + row(wrong))
    assert parsed["results"][0]["out_of_place"]["wrong"] is None
    assert parsed["results"][0]["in_place"]["wrong"] == 0


def test_nccl_infinite_bandwidth_is_no_measurement():
    # A time of 0 prints inf: a gate must not take it for an infinitely fast fabric.
    parsed = nccl_tests.parse(HEADER + row("0").replace("382.99", "inf"))
    assert parsed["results"][0]["out_of_place"]["busbw_gbps"] is None
    assert parsed["max_busbw_gbps"] == 382.34
    both = nccl_tests.parse(HEADER + row("0").replace("382.99", "inf").replace("382.34", "1e400"))
    assert both["results"] == []
    assert nccl_tests.verdict(both, 0, 100.0, "max")[0] is False


@pytest.mark.parametrize("size", ["²", "٣٤", "9" * 5000])
def test_nccl_size_in_unicode_or_endless_digits(size):
    parsed = nccl_tests.parse(HEADER + row("0").replace("134217728", size, 1))
    assert parsed["results"] == []


def test_nccl_channel_and_warn_lines_with_long_blank_runs():
    text = "Channel 00/0 : 0 via NET/IB/0/GDRDMA" + " " * 300000 + "x\nNCCL WARN oops" + " " * 300000 + "y\n"
    parsed = nccl_tests.parse(text)
    assert parsed["transport"]["net_channels"] == 1
    assert parsed["warnings"][0].startswith("oops")


def test_xid_with_a_unicode_digit_pid():
    events = xid.scan("[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=²³, name=x, GPU has fallen off the bus.\n")[
        "events"
    ]
    assert (events[0]["xid"], events[0]["pid"]) == (79, None)


def test_xid_search_on_a_line_repeating_its_prefix():
    text = "[  1.0] NVRM: " + "NVRM: Xid (" * 100000 + "\n"
    assert xid.scan(text)["events"] == []


def test_xid_kmsg_timestamp_of_endless_digits():
    result = xid.scan("6," + "9" * 5000 + ",1,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n")
    assert result["events"][0]["format"] == "unknown"


def test_perftest_gid_index_and_rates_that_are_no_numbers():
    text = (FIXTURES / "perftest" / "perftest-273-write-bw-post-list-gbits.txt").read_text()
    # '²'.isdigit() is true, int('²') raised ValueError; float('0.4.8') too.
    assert perftest.parse_write_bw(text.replace("GID index       : 2", "GID index       : ²"))["gid_index"] is None
    parsed = perftest.parse_write_bw(text.replace("0.48", "0.4.8"))
    assert (parsed["rows"], parsed["average_gbps"]) == ([], None)


def test_ibstat_field_line_of_blanks():
    parsed = infiniband.parse_ibstat("CA 'mlx5_0'\n\tPort 1:\n\t\tRate:" + " " * 300000 + "x\n")
    assert parsed["devices"][0]["ports"][0]["rate_gbps"] is None


def test_infiniband_sort_key_of_a_unicode_digit_name():
    # re.split on \d kept '²' apart and int('²') raised ValueError.
    devices = infiniband.merge([], [{"name": "²", "ports": []}, {"name": "mlx5_10", "ports": []}])
    assert [d["name"] for d in devices] == ["mlx5_10", "²"]


def test_lspci_id_match_on_many_notes():
    # The [vendor:device] pattern's nested quantifier was exponential in the notes after the ids.
    line = "0000:00:00.0 VGA compatible controller [0300]: x [10de:1234]" + " (a)" * 30 + " x\n"
    with pytest.raises(pci.PciParseError):
        pci.parse_lspci_nn(line)


def test_lspci_cut_mid_device_is_reported():
    text = (FIXTURES / "pci" / "hgx-h100-x8-cx7.derived.txt").read_text()
    read = pci.read_lspci_nn(text[: len(text) - 20])
    assert len(read["unread"]) == 1
    assert pci.unread_finding(read["unread"])["code"] == "lspci_lines_unread"


@pytest.mark.parametrize(
    ("text", "caps"),
    [("CapEff:\n", 0), ("CapEff:\tzzzz\n", 0), ("CapEff:\t٣\n", 0), ("CapEff:\t00000000a80425fb\n", 0xA80425FB)],
)
def test_capeff_empty_or_not_hex(text, caps):
    # line.split()[1] raised IndexError, int(..., 16) ValueError.
    assert osinfo.effective_caps(text) == caps


def test_limit_that_is_no_number():
    text = (
        "Limit Soft Limit Hard Limit Units\nMax locked memory         lots                 unlimited            bytes\n"
    )
    assert osinfo.parse_limit(text, "Max locked memory") == {"soft": None, "hard": "unlimited"}


@pytest.mark.parametrize("size", ["²", "٣", "9" * 5000])
def test_swaps_size_in_unicode_or_endless_digits(size):
    text = f"Filename Type Size Used Priority\n/dev/sda2 partition {size} 0 -2\n"
    assert osinfo.parse_swaps(text)[0]["size_kib"] == 0


def test_dpkg_kernel_name_of_a_long_digit_run():
    # The versioned-name search retried \d+ from every digit: 256 KB took 19 s.
    text = "linux-image-" + "0" * 300000 + "\t1\tii \tinstall\n"
    installed = {n: p["version"] for n, p in osinfo.parse_dpkg_query(text).items()}
    # No version in the name: a meta-package, as linux-image-amd64 is.
    assert osinfo.classify_kernel_packages(installed, "6.1.0-50-amd64", "Debian") == {
        "running": [],
        "meta": [*installed],
    }


def test_rpm_query_with_many_versions_of_one_name_sorts_by_key():
    # Sorting with cmp_to_key(compare_versions) took 40 s for 5 MB of one name's versions.
    text = "".join(f"kernel\t5.14.0-{n}.el9.x86_64\n" for n in range(200000, 0, -1))
    versions = osinfo.parse_rpm_query(text)["kernel"]
    assert (versions[0], versions[-1]) == ("5.14.0-1.el9.x86_64", "5.14.0-200000.el9.x86_64")


def test_cmdline_with_an_unclosed_quote():
    assert osinfo.parse_cmdline('ro quiet foo="a b\n') == ["ro", "quiet", "foo=a b"]


@pytest.mark.parametrize(("a", "b"), [("²:1.0", "1.0"), ("1.0", "٣:1.0"), ("9" * 5000 + ":1", "1")])
def test_epochs_in_unicode_or_endless_digits(a, b):
    # epoch.isdigit() passed and int() raised.
    assert apt.compare_versions(a, b) in (-1, 0, 1)
    assert rpm.compare_versions(a, b) in (-1, 0, 1)


def test_rpm_version_of_endless_digits():
    assert rpm.compare_versions("1." + "9" * 5000, "1.2") == 1


def test_truncated_openpgp_key():
    # data[offset + 1] raised IndexError.
    for data in (b"\xc6", b"\x99", b"\x99\x01", b"\xc6\xff\x00"):
        with pytest.raises(openpgp.KeyFileError, match="truncated"):
            openpgp.primary_fingerprints(data)


def test_armor_begin_repeated():
    with pytest.raises(openpgp.KeyFileError):
        openpgp.primary_fingerprints(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n" * 50000)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x1f\x8b\x08\x00" + bytes(range(60)), "corrupt"),
        (b"\x1f\x8b", "truncated"),
    ],
)
def test_corrupt_gzip(data, message):
    # gzip.decompress raised zlib.error, which callers did not catch.
    with pytest.raises(parsing.ParseError, match=message):
        parsing.decompress(data)


def test_gzip_bomb_is_refused():
    import gzip

    with pytest.raises(parsing.TooLarge):
        parsing.decompress(gzip.compress(b"\0" * (3 * 1024 * 1024)), limit=1024 * 1024)


@pytest.mark.parametrize("url", ["http://[", "http://[::1/x", "http://h:65536/"])
def test_malformed_mirror_url(url):
    # urlsplit raised ValueError in the preflight filter.
    assert repositories.mirror_url_problem(url).startswith("it is not a valid URL")


def test_file_key_url_with_a_mirror():
    # "is not an absolute URL" (ValueError) for a file:// URL, which has no host.
    assert repositories.mirrored("file:///etc/keys/k.asc", "http://m") == "file:///etc/keys/k.asc"


def test_repository_suites_that_is_a_number():
    problems = repositories.repository_problems(
        {"name": "x", "uris": ["http://x"], "suites": 5, "key_content": "k"}, "apt"
    )
    assert problems == ["suites 5 must be a list of suite names such as stable or ./"]


def test_dnf_resolver_output_with_extra_lines():
    payload = (FIXTURES / "dnf" / "resolve-installed.json").read_text().strip()
    out = f"Updating Subscription Management repositories.\n{dnf.RESULT_PREFIX}{payload}\nplugin: deprecated\n"
    assert dnf.parse_resolution(out)["error"] is None
    with pytest.raises(parsing.ParseError, match="no line starts with"):
        dnf.parse_resolution("")
    with pytest.raises(parsing.ParseError, match="not the resolver's shape"):
        dnf.parse_resolution(dnf.RESULT_PREFIX + '{"install": 5}')


def test_debian_revision_in_a_libcuda_depends():
    # driver_version_key('550.54.15-1') raised ValueError in cuda_toolkit_facts.
    stanza = {"Package": "nvidia-cuda-dev", "Depends": "libcuda1 (>= 550.54.15-1) | libcuda.so.1 (>= 550)"}
    assert cuda_toolkit.driver_library_minimum([stanza])["version"] == "550.54.15"
    provides = {
        "Package": "libcuda1",
        "Source": "nvidia-graphics-drivers",
        "Provides": "libcuda.so.1 (= 1:535.274.02-1)",
    }
    assert cuda_toolkit.provided_driver_version(provides) == "535.274.02"


def test_alternatives_priority_that_is_no_number():
    parsed = cuda_toolkit.parse_alternatives("Name: cuda\nAlternative: /usr/local/cuda-12.4\nPriority: high\n")
    assert parsed["choices"] == {"/usr/local/cuda-12.4": None}


def test_toml_nested_deeper_than_any_configuration():
    # tomllib raised RecursionError on deep arrays and took seconds on long dotted keys.
    for text in ("a = " + "[" * 5000 + "]" * 5000, "a" + ".a" * 20000 + " = 1", "a = " + "{b = " * 3000 + "1"):
        with pytest.raises(container_toolkit.ConfigProblem, match="levels deep"):
            container_toolkit.toml_loads(text, "config.toml")


def test_deeply_nested_json():
    # json.loads raised RecursionError.
    with pytest.raises(container_toolkit.ConfigProblem):
        container_toolkit.docker_daemon("[" * 100000, "/x", True, "daemon.json")
    assert simulation.simulated(lambda _path: "[" * 100000) == {"profile": "unknown", "captures": []}


def test_modules_d_line_of_blanks():
    # configparser's option pattern was quadratic on it.
    with pytest.raises(parsing.ParseError, match="neither"):
        dnf_module_stream.parse_module_state("[nvidia-driver]\na" + " " * 300000 + "x\n", "nvidia-driver")


def test_ansible_host_given_as_a_list():
    # The endpoint became a dict key: TypeError (unhashable list).
    hardware = {
        "profile": "pcie_l40s_4gpu",
        "gpu": {"model": "NVIDIA L40S", "architecture": "ada", "count": 4, "nvswitch": False},
        "infiniband": {"ports": 2, "rate_gbps": 400, "link_layer": "Ethernet"},
    }
    hosts = {"n1": {"group_names": ["rack_a", "pcie_l40s_4gpu"], "gpuops_hardware": hardware, "ansible_host": ["a"]}}
    problems, _summary = inventory_schema.check_inventory(hosts)
    assert problems == [
        "host n1: ansible_host is ['a'], not a host name or address; give one name or address as a string, "
        "e.g. ansible_host: 10.0.0.11"
    ]


def test_unquoted_kubernetes_version():
    # PACKAGE_VERSION.match(1.31) raised TypeError.
    v = {
        "k8s_node_kubernetes_version": 1.31,
        "k8s_node_repo_url": "https://pkgs.k8s.io/core:/stable:/v1.31/deb",
        "k8s_node_join_token": "",
        "k8s_node_control_plane_host": "cp",
        "k8s_node_ca_cert_hash": "",
        "k8s_node_api_endpoint": "",
        "k8s_node_control_plane_version": "",
        "k8s_node_labels": {},
        "k8s_node_label_prefix": "gpuops.io",
        "k8s_node_taints": [],
    }
    assert kubernetes_node.input_problems(v) == [
        "k8s_node_kubernetes_version is 1.31, a float, not a string. Fix: quote it, e.g. "
        'k8s_node_kubernetes_version: "1.31"'
    ]
