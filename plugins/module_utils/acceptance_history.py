# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run against the one before it, from the results directory alone: the runs beside a run's directory, the last
earlier one that checked any of its nodes, and what changed on each node both checked - checks that newly fail and
checks fixed, the verdict, NCCL bus bandwidth down by more than 5 %, firmware (VBIOS, adapter firmware, BIOS)."""

from __future__ import annotations

import json
import math
import os

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance, acceptance_results

# A bus bandwidth this much lower than the last run's is a regression, whatever the gate says.
REGRESSION_PCT = 5.0
NOT_PASSED = ("FAIL", "ERROR")


def runs(results_dir):
    """[(run_id, run directory, run document)] of every run under results_dir, oldest first (by started_at)."""
    found = []
    try:
        names = sorted(os.listdir(results_dir))
    except OSError:
        return []
    for name in names:
        if not acceptance.RUN_ID.fullmatch(name):
            continue
        path = os.path.join(results_dir, name, "run.json")
        try:
            with open(path, encoding="utf-8") as handle:
                run = json.load(handle)
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(run, dict) and run.get("schema") == acceptance_results.RUN_SCHEMA:
            found.append((name, os.path.join(results_dir, name), run))
    return sorted(found, key=lambda item: (str(item[2].get("started_at") or ""), item[0]))


def _names(run):
    return {e.get("node") for e in run.get("nodes") or [] if isinstance(e, dict)}


def previous(run_dir, run):
    """(run_id, run directory) of the last run before this one that checked any of its nodes, or None."""
    here = os.path.basename(os.path.normpath(run_dir))
    started = str(run.get("started_at") or "")
    nodes = _names(run)
    earlier = [(i, d) for i, d, r in runs(os.path.dirname(os.path.normpath(run_dir)))
               if i != here and str(r.get("started_at") or "") < started and _names(r) & nodes]  # fmt: skip
    return earlier[-1] if earlier else None


def finite_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _firmware(document):
    """{what: version} of a node's firmware: each GPU's VBIOS (by serial, else index), each adapter's firmware, the
    BIOS."""
    inventory = document.get("inventory") if isinstance(document.get("inventory"), dict) else {}
    found = {}
    for gpu in inventory.get("gpus") or []:
        if isinstance(gpu, dict) and gpu.get("vbios"):
            found[f"GPU {gpu.get('index')} ({gpu.get('serial') or 'no serial'}) VBIOS"] = str(gpu["vbios"])
    for adapter in inventory.get("rdma_adapters") or []:
        if isinstance(adapter, dict) and adapter.get("firmware"):
            found[f"{adapter.get('name')} firmware"] = str(adapter["firmware"])
    system = inventory.get("system") if isinstance(inventory.get("system"), dict) else {}
    if system.get("bios_version"):
        found["BIOS"] = str(system["bios_version"])
    return found


def _statuses(document):
    return {c.get("id"): c for c in document.get("checks") or [] if isinstance(c, dict)}


def node_changes(before, now):
    """What changed on one node between two of its documents; {} when nothing did."""
    old, new = _statuses(before), _statuses(now)
    changes = {}
    failing = sorted(i for i, c in new.items() if c.get("status") in NOT_PASSED
                     and (old.get(i) or {}).get("status") not in NOT_PASSED)  # fmt: skip
    fixed = sorted(i for i, c in old.items() if c.get("status") in NOT_PASSED
                   and (new.get(i) or {}).get("status") in ("PASS", "WARN"))  # fmt: skip
    if failing:
        changes["new_failures"] = failing
    if fixed:
        changes["fixed"] = fixed
    if before.get("verdict") != now.get("verdict"):
        changes["verdict"] = [before.get("verdict"), now.get("verdict")]
    was, is_now = (old.get("nccl.single_node") or {}).get("value"), (new.get("nccl.single_node") or {}).get("value")
    if finite_number(was) and finite_number(is_now) and was > 0:
        change = (is_now - was) / was * 100
        if change < -REGRESSION_PCT:
            changes["nccl_busbw"] = {"before": was, "now": is_now, "change_pct": round(change, 1)}
    firmware_before, firmware_now = _firmware(before), _firmware(now)
    moved = [{"what": k, "before": firmware_before[k], "now": v} for k, v in sorted(firmware_now.items())
             if k in firmware_before and firmware_before[k] != v]  # fmt: skip
    if moved:
        changes["firmware"] = moved
    return changes


def compare(before_run, before_nodes, run, nodes):
    """{previous: its run id, nodes: {node: node_changes}} over the nodes both runs have documents of."""
    earlier = {e.get("node"): d for e, d in zip(before_run.get("nodes") or [], before_nodes)
               if isinstance(d, dict)}  # fmt: skip
    changed = {}
    for entry, document in zip(run.get("nodes") or [], nodes):
        name = entry.get("node")
        if isinstance(document, dict) and name in earlier:
            found = node_changes(earlier[name], document)
            if found:
                changed[name] = found
    common = sorted(set(earlier) & {e.get("node") for e in run.get("nodes") or []})
    return {"previous": before_run.get("run_id"), "started_at": before_run.get("started_at"), "common": common,
            "nodes": changed}  # fmt: skip
