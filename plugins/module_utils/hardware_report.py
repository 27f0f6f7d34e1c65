# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's hardware against its profile: what gpu_facts, ib_facts and xid_scan found, judged.

Pure function over the facts modules' results and the inventory's
gpuops_hardware; the hardware_check role turns it into the node's report.
"""

from __future__ import annotations

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
# xid_scan grades events info/warning/error/critical; a report has three grades.
XID_SEVERITY = {"info": "info", "warning": "warning", "error": "error", "critical": "error", "unknown": "warning"}
FAIL_ON = ("error", "warning", "never")


def _problem(severity, source, code, device, message):
    return {"severity": severity, "source": source, "code": code, "device": device, "message": message}


def _gpu_part(expected, gpu):
    if not gpu:
        return None, []
    problems = [
        _problem(f["severity"], "gpu", f["code"], f["device"], f["message"])
        for f in gpu.get("findings", [])
        if f["severity"] != "info"
    ]
    models = sorted({d["name"] for d in gpu.get("devices", [])})
    fabric = sorted({(d.get("fabric") or {}).get("state") or "" for d in gpu.get("devices", [])} - {""})
    part = {
        "count": gpu.get("count", 0),
        "expected_count": expected.get("count"),
        "models": models,
        "expected_model": expected.get("model"),
        "driver_version": gpu.get("driver_version"),
        "cuda_version": gpu.get("cuda_version"),
        "fabric_states": fabric,
        "findings": gpu.get("findings", []),
    }
    return part, problems


def _ib_part(expected, infiniband):
    if not infiniband:
        return None, []
    layer = expected.get("link_layer")
    ports = [p for d in infiniband.get("devices", []) for p in d.get("ports", [])]
    active = [p for p in ports if p.get("state") == "active" and (layer is None or p.get("link_layer") == layer)]
    problems = [
        _problem(f["severity"], "infiniband", f["code"], f.get("device") or "node", f["message"])
        for f in infiniband.get("findings", [])
        if f["severity"] != "info"
    ]
    part = {
        "active_ports": len(active),
        "expected_ports": expected.get("ports"),
        "link_layer": layer,
        "rates_gbps": sorted({p.get("rate_gbps") for p in active if p.get("rate_gbps") is not None}),
        "expected_rate_gbps": expected.get("rate_gbps"),
        "findings": infiniband.get("findings", []),
    }
    return part, problems


def _kernel_log_part(kernel_log):
    if not kernel_log:
        return None, []
    problems = []
    for event in kernel_log.get("events", []):
        severity = XID_SEVERITY.get(event.get("severity"), "warning")
        if severity == "info":
            continue
        code = f"xid_{event['xid']}" if event.get("xid") is not None else event.get("event", "kernel_event")
        what = event.get("meaning") or event.get("message") or ""
        action = f" Action: {event['action']}" if event.get("action") else ""
        where = event.get("pci_bus_id") or "node"
        problems.append(_problem(severity, "kernel_log", code, where, f"{code} on {where}: {what}.{action}"))
    summary = kernel_log.get("summary", {})
    part = {
        "source": kernel_log.get("source"),
        "lines": kernel_log.get("lines"),
        "events": summary.get("events", 0),
        "xid_counts": summary.get("xid_counts", {}),
        "worst_severity": summary.get("worst_severity", "none"),
    }
    return part, problems


def hardware_report(node, hardware, gpu=None, infiniband=None, kernel_log=None, fail_on="error"):
    """The node's report: its parts, the problems found (worst first), whether it passed, and one summary line.

    hardware is the node's gpuops_hardware; gpu the gpu_facts facts, infiniband
    the ib_facts facts, kernel_log xid_scan's result (None where not read).
    fail_on is the lowest severity that fails the node (or never).
    """
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON)}, not {fail_on!r}")
    gpu_part, gpu_problems = _gpu_part(hardware.get("gpu", {}), gpu)
    ib_part, ib_problems = _ib_part(hardware.get("infiniband", {}), infiniband)
    log_part, log_problems = _kernel_log_part(kernel_log)
    problems = sorted(gpu_problems + ib_problems + log_problems, key=lambda p: -SEVERITY_RANK[p["severity"]])
    worst = problems[0]["severity"] if problems else "none"
    passed = fail_on == "never" or not any(SEVERITY_RANK[p["severity"]] >= SEVERITY_RANK[fail_on] for p in problems)
    simulated = next(
        (part.get("simulated") for part in (gpu, infiniband, kernel_log) if part and part.get("simulated")), False
    )
    return {
        "node": node,
        "profile": hardware.get("profile"),
        "simulated": simulated or False,
        "passed": passed,
        "worst_severity": worst,
        "problems": problems,
        "gpu": gpu_part,
        "infiniband": ib_part,
        "kernel_log": log_part,
        "summary": _summary(node, hardware, simulated, gpu_part, ib_part, log_part, problems, passed),
    }


def _summary(node, hardware, simulated, gpu, infiniband, kernel_log, problems, passed):
    parts = []
    if gpu is not None:
        models = ", ".join(gpu["models"]) or "no GPU"
        parts.append(f"{gpu['count']}/{gpu['expected_count']} GPUs ({models}), driver {gpu['driver_version']}")
    if infiniband is not None:
        rates = "/".join(f"{r:g}" for r in infiniband["rates_gbps"]) or "-"
        parts.append(
            f"{infiniband['active_ports']}/{infiniband['expected_ports']} {infiniband['link_layer'] or 'RDMA'} ports "
            f"active at {rates} Gb/s"
        )
    if kernel_log is not None:
        parts.append(f"kernel log ({kernel_log['source']}): {kernel_log['events']} GPU event(s)")
    label = f"[SIMULATED {simulated.get('profile', '')}] " if simulated else ""
    verdict = "passed" if passed else "FAILED"
    counts = {s: sum(1 for p in problems if p["severity"] == s) for s in ("error", "warning")}
    found = f" ({counts['error']} error(s), {counts['warning']} warning(s))" if problems else ""
    return f"{label}{node} ({hardware.get('profile')}): {'; '.join(parts) or 'nothing to check'} - {verdict}{found}"
