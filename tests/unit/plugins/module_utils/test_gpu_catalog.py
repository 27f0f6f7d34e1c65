"""gpu_catalog: GPU products by nvidia-smi name and PCI device id, and the CUDA toolkit driver tables."""

from __future__ import annotations

import itertools

import pytest
from ansible.module_utils.compat.version import LooseVersion

from ansible_collections.gpuops.bringup.plugins.module_utils import gpu_catalog
from ansible_collections.gpuops.bringup.plugins.module_utils.hardware_profiles import ARCHITECTURES

EXTEND = (
    "add its PCI device id and nvidia-smi name to DEVICES in plugins/module_utils/gpu_catalog.py "
    "(source: the Compatible GPUs table in NVIDIA/open-gpu-kernel-modules README.md)"
)

# Names as nvidia-smi --query-gpu=name prints them, for the datacenter GPUs
# operators deploy: (name, family, architecture, compute capability, open kernel modules).
NVIDIA_SMI_NAMES = [
    ("Tesla V100-SXM2-16GB", "V100", "volta", "7.0", "unsupported"),
    ("Tesla V100-SXM2-32GB", "V100", "volta", "7.0", "unsupported"),
    ("Tesla V100-PCIE-16GB", "V100", "volta", "7.0", "unsupported"),
    ("Tesla V100-PCIE-32GB", "V100", "volta", "7.0", "unsupported"),
    ("Tesla V100-FHHL-16GB", "V100", "volta", "7.0", "unsupported"),
    ("Tesla V100-DGXS-32GB", "V100", "volta", "7.0", "unsupported"),
    ("Tesla V100-SXM3-32GB", "V100", "volta", "7.0", "unsupported"),
    ("Tesla V100S-PCIE-32GB", "V100S", "volta", "7.0", "unsupported"),
    ("Tesla T4", "T4", "turing", "7.5", "supported"),
    ("NVIDIA A100-SXM4-40GB", "A100", "ampere", "8.0", "supported"),
    ("NVIDIA A100-SXM4-80GB", "A100", "ampere", "8.0", "supported"),
    ("NVIDIA A100-PCIE-40GB", "A100", "ampere", "8.0", "supported"),
    ("NVIDIA A100 80GB PCIe", "A100", "ampere", "8.0", "supported"),
    ("NVIDIA A30", "A30", "ampere", "8.0", "supported"),
    ("NVIDIA A40", "A40", "ampere", "8.6", "supported"),
    ("NVIDIA A10", "A10", "ampere", "8.6", "supported"),
    ("NVIDIA A10G", "A10G", "ampere", "8.6", "supported"),
    ("NVIDIA A16", "A16", "ampere", "8.6", "supported"),
    ("NVIDIA A2", "A2", "ampere", "8.6", "supported"),
    ("NVIDIA L4", "L4", "ada", "8.9", "supported"),
    ("NVIDIA L40", "L40", "ada", "8.9", "supported"),
    ("NVIDIA L40S", "L40S", "ada", "8.9", "supported"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", "ada", "8.9", "supported"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", "hopper", "9.0", "supported"),
    ("NVIDIA H100 PCIe", "H100 PCIe", "hopper", "9.0", "supported"),
    ("NVIDIA H100 NVL", "H100 NVL", "hopper", "9.0", "supported"),
    ("NVIDIA H200", "H200", "hopper", "9.0", "supported"),
    ("NVIDIA H200 NVL", "H200 NVL", "hopper", "9.0", "supported"),
    ("NVIDIA H20", "H20", "hopper", "9.0", "supported"),
    ("NVIDIA GH200 120GB", "GH200", "hopper", "9.0", "required"),
    ("NVIDIA GH200 480GB", "GH200", "hopper", "9.0", "required"),
    ("NVIDIA B200", "B200", "blackwell", "10.0", "required"),
    ("NVIDIA GB200", "GB200", "blackwell", "10.0", "required"),
    ("NVIDIA B300 SXM6 AC", "B300", "blackwell", "10.3", "required"),
    ("NVIDIA GB300", "GB300", "blackwell", "10.3", "required"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell", "blackwell", "12.0", "required"),
    (
        "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        "RTX PRO 6000 Blackwell",
        "blackwell",
        "12.0",
        "required",
    ),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell", "blackwell", "12.0", "required"),
]


@pytest.mark.parametrize(("name", "family", "architecture", "capability", "open_modules"), NVIDIA_SMI_NAMES)
def test_nvidia_smi_names(name, family, architecture, capability, open_modules):
    entry = gpu_catalog.lookup(product_name=name)
    assert (entry["product"], entry["family"], entry["architecture"]) == (name, family, architecture)
    assert (entry["compute_capability"], entry["open_modules"]) == (capability, open_modules)


@pytest.mark.parametrize(("name", "family"), [(name, family) for _id, name, family in gpu_catalog.DEVICES])
def test_every_listed_name_is_found_exactly_and_by_its_family_pattern(name, family):
    assert gpu_catalog.lookup(product_name=name)["family"] == family
    # The name patterns must agree with the table: a listed name that an
    # earlier, broader pattern caught would put its unlisted variants in the
    # wrong family (pattern order: "H100 NVL" before "H100").
    bare = gpu_catalog._PREFIX.sub("", name.lower(), count=1)
    first = next(fam for fam, pattern in gpu_catalog._PATTERNS if pattern.fullmatch(bare))
    assert first == family


@pytest.mark.parametrize(
    ("name", "product", "family"),
    [
        # nvidia-smi prints the driver's name; case and spacing vary in inventories.
        ("nvidia  h100 80gb hbm3 ", "NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("TESLA T4", "Tesla T4", "T4"),
        # Variants from NVIDIA's name table that DEVICES does not list: the family pattern.
        ("Tesla V100-SXM2-16GB-LS", "Tesla V100-SXM2-16GB-LS", "V100"),
        ("Tesla V100-SXM3-32GB-H", "Tesla V100-SXM3-32GB-H", "V100"),
        ("NVIDIA A100-PG509-200", "NVIDIA A100-PG509-200", "A100"),
        ("NVIDIA A800 80GB PCIe LC", "NVIDIA A800 80GB PCIe LC", "A800"),
        ("NVIDIA H20-3e", "NVIDIA H20-3e", "H20"),
        ("NVIDIA GH200 144G HBM3e", "NVIDIA GH200 144G HBM3e", "GH200"),
        # Short names as people write them in inventories.
        ("H100", "H100", "H100 SXM"),
        ("A100", "A100", "A100"),
        ("T4", "T4", "T4"),
        ("L40S", "L40S", "L40S"),
        ("NVIDIA H100", "NVIDIA H100", "H100 SXM"),
        ("NVIDIA H100 PCIe 94GB", "NVIDIA H100 PCIe 94GB", "H100 PCIe"),
        ("NVIDIA H200 NVL 141GB", "NVIDIA H200 NVL 141GB", "H200 NVL"),
    ],
)
def test_name_variants(name, product, family):
    entry = gpu_catalog.lookup(product_name=name)
    assert (entry["product"], entry["family"]) == (product, family)


@pytest.mark.parametrize(
    "name",
    [
        # Overlaps: a known name inside an unknown product must not match it.
        "NVIDIA T400",
        "NVIDIA T1000",
        "NVIDIA T4000",
        "NVIDIA RTX A1000",
        "NVIDIA RTX A2000",
        "NVIDIA A100X",
        "NVIDIA L40G",
        "NVIDIA L4000",
        "Quadro RTX 6000",
        "NVIDIA RTX PRO 5000 Blackwell",
        "NVIDIA GeForce RTX 4090",
        "NVIDIA GeForce RTX 5090",
        "Tesla P100-PCIE-16GB",
        "AMD Instinct MI300X",
        "",
        "   ",
    ],
)
def test_unknown_names(name):
    assert gpu_catalog.lookup(product_name=name) is None


@pytest.mark.parametrize(
    ("device_id", "product"),
    [
        (0x2330, "NVIDIA H100 80GB HBM3"),
        ("0x2330", "NVIDIA H100 80GB HBM3"),
        ("2330", "NVIDIA H100 80GB HBM3"),
        # nvidia-smi --query-gpu=pci.device_id: device id, then vendor 10DE.
        ("0x233010DE", "NVIDIA H100 80GB HBM3"),
        ("0x233010de", "NVIDIA H100 80GB HBM3"),
        (0x233010DE, "NVIDIA H100 80GB HBM3"),
        ("233010DE", "NVIDIA H100 80GB HBM3"),
        # lspci -n.
        ("10de:2330", "NVIDIA H100 80GB HBM3"),
        (" 10DE:2330 ", "NVIDIA H100 80GB HBM3"),
        ("0x1DB5", "Tesla V100-SXM2-32GB"),
        ("0x1df6", "Tesla V100S-PCIE-32GB"),
        ("0x1EB8", "Tesla T4"),
        ("0x20B2", "NVIDIA A100-SXM4-80GB"),
        ("0x20B5", "NVIDIA A100 80GB PCIe"),
        ("0x2237", "NVIDIA A10G"),
        ("0x2335", "NVIDIA H200"),
        ("0x233B", "NVIDIA H200 NVL"),
        ("0x2342", "NVIDIA GH200 120GB or NVIDIA GH200 480GB"),
        ("0x26B9", "NVIDIA L40S"),
        ("0x27B8", "NVIDIA L4"),
        ("0x2901", "NVIDIA B200"),
        ("0x2909", "NVIDIA B200"),
        ("0x2941", "NVIDIA GB200"),
        (0x3182, "NVIDIA B300 SXM6 AC"),
        ("0x31C3", "NVIDIA GB300"),
        ("0x2BB4", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"),
    ],
)
def test_pci_device_ids(device_id, product):
    assert gpu_catalog.lookup(pci_device_id=device_id)["product"] == product


def test_a_device_id_two_boards_share():
    entry = gpu_catalog.lookup(pci_device_id="0x25B610DE")
    assert (entry["product"], entry["family"], entry["architecture"]) == (
        "NVIDIA A16 or NVIDIA A2",
        "A16 or A2",
        "ampere",
    )
    # nvidia-smi's name picks the board.
    assert gpu_catalog.lookup("NVIDIA A2", "0x25B610DE")["family"] == "A2"
    assert gpu_catalog.lookup("NVIDIA A16", "0x25B610DE")["family"] == "A16"


def test_the_device_id_wins_over_the_name():
    entry = gpu_catalog.lookup("NVIDIA A100-SXM4-80GB", "0x233010DE")
    assert (entry["product"], entry["architecture"]) == ("NVIDIA H100 80GB HBM3", "hopper")
    # A variant name of the id's family is kept: it is what nvidia-smi said.
    assert gpu_catalog.lookup("Tesla V100-SXM2-16GB-LS", "0x1DB110DE")["product"] == "Tesla V100-SXM2-16GB-LS"


def test_an_unknown_device_id_falls_back_to_the_name():
    assert gpu_catalog.lookup("NVIDIA L40S", "0x0000")["family"] == "L40S"


@pytest.mark.parametrize("device_id", ["0x1234", 0x1234, "10de:0001", None, "", "not-an-id", True, 3.5])
def test_unknown_device_ids(device_id):
    assert gpu_catalog.lookup(pci_device_id=device_id) is None


@pytest.mark.parametrize(
    ("value", "device"),
    [
        (0x2330, 0x2330),
        (0, 0),
        (0xFFFF, 0xFFFF),
        (0x233010DE, 0x2330),
        ("2330", 0x2330),
        ("0x2330", 0x2330),
        ("0X2330", 0x2330),
        ("0x233010DE", 0x2330),
        ("233010de", 0x2330),
        ("10de:2330", 0x2330),
        ("1db5", 0x1DB5),
        # A string of 8 hex digits is nvidia-smi's form only with vendor 10DE.
        ("0x23301000", None),
        ("0x12345", None),
        (0x12345, None),
        (-1, None),
        ("", None),
        ("0x", None),
        ("10de:", None),
        ("H100", None),
        (True, None),
        (None, None),
        (2330.0, None),
    ],
)
def test_device_id(value, device):
    assert gpu_catalog._device_id(value) == device


@pytest.mark.parametrize(
    ("value", "architecture"),
    [
        # A string is a name first: A100 is valid hex but names the A100.
        ("A100", "ampere"),
        ("A10", "ampere"),
        ("2330", "hopper"),
        ("0x2901", "blackwell"),
        (0x1DB5, "volta"),
        ("NVIDIA L40S", "ada"),
    ],
)
def test_identify(value, architecture):
    assert gpu_catalog.identify(value)["architecture"] == architecture


@pytest.mark.parametrize("value", ["NVIDIA Foo", 2330, "0x1234", None, True, ["NVIDIA H100"], 12.8])
def test_identify_unknown(value):
    assert gpu_catalog.identify(value) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NVIDIA Foo", f"'NVIDIA Foo' is not a product name in the GPU catalog; {EXTEND}"),
        ("0x1234", f"PCI device id 0x1234 ('0x1234') is not in the GPU catalog; {EXTEND}"),
        ("0x123410DE", f"PCI device id 0x1234 ('0x123410DE') is not in the GPU catalog; {EXTEND}"),
        ("1234", f"'1234' is neither a product name nor a PCI device id in the GPU catalog; {EXTEND}"),
        (0x1234, f"PCI device id 0x1234 is not in the GPU catalog; {EXTEND}"),
        (
            2330,
            "PCI device id 0x091a is not in the GPU catalog (an unquoted 2330 in YAML is a decimal number; "
            f"write '2330' or 0x2330 for the hex id); {EXTEND}",
        ),
        (0x12345, "74565 is not a PCI device id (0 to 0xffff, or nvidia-smi's 0xDDDD10DE)"),
        (None, "expected a product name or a PCI device id, got NoneType"),
        (True, "expected a product name or a PCI device id, got bool"),
    ],
)
def test_unknown_gpu_says_what_and_how_to_extend(value, message):
    assert gpu_catalog.unknown_gpu(value) == message


def test_entries_are_copies():
    gpu_catalog.lookup(product_name="NVIDIA B200")["pci_device_ids"].append("0xdead")
    assert gpu_catalog.lookup(product_name="NVIDIA B200")["pci_device_ids"] == ["0x2901", "0x2909"]


def test_last_driver_branch():
    assert gpu_catalog.lookup(product_name="Tesla V100-SXM2-32GB")["last_driver_branch"] == "580"
    assert gpu_catalog.lookup(product_name="Tesla T4")["last_driver_branch"] is None


def test_every_family_has_a_device_and_every_device_a_family():
    families = [row[0] for row in gpu_catalog.FAMILIES]
    assert len(families) == len(set(families))
    assert {family for _id, _name, family in gpu_catalog.DEVICES} == set(families)


def test_devices_are_unique_16_bit_ids():
    rows = [(device, name) for device, name, _family in gpu_catalog.DEVICES]
    assert len(rows) == len(set(rows))
    assert all(0 <= device <= 0xFFFF for device, _name in rows)


def test_architectures_are_the_inventory_contracts():
    # The hardware profiles name gpu.architecture from the same set.
    assert {row[1] for row in gpu_catalog.FAMILIES} <= set(ARCHITECTURES)


@pytest.mark.parametrize("row", gpu_catalog.FAMILIES, ids=lambda row: row[0])
def test_open_modules_follow_nvidias_rule(row):
    family, architecture, capability, open_modules, _pattern = row
    # Proprietary only before Turing; open only on Blackwell and Grace Hopper;
    # either from Turing on.
    if architecture == "volta":
        assert open_modules == "unsupported"
    elif architecture == "blackwell" or family == "GH200":
        assert open_modules == "required"
    else:
        assert open_modules == "supported"
    majors = {"volta": "7", "turing": "7", "ampere": "8", "ada": "8", "hopper": "9", "blackwell": ("10", "12")}
    assert capability.split(".")[0] in majors[architecture]


def test_boards_sharing_a_device_id_agree():
    by_id = {}
    for device, _name, family in gpu_catalog.DEVICES:
        by_id.setdefault(device, set()).add(gpu_catalog._FAMILY[family][1:4])
    assert all(len(facts) == 1 for facts in by_id.values())


@pytest.mark.parametrize(
    ("version", "toolkit", "minor"),
    [
        ("12.8", "570.26", "525.60.13"),
        ("12.8 GA", "570.26", "525.60.13"),
        ("12.8.0", "570.26", "525.60.13"),
        ("12.8 Update 1", "570.124.06", "525.60.13"),
        ("12.8.1", "570.124.06", "525.60.13"),
        ("12.4", "550.54.14", "525.60.13"),
        ("12.4 Update 1", "550.54.15", "525.60.13"),
        ("12.4.1", "550.54.15", "525.60.13"),
        ("CUDA 12.4 Update 1", "550.54.15", "525.60.13"),
        ("cuda  12.4  update 1 ", "550.54.15", "525.60.13"),
        # An unquoted 12.4 in YAML is a float.
        (12.4, "550.54.14", "525.60.13"),
        ("12.0", "525.60.13", "525.60.13"),
        ("12.2 Update 2", "535.104.05", "525.60.13"),
        ("12.6.3", "560.35.05", "525.60.13"),
        ("12.9 Update 1", "575.57.08", "525.60.13"),
        ("11.0", "450.51.05", "450.80.02"),
        ("11.0 GA", "450.51.05", "450.80.02"),
        ("11.0.2", "450.51.05", "450.80.02"),
        ("11.0 RC", "450.36.06", "450.80.02"),
        ("11.0.1", "450.36.06", "450.80.02"),
        ("11.0 Update 1", "450.51.06", "450.80.02"),
        ("11.0.3", "450.51.06", "450.80.02"),
        ("11.1.1", "455.32", "450.80.02"),
        ("11.4 Update 4", "470.82.01", "450.80.02"),
        ("11.8", "520.61.05", "450.80.02"),
        ("13.0", "580.65.06", "580"),
        ("13.0 Update 2", "580.95.05", "580"),
        ("13.1 Update 1", "590.48.01", "580"),
        ("13.2 Update 2", "595.71.05", "580"),
        ("13.3", "610.43.02", "580"),
        ("13.3.1", "610.43.02", "580"),
        # From 13.4 NVIDIA gives the branch only; 13.4 GA is 13.4.1.
        ("13.4", "615", "580"),
        ("13.4.1", "615", "580"),
        ("13.4 Update 1", "615", "580"),
        ("13.4.2", "615", "580"),
    ],
)
def test_cuda_min_driver(version, toolkit, minor):
    assert gpu_catalog.cuda_min_driver(version) == toolkit
    assert gpu_catalog.cuda_min_driver(version, "toolkit") == toolkit
    assert gpu_catalog.cuda_min_driver(version, "minor") == minor


@pytest.mark.parametrize(("label", "number", "driver"), gpu_catalog.TOOLKIT_DRIVERS)
def test_every_release_is_found_by_name_and_by_number(label, number, driver):
    assert gpu_catalog.cuda_min_driver(label) == driver
    assert gpu_catalog.cuda_min_driver(number) == driver


def test_toolkit_drivers_never_go_backwards():
    # Newest first, as NVIDIA prints the table; a typo would break the order.
    releases = [
        tuple(int(part) for part in number.split(".")) for _label, number, _driver in gpu_catalog.TOOLKIT_DRIVERS
    ]
    assert releases == sorted(releases, reverse=True)
    drivers = [gpu_catalog.driver_version_key(driver) for _label, _number, driver in gpu_catalog.TOOLKIT_DRIVERS]
    assert drivers == sorted(drivers, reverse=True)


KNOWN_RANGE = "known: CUDA 11.0 RC (11.0.1) to 13.4 Update 1 (13.4.2)"
NOT_A_VERSION = "is not of the form 12.8, 12.8 GA, 12.8 Update 1 or 12.8.1 (major.minor means the GA release)"


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("12.7", f"CUDA '12.7' is not in NVIDIA's table of toolkit driver versions; {KNOWN_RANGE}"),
        ("13.5", f"CUDA '13.5' is not in NVIDIA's table of toolkit driver versions; {KNOWN_RANGE}"),
        ("10.2", f"CUDA '10.2' is not in NVIDIA's table of toolkit driver versions; {KNOWN_RANGE}"),
        (
            "12.3.2",
            "CUDA '12.3.2' is not in NVIDIA's table of toolkit driver versions; "
            "known 12.3 releases: 12.3 GA (12.3.0), 12.3 Update 1 (12.3.1)",
        ),
        (
            "12.4 Update 2",
            "CUDA '12.4 Update 2' is not in NVIDIA's table of toolkit driver versions; "
            "known 12.4 releases: 12.4 GA (12.4.0), 12.4 Update 1 (12.4.1)",
        ),
        # 13.4.0 was a developer preview, not in the table.
        (
            "13.4.0",
            "CUDA '13.4.0' is not in NVIDIA's table of toolkit driver versions; "
            "known 13.4 releases: 13.4 GA (13.4.1), 13.4 Update 1 (13.4.2)",
        ),
        ("12", f"CUDA version '12' {NOT_A_VERSION}"),
        (12, f"CUDA version 12 {NOT_A_VERSION}"),
        ("12.x", f"CUDA version '12.x' {NOT_A_VERSION}"),
        ("12.8.1 Update 1", f"CUDA version '12.8.1 Update 1' {NOT_A_VERSION}"),
        ("", f"CUDA version '' {NOT_A_VERSION}"),
        (None, "CUDA version must be a string such as '12.8', got NoneType"),
        (True, "CUDA version must be a string such as '12.8', got bool"),
        (["12.8"], "CUDA version must be a string such as '12.8', got list"),
    ],
)
def test_cuda_min_driver_errors(version, message):
    with pytest.raises(ValueError) as caught:
        gpu_catalog.cuda_min_driver(version)
    assert str(caught.value) == message


