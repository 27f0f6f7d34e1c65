# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA Xid codes and the kernel-log events without one, kept as data.

Python rather than YAML so it ships to the managed node with the module.

What comes from NVIDIA, copied as NVIDIA writes it: the mnemonic, the
description (``meaning``) and the two resolution buckets (``nvidia_action``:
immediate and investigatory) of NVIDIA's Xid catalog for Ampere and newer
GPUs. See SOURCES["nvidia_xid_catalog"] for where and how it was read.

What is this collection's, derived from that data by the rules below:

- ``severity``, from NVIDIA's immediate bucket (BUCKET_SEVERITY): one scale
  for every event so a play can stop on "critical" without knowing Xids.
- ``category``, a grouping of NVIDIA's mnemonic and description (CATEGORIES).
- ``action``, what the operator does, in words: NVIDIA's buckets spelled out
  (BUCKET_ACTIONS), with the entry's own text where NVIDIA names a workflow.

An Xid the issue asked for that NVIDIA's catalog lists as "Unused" for
Ampere and newer GPUs is kept with ``documented: False`` and meaning and
action saying so, never a guessed meaning.
"""

from __future__ import annotations

SOURCES = {
    "nvidia_xid_catalog": (
        "NVIDIA, Xid Errors: 'Analyzing Xid Errors with the Xid Catalog', "
        "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, and the spreadsheet it links "
        "(Xid-Catalog.xlsx, sheets 'Xids' and 'Xid 144-150 Decode'): code, mnemonic, description, resolution "
        "bucket (immediate action), resolution bucket (investigatory action); a line break inside one of NVIDIA's "
        "cells is written here as a space (' / ' between the two halves of Xid 45's investigatory bucket). Read "
        "through the machine-readable copy generated from that page by leptonai/gpud, "
        "components/accelerator/nvidia/xid/catalog_generated.go "
        "at commit 73e270e3e0fd490ec5c33e144ad894de7d6c4d21 ('Generated at 2025-10-29T00:35:32Z'); rows 1 to 13 "
        "were compared with the page itself and agree."
    ),
    "nvidia_xid_introduction": (
        "NVIDIA, Xid Errors: Introduction, https://docs.nvidia.com/deploy/xid-errors/introduction.html: an Xid "
        "message is an error report printed by the driver to the kernel log; it can mean a hardware, NVIDIA "
        "software or user application problem, and is a starting point for investigation."
    ),
    "nvidia_page_retirement": (
        "NVIDIA, Dynamic Page Retirement: Visibility, "
        "https://docs.nvidia.com/deploy/dynamic-page-retirement/visibility.html: Xid 48 (a DBE has occurred), "
        "Xid 63 (a page has successfully been retired), Xid 64 (a page has failed retirement)."
    ),
    "nvidia_nvlink_workflow": (
        "NVIDIA's WORKFLOW_NVLINK_ERR for Xid 74 (decode the register fields of the message; bits name ignorable, "
        "sympathetic, ECC/parity, mechanical or signal-integrity causes), as quoted from the public Xid "
        "documentation in NVIDIA/NVSentinel issue #364, https://github.com/NVIDIA/NVSentinel/issues/364."
    ),
    "nvsentinel_fallen_off_bus": (
        "NVIDIA/NVSentinel, health-monitors/syslog-health-monitor/pkg/gpufallen (commit "
        "1275b0c3056758f30326b162f6a1b27dc10a867c) and issue #155: 'NVRM: The NVIDIA GPU <bdf> ... has fallen "
        "off the bus and is not responding to commands' without an Xid is reported as fatal, recommended action "
        "RESTART_BM, the same as Xid 79."
    ),
    "gsp_timeout_reports": (
        "GSP RPC timeouts printed without an Xid line next to them: NVIDIA/open-gpu-kernel-modules issues #446 "
        "('Timeout waiting for RPC from GSP!'), #1230 (_kgspIsHeartbeatTimedOut, _kgspLogRpcTimeout 'GSP "
        "Timeout' on GH100) and #1080 ('_kgspRpcRecvPoll: GSP RM heartbeat timed out', then Xid 109, 8, 154). "
        "NVIDIA's catalog gives such timeouts Xid 119 (GSP_RPC_TIMEOUT)."
    ),
}

# Ordered mildest first; "unknown" is outside the scale (an Xid not in the catalog, or one NVIDIA does not document).
SEVERITIES = ("info", "warning", "error", "critical")
UNKNOWN = "unknown"
SEVERITY_MEANING = {
    "info": "Nothing to do; recorded for the GPU's history (NVIDIA: IGNORE, then IGNORE).",
    "warning": "The GPU keeps working; watch it, act if the event recurs or other Xids come with it.",
    "error": "The application or job on the GPU failed; the GPU itself needs no repair.",
    "critical": "The GPU or node cannot be trusted until it is reset, rebooted or repaired.",
    UNKNOWN: "Not in this catalog, or not documented by NVIDIA for Ampere and newer GPUs.",
}

CATEGORIES = {
    "application": "A fault of the program using the GPU (bad address, bad instruction, killed channel).",
    "driver": "The driver or its scheduling (timeouts, recovery bookkeeping).",
    "firmware": "GSP or another on-GPU microcontroller stopped answering or faulted.",
    "memory": "GPU memory: ECC errors, row remapping, contained and uncontained errors.",
    "engine": "A fixed-function engine (video decode/encode, optical flow) raised an exception.",
    "nvlink": "NVLink links, their training and their errors.",
    "bus": "PCIe: the GPU is no longer reachable.",
    "hardware": "Other board hardware (InfoROM, initialisation).",
    UNKNOWN: "Not in this catalog, or not documented by NVIDIA.",
}

# NVIDIA's immediate resolution bucket -> this collection's severity.
BUCKET_SEVERITY = {
    "IGNORE": "warning",  # "info" when the investigatory bucket is IGNORE too
    "XID_154": "info",
    "WORKFLOW_XID_45": "warning",
    "RESTART_APP": "error",
    "CONTACT_SUPPORT": "error",
    "RESET_GPU": "critical",
    "RESTART_BM": "critical",
    "WORKFLOW_XID_48": "critical",
    "WORKFLOW_NVLINK_ERR": "critical",
    "WORKFLOW_NVLINK5_ERR": "critical",
}

# NVIDIA's immediate resolution buckets in an operator's words.
BUCKET_ACTIONS = {
    "IGNORE": "No immediate action. If it recurs on the same GPU, collect nvidia-bug-report.sh and contact support.",
    "RESTART_APP": "Restart the application or job; the GPU needs no action.",
    "CONTACT_SUPPORT": "Collect nvidia-bug-report.sh output and contact NVIDIA support.",
    "RESET_GPU": (
        "Drain the GPU (stop its jobs), then reset it (nvidia-smi -r -i <gpu>, or reboot the node). "
        "If it recurs, run DCGM diagnostics and contact support."
    ),
    "RESTART_BM": (
        "Drain the node and reboot it (power-cycle if the GPU is still missing). If it recurs, check the GPU's "
        "seating, riser and power, run field diagnostics and contact support for an RMA."
    ),
}

_INVESTIGATE = "Investigatory bucket: "


def _entry(xid, mnemonic, meaning, immediate, investigatory, category, action=None):
    quiet = immediate == "IGNORE" and investigatory.startswith("IGNORE")
    severity = "info" if quiet else BUCKET_SEVERITY[immediate]
    return {
        "xid": xid,
        "mnemonic": mnemonic,
        "meaning": meaning,
        "category": category,
        "severity": severity,
        "action": action or BUCKET_ACTIONS[immediate],
        "nvidia_action": {"immediate": immediate, "investigatory": investigatory},
        "documented": True,
        "source": "nvidia_xid_catalog",
    }


def _unused(xid, mnemonic):
    return {
        "xid": xid,
        "mnemonic": mnemonic,
        "meaning": (
            f"Not documented: NVIDIA's Xid catalog lists {xid} ({mnemonic}) as 'Unused' for Ampere and newer GPUs."
        ),
        "category": UNKNOWN,
        "severity": UNKNOWN,
        "action": (
            "NVIDIA documents no meaning for this code on current GPUs (its bucket is CONTACT_SUPPORT): collect "
            "nvidia-bug-report.sh output and contact NVIDIA support."
        ),
        "nvidia_action": {"immediate": "CONTACT_SUPPORT", "investigatory": ""},
        "documented": False,
        "source": "nvidia_xid_catalog",
    }


_NVLINK5 = (
    "Follow NVIDIA's WORKFLOW_NVLINK5_ERR: decode the message's unit, Fatal/Nonfatal flag and register fields "
    "with the catalog's 'Xid 144-150 Decode' sheet. Fatal: drain and reset the GPU; Nonfatal: watch the link. "
    "Recurring on one link: check the NVLink cabling or tray and contact support."
)

XIDS = {
    e["xid"]: e
    for e in (
        _entry(
            8,
            "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT",
            "GPU stopped processing",
            "RESTART_APP",
            "CONTACT_SUPPORT",
            "application",
        ),
        _entry(
            13,
            "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY",
            "Graphics Engine Exception",
            "RESTART_APP",
            "WORKFLOW_XID_13",
            "application",
            "Restart the application; debug it (out-of-bounds access, illegal instruction). If Xid 13 repeats "
            "on the same GPC/TPC across jobs, run DCGM diagnostics (NVIDIA's WORKFLOW_XID_13): it may be "
            "hardware.",
        ),
        _entry(
            31,
            "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT",
            "GPU memory page fault",
            "RESTART_APP",
            "WORKFLOW_XID_31",
            "application",
            "Restart the application and debug its memory accesses (illegal address). If it follows a driver "
            "or system change with an unchanged application, report it to NVIDIA (WORKFLOW_XID_31).",
        ),
        _entry(
            32,
            "ROBUST_CHANNEL_PBDMA_ERROR",
            "Invalid or corrupted push buffer stream",
            "RESTART_APP",
            "CHECK_APP/CUDA",
            "application",
        ),
        _entry(
            43,
            "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR",
            "GPU stopped processing",
            "IGNORE",
            "CONTACT_SUPPORT",
            "application",
            "No action on the GPU: the application's channel was stopped (check the application that owned "
            "it). If it recurs with healthy applications, contact support.",
        ),
        _entry(
            45,
            "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
            "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda "
            "applications and hitting a DBE",
            "WORKFLOW_XID_45",
            "Solo: RESTART_FM / Not Solo: IGNORE (follow other Xid)",
            "application",
            "Follow the Xid that came before it on the same GPU (the message often names it). Seen alone: "
            "NVIDIA's bucket is RESTART_FM.",
        ),
        _entry(
            46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "RESET_GPU", "CONTACT_SUPPORT", "driver"
        ),
        _entry(
            48,
            "ROBUST_CHANNEL_GPU_ECC_DBE",
            "Double Bit ECC Error",
            "WORKFLOW_XID_48",
            "WORKFLOW_XID_48",
            "memory",
            "Drain the GPU and reset it so the bad row is remapped or the page retired (NVIDIA's "
            "WORKFLOW_XID_48); check nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT. DBEs again on the same "
            "GPU, or a remapping failure (Xid 64): drain and RMA.",
        ),
        _unused(61, "PMU_BREAKPOINT"),
        _entry(
            62,
            "PMU_HALT_ERROR",
            "Internal micro-controller halt (newer drivers)",
            "RESET_GPU",
            "CONTACT_SUPPORT",
            "firmware",
        ),
        _entry(
            63,
            "INFOROM_DRAM_RETIREMENT_EVENT",
            "GPU memory remapping event",
            "IGNORE",
            "IGNORE",
            "memory",
            "No immediate action: a row was marked for remapping, which takes effect at the next GPU reset. "
            "Schedule a reset when the GPU is idle and watch the remapped-row count.",
        ),
        _entry(
            64,
            "INFOROM_DRAM_RETIREMENT_FAILURE",
            "GPU memory remapping failure",
            "RESET_GPU",
            "CONTACT_SUPPORT",
            "memory",
            "Drain the GPU and reset it; the GPU could not remap a bad row. If remapping fails again "
            "(nvidia-smi -q -d ROW_REMAPPER shows a failure), drain and RMA.",
        ),
        _entry(68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", "RESTART_APP", "CONTACT_SUPPORT", "engine"),
        _entry(
            69,
            "ROBUST_CHANNEL_GR_CLASS_ERROR",
            "Graphics Engine class error",
            "RESTART_APP",
            "CHECK_APP/CUDA",
            "application",
        ),
        _entry(
            74,
            "NVLINK_ERROR",
            "NVLINK Error",
            "WORKFLOW_NVLINK_ERR",
            "CONTACT_SUPPORT",
            "nvlink",
            "Drain the GPU and follow NVIDIA's WORKFLOW_NVLINK_ERR: decode the register fields in the message. "
            "Mechanical or signal-integrity bits: reseat or check the NVLink connection and run field "
            "diagnostics; ECC/parity bits more than twice on one link: contact support.",
        ),
        _entry(
            79,
            "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
            "GPU has fallen off the bus",
            "RESTART_BM",
            "CONTACT_SUPPORT",
            "bus",
        ),
        _entry(
            92,
            "EXCESSIVE_SBE_INTERRUPTS",
            "High single-bit ECC error rate",
            "IGNORE",
            "CONTACT_SUPPORT",
            "memory",
            "No immediate action (the errors were corrected). Watch the GPU's corrected-error rate; if it "
            "keeps rising, plan a drain and contact support.",
        ),
        _entry(
            93,
            "INFOROM_ERASE_LIMIT_EXCEEDED",
            "Non-fatal violation of provisioned InfoROM wear limit",
            "IGNORE",
            "CONTACT_SUPPORT",
            "hardware",
        ),
        _entry(
            94,
            "ROBUST_CHANNEL_CONTAINED_ERROR",
            "Contained memory error",
            "RESTART_APP",
            "IGNORE (sympathetic)",
            "memory",
            "Restart the affected application; the error was contained to it. Reset the GPU when idle so the "
            "row is remapped; repeated Xid 94 on one GPU: drain it and check its memory.",
        ),
        _entry(
            95,
            "ROBUST_CHANNEL_UNCONTAINED_ERROR",
            "Uncontained memory error",
            "RESET_GPU",
            "IGNORE (sympathetic)",
            "memory",
            "Drain the GPU (every process on it is affected) and reset it. Recurring: drain and RMA.",
        ),
        _entry(
            109,
            "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR",
            "Context Switch Timeout Error",
            "RESET_GPU",
            "CONTACT_SUPPORT",
            "driver",
        ),
        _entry(110, "SEC_FAULT_ERROR", "Security Fault Error", "RESET_GPU", "INVESTIGATE_SW", "firmware"),
        _entry(
            119,
            "GSP_RPC_TIMEOUT",
            "GSP RPC Timeout",
            "RESET_GPU",
            "INVESTIGATE_SW",
            "firmware",
            "Drain the GPU and reset it (reboot the node if the reset fails). Recurring: check the driver "
            "version against NVIDIA's release notes (investigatory: INVESTIGATE_SW).",
        ),
        _entry(
            120,
            "GSP_ERROR",
            "GSP Error",
            "RESET_GPU",
            "INVESTIGATE_SW",
            "firmware",
            "Drain the GPU and reset it (reboot the node if the reset fails). Recurring: check the driver "
            "version against NVIDIA's release notes (investigatory: INVESTIGATE_SW).",
        ),
        _entry(
            136,
            "ALI_TRAINING_FAIL",
            "Link Training Failed",
            "RESET_GPU",
            "INVESTIGATE_LINK_SI",
            "nvlink",
            "Drain the GPU and reset it. Recurring: check the NVLink connection's signal integrity (reseat, "
            "field diagnostics) and contact support.",
        ),
        _entry(137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", "IGNORE", "XID_137_FLOW", "nvlink"),
        _unused(138, "ROBUST_CHANNEL_DLA_ERROR"),
        _entry(139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", "RESTART_APP", "CONTACT_SUPPORT", "engine"),
        _entry(
            140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", "RESET_GPU", "CONTACT_SUPPORT", "memory"
        ),
        _entry(141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", "IGNORE", "CONTACT_SUPPORT", "driver"),
        _entry(142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", "CONTACT_SUPPORT", "", "engine"),
        _entry(143, "GPU_INIT_ERROR", "GPU Initialization Error", "RESET_GPU", "CONTACT_SUPPORT", "hardware"),
        _entry(
            144,
            "NVLINK_SAW_ERROR",
            "NVLINK: SAW Error",
            "WORKFLOW_NVLINK5_ERR",
            "WORKFLOW_NVLINK5_ERR",
            "nvlink",
            _NVLINK5,
        ),
        _entry(
            145,
            "NVLINK_RLW_ERROR",
            "NVLINK: RLW Error",
            "WORKFLOW_NVLINK5_ERR",
            "WORKFLOW_NVLINK5_ERR",
            "nvlink",
            _NVLINK5,
        ),
        _entry(
            146,
            "NVLINK_TLW_ERROR",
            "NVLINK: TLW Error",
            "WORKFLOW_NVLINK5_ERR",
            "WORKFLOW_NVLINK5_ERR",
            "nvlink",
            _NVLINK5,
        ),
        _entry(
            147,
            "NVLINK_TREX_ERROR",
            "NVLINK: TREX Error",
            "WORKFLOW_NVLINK5_ERR",
            "WORKFLOW_NVLINK5_ERR",
            "nvlink",
            _NVLINK5,
        ),
        _entry(
            148,
            "NVLINK_NVLPW_CTRL_ERROR",
            "NVLINK: NVLPW_CTRL Error",
            "WORKFLOW_NVLINK5_ERR",
            "WORKFLOW_NVLINK5_ERR",
            "nvlink",
            _NVLINK5,
        ),
        _entry(
            149,
            "NVLINK_NETIR_ERROR",
            "NVLINK: NETIR Error",
            "WORKFLOW_NVLINK5_ERR",
            "WORKFLOW_NVLINK5_ERR",
            "nvlink",
            _NVLINK5,
        ),
        _entry(
            150,
            "NVLINK_MSE_ERROR",
            "NVLINK: MSE Error",
            "WORKFLOW_NVLINK5_ERR",
            "WORKFLOW_NVLINK5_ERR",
            "nvlink",
            _NVLINK5,
        ),
        _entry(
            154,
            "GPU_RECOVERY_ACTION_CHANGED",
            "GPU Recovery Action Changed",
            "XID_154",
            "N/A Informational only regarding another Xid",
            "driver",
            "Do what the message says the GPU now needs (for example 'GPU Reset Required': drain and reset "
            "the GPU; 'Node Reboot Required': drain and reboot the node), for the Xid that preceded it.",
        ),
        _entry(
            155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", "RESET_GPU", "INVESTIGATE_SW_USER", "nvlink"
        ),
    )
}

# Kernel-log events that carry no Xid code. Each behaves like the Xid NVIDIA gives the same condition.
EVENTS = {
    "fallen_off_bus": {
        "xid": None,
        "mnemonic": "GPU_FALLEN_OFF_BUS",
        "meaning": (
            "The driver reports the GPU has fallen off the bus without an Xid line (or next to Xid 79): the GPU "
            "no longer answers on PCIe."
        ),
        "category": "bus",
        "severity": "critical",
        "action": BUCKET_ACTIONS["RESTART_BM"],
        "nvidia_action": {"immediate": "RESTART_BM", "investigatory": "CONTACT_SUPPORT"},
        "documented": True,
        "source": "nvsentinel_fallen_off_bus",
    },
    "gsp_rpc_timeout": {
        "xid": None,
        "mnemonic": "GSP_RPC_TIMEOUT",
        "meaning": (
            "The driver timed out waiting for the GSP firmware (RPC response or heartbeat) and printed no Xid "
            "for it; NVIDIA's catalog files such timeouts as Xid 119."
        ),
        "category": "firmware",
        "severity": "critical",
        "action": XIDS[119]["action"],
        "nvidia_action": {"immediate": "RESET_GPU", "investigatory": "INVESTIGATE_SW"},
        "documented": True,
        "source": "gsp_timeout_reports",
    },
}


def lookup(xid):
    """The catalog entry for an Xid number, or an "unknown" entry saying it is not in the catalog."""
    entry = XIDS.get(xid)
    if entry is not None:
        return entry
    return {
        "xid": xid,
        "mnemonic": None,
        "meaning": f"Xid {xid} is not in this collection's catalog; see NVIDIA's Xid catalog.",
        "category": UNKNOWN,
        "severity": UNKNOWN,
        "action": "Look the code up in NVIDIA's Xid catalog; collect nvidia-bug-report.sh output.",
        "nvidia_action": {"immediate": "", "investigatory": ""},
        "documented": False,
        "source": "",
    }


def severity_rank(severity):
    """Position on the scale (higher is worse); -1 for "unknown" and anything off the scale."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        return -1
