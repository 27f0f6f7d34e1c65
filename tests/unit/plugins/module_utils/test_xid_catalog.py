"""The Xid catalog: coverage of the Xids the issue names, complete entries, and spot checks against NVIDIA's table."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import xid_catalog

# The Xids the xid_scan issue asks the catalog to cover.
REQUIRED = [13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 74, 79, 92, 93, 94, 95, 109, 119, 120, *range(136, 150)]
# Of those, the codes NVIDIA's catalog lists as "Unused" for Ampere and newer GPUs.
UNDOCUMENTED = [61, 138]
FIELDS = {
    "xid",
    "mnemonic",
    "meaning",
    "category",
    "severity",
    "action",
    "nvidia_action",
    "documented",
    "source",
}
ENTRIES = [*xid_catalog.XIDS.values(), *xid_catalog.EVENTS.values()]
IDS = [str(e["xid"]) for e in xid_catalog.XIDS.values()] + list(xid_catalog.EVENTS)


@pytest.mark.parametrize("code", REQUIRED)
def test_required_xid_is_in_the_catalog(code):
    entry = xid_catalog.XIDS[code]
    assert entry["xid"] == code
    if code in UNDOCUMENTED:
        assert entry["documented"] is False
        assert entry["meaning"].startswith("Not documented")
    else:
        assert entry["documented"] is True


def test_only_the_unused_codes_are_undocumented():
    assert sorted(c for c, e in xid_catalog.XIDS.items() if not e["documented"]) == UNDOCUMENTED


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_entry_is_complete(entry):
    assert set(entry) == FIELDS
    assert entry["mnemonic"] and entry["mnemonic"] == entry["mnemonic"].upper()
    assert entry["meaning"].strip() and entry["action"].strip()
    assert entry["category"] in xid_catalog.CATEGORIES
    assert entry["severity"] in (*xid_catalog.SEVERITIES, xid_catalog.UNKNOWN)
    assert entry["source"] in xid_catalog.SOURCES
    assert set(entry["nvidia_action"]) == {"immediate", "investigatory"}
    assert entry["nvidia_action"]["immediate"]
    # "unknown" is for what NVIDIA does not document, and only for that.
    assert (entry["severity"] == xid_catalog.UNKNOWN) == (not entry["documented"])
    assert (entry["category"] == xid_catalog.UNKNOWN) == (not entry["documented"])


DOCUMENTED = [e for e in xid_catalog.XIDS.values() if e["documented"]]


@pytest.mark.parametrize("entry", DOCUMENTED, ids=[str(e["xid"]) for e in DOCUMENTED])
def test_severity_follows_nvidia_immediate_bucket(entry):
    immediate, investigatory = entry["nvidia_action"]["immediate"], entry["nvidia_action"]["investigatory"]
    quiet = immediate == "IGNORE" and investigatory.startswith("IGNORE")
    assert entry["severity"] == ("info" if quiet else xid_catalog.BUCKET_SEVERITY[immediate])


def test_every_category_and_severity_is_defined():
    assert set(xid_catalog.SEVERITY_MEANING) == {*xid_catalog.SEVERITIES, xid_catalog.UNKNOWN}
    used = {e["category"] for e in ENTRIES}
    assert used == set(xid_catalog.CATEGORIES), "a category nobody uses, or one without a definition"


# Rows of NVIDIA's Xid catalog (Ampere and newer): code, mnemonic, description, immediate, investigatory bucket.
NVIDIA_ROWS = [
    (13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", "Graphics Engine Exception",
     "RESTART_APP", "WORKFLOW_XID_13"),
    (31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", "RESTART_APP", "WORKFLOW_XID_31"),
    (43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", "IGNORE", "CONTACT_SUPPORT"),
    (48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", "WORKFLOW_XID_48", "WORKFLOW_XID_48"),
    (63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", "IGNORE", "IGNORE"),
    (64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", "RESET_GPU", "CONTACT_SUPPORT"),
    (74, "NVLINK_ERROR", "NVLINK Error", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT"),
    (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", "RESTART_BM", "CONTACT_SUPPORT"),
    (94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", "RESTART_APP", "IGNORE (sympathetic)"),
    (95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", "RESET_GPU", "IGNORE (sympathetic)"),
    (119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", "RESET_GPU", "INVESTIGATE_SW"),
    (120, "GSP_ERROR", "GSP Error", "RESET_GPU", "INVESTIGATE_SW"),
    (136, "ALI_TRAINING_FAIL", "Link Training Failed", "RESET_GPU", "INVESTIGATE_LINK_SI"),
    (149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "mnemonic", "meaning", "immediate", "investigatory"), NVIDIA_ROWS)
def test_matches_nvidia_catalog(code, mnemonic, meaning, immediate, investigatory):
    entry = xid_catalog.XIDS[code]
    assert (entry["mnemonic"], entry["meaning"]) == (mnemonic, meaning)
    assert entry["nvidia_action"] == {"immediate": immediate, "investigatory": investigatory}


@pytest.mark.parametrize(
    ("code", "category", "severity"),
    [
        (13, "application", "error"),
        (31, "application", "error"),
        (43, "application", "warning"),
        (45, "application", "warning"),
        (48, "memory", "critical"),
        (63, "memory", "info"),
        (74, "nvlink", "critical"),
        (79, "bus", "critical"),
        (92, "memory", "warning"),
        (94, "memory", "error"),
        (95, "memory", "critical"),
        (119, "firmware", "critical"),
        (137, "nvlink", "warning"),
    ],
)
def test_category_and_severity(code, category, severity):
    entry = xid_catalog.XIDS[code]
    assert (entry["category"], entry["severity"]) == (category, severity)


def test_events_without_xid_act_like_their_xid():
    assert xid_catalog.EVENTS["fallen_off_bus"]["action"] == xid_catalog.XIDS[79]["action"]
    assert xid_catalog.EVENTS["gsp_rpc_timeout"]["action"] == xid_catalog.XIDS[119]["action"]


def test_lookup_of_an_uncatalogued_code():
    entry = xid_catalog.lookup(3)
    assert (entry["xid"], entry["severity"], entry["category"], entry["documented"]) == (3, "unknown", "unknown", False)
    assert "not in this collection's catalog" in entry["meaning"]


@pytest.mark.parametrize(
    ("severity", "rank"), [("info", 0), ("warning", 1), ("error", 2), ("critical", 3), ("unknown", -1), ("x", -1)]
)
def test_severity_rank(severity, rank):
    assert xid_catalog.severity_rank(severity) == rank