def test_minor_compatibility_needs_only_the_major_family():
    # Minor version compatibility covers a whole major family, release table or not.
    assert gpu_catalog.cuda_min_driver("12.3.2", "minor") == "525.60.13"
    with pytest.raises(
        ValueError, match=r"^CUDA 10.2 has no minor version compatibility minimum; known: 11.x, 12.x, 13.x$"
    ):
        gpu_catalog.cuda_min_driver("10.2", "minor")


def test_compatibility_must_be_toolkit_or_minor():
    with pytest.raises(ValueError, match=r"^compatibility must be one of toolkit, minor, got 'forward'$"):
        gpu_catalog.cuda_min_driver("12.8", "forward")


@pytest.mark.parametrize(
    ("installed", "minimum", "ok"),
    [
        ("550.54.15", "535.274.02", True),
        ("535.274.02", "550.54.15", False),
        ("570.124.06", "570.26", True),
        ("570.26", "570.124.06", False),
        ("570.26", "570.26", True),
        ("615.71.09", "615", True),
        ("610.43.02", "615", False),
        ("580", "580.65.06", False),
        ("580.65.06", "580", True),
    ],
)
def test_driver_at_least(installed, minimum, ok):
    assert gpu_catalog.driver_at_least(installed, minimum) is ok


@pytest.mark.parametrize("version", ["R550", "550.54.15-1", "", "550..54", None])
def test_driver_version_key_refuses_other_strings(version):
    with pytest.raises(ValueError, match=r"is not an NVIDIA driver version such as 550.54.15$"):
        gpu_catalog.driver_version_key(version)


def test_ansibles_version_test_orders_the_table_as_we_do():
    # The filter docs tell roles to compare with the version test (LooseVersion).
    drivers = sorted({driver for _label, _number, driver in gpu_catalog.TOOLKIT_DRIVERS} | {"535.274.02", "615.71.09"})
    for older, newer in itertools.permutations(drivers, 2):
        assert gpu_catalog.driver_at_least(older, newer) == (LooseVersion(older) >= LooseVersion(newer))
