# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The handover reports of one acceptance run, made from its results directory alone (run.json and the nodes'
documents it names; no node is read again): JUnit XML for CI, a Markdown summary for tickets, the inventory as CSV
for asset management, and one self-contained HTML file for people (no asset from elsewhere, no script).

Controller-side only (Jinja2): the acceptance stage calls write_reports after its run document, playbooks/report.yml
for a results directory copied from anywhere.

Everything in a results document came from a node and may be hostile: the HTML escapes it (Jinja2 autoescape), the
XML drops the characters XML 1.0 cannot hold, the CSV defuses cells a spreadsheet would run as a formula, and the
Markdown escapes its table syntax.
"""

from __future__ import annotations

import csv
import html as html_text
import io
import json
import math
import os
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    acceptance,
    acceptance_history,
    acceptance_results,
    nvidia_smi,
    parsing,
)

REPORTS = {"html": "report.html", "junit": "junit.xml", "markdown": "summary.md", "csv": "inventory.csv"}
# Beside the runs, in the results directory: every run, newest first, with a link to its report.
INDEX = "index.html"
INDEX_TEMPLATE = Path(__file__).with_name("acceptance_report_index.html.j2")
TEMPLATE = Path(__file__).with_name("acceptance_report.html.j2")
VERDICTS = ("accepted", "rejected", "incomplete")
# A value longer than this is cut in the reports (the node's document keeps it whole).
VALUE_LIMIT = 300
# Characters XML 1.0 cannot hold (C0 controls but tab, newline, carriage return; surrogates; U+FFFE, U+FFFF).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# A spreadsheet runs a cell beginning with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CSV_COLUMNS = ("host", "rack", "profile", "component", "index", "model", "serial", "uuid", "firmware", "psid",
               "pci_bus_id")  # fmt: skip


class ReportError(Exception):
    """The results directory holds no run the reports can be made from."""


def _read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def load(run_dir):
    """(run document, [node document or None for each of its nodes, in the run's order]) of a run directory."""
    path = os.path.join(run_dir, "run.json")
    try:
        run = _read_json(path)
    except OSError as error:
        raise ReportError(f"{path} cannot be read ({error.strerror}): give the directory of one run, "
                          "<results_dir>/<run id>") from None  # fmt: skip
    except (ValueError, RecursionError) as error:
        raise ReportError(f"{path} is not JSON ({error})") from None
    if not isinstance(run, dict) or run.get("schema") != acceptance_results.RUN_SCHEMA:
        raise ReportError(f"{path} is no acceptance run document (no schema {acceptance_results.RUN_SCHEMA})")
    # A copied directory may hold anything: what has not the document's shape reads as absent.
    for key in ("totals", "racks", "collection", "tools"):
        run[key] = run.get(key) if isinstance(run.get(key), dict) else {}
    entries = run.get("nodes") if isinstance(run.get("nodes"), list) else []
    run["nodes"] = [e for e in entries if isinstance(e, dict) and isinstance(e.get("node"), str)]
    nodes = []
    for entry in run["nodes"]:
        document = None
        results = entry.get("results")
        # Only a path inside the run directory: the document names it, and a copied directory may be hostile.
        if isinstance(results, str) and re.fullmatch(r"nodes/[A-Za-z0-9_.@-]+\.json", results):
            try:
                document = _read_json(os.path.join(run_dir, results))
            except (OSError, ValueError, RecursionError):
                document = None
        nodes.append(document if isinstance(document, dict) else None)
    return run, nodes


def _text(value, limit=VALUE_LIMIT):
    """A value as one line of text: strings as they are, the rest as compact JSON; cut at limit."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(", ", ": "))
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# A value in the HTML's check tables: shorter than in the other reports, and shortest where the check passed (a
# thousand nodes' tables stay light; the node's document keeps every value whole).
HTML_VALUE_LIMIT = 160
HTML_PASS_LIMIT = 48


def _plain(value, depth=0):
    """A value as a person reads it, without JSON's quotes: mappings as "key value; ...", lists as "a, b" (nesting
    deeper than any document's cut short: a copied one may nest anything)."""
    if depth > 8 and isinstance(value, (dict, list)):
        return "…"
    if isinstance(value, dict):
        return "; ".join(f"{k} {_plain(v, depth + 1)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_plain(v, depth + 1) for v in value)
    return "-" if value is None else str(value)


def _cell_text(value, status):
    return "" if value is None else _text(_plain(value), HTML_PASS_LIMIT if status == "PASS" else HTML_VALUE_LIMIT)


def _check_row(check):
    status = check.get("status")
    return {**check, "value_text": _cell_text(check.get("value"), status),
            "gate_text": _cell_text(check.get("gate"), status)}  # fmt: skip


def _xml(value):
    return _NOT_XML.sub("\ufffd", str(value))


def _rows(run, nodes):
    """Each node of the run: its entry in run.json and its document (None when it has none: unreachable)."""
    return list(zip(run.get("nodes") or [], nodes, strict=False))


def junit(run, nodes):
    """JUnit XML: one testsuite per node, one testcase per check. FAIL is a failure, ERROR an error, SKIPPED skipped,
    WARN a pass with its reason in system-out; a node without results is one errored testcase."""
    root = ET.Element("testsuites", name=_xml(f"gpuops.bringup acceptance {run.get('run_id')}"))
    totals = Counter()
    for entry, document in _rows(run, nodes):
        node = str(entry.get("node"))
        suite = ET.SubElement(root, "testsuite", name=_xml(node), timestamp=_xml(run.get("started_at") or ""))
        properties = ET.SubElement(suite, "properties")
        for key in ("rack", "profile", "verdict"):
            ET.SubElement(properties, "property", name=key, value=_xml(entry.get(key) or ""))
        counts = Counter()
        if document is None:
            case = ET.SubElement(suite, "testcase", classname=_xml(node), name="results")
            error = _xml(entry.get("error") or "no results document for this node")
            ET.SubElement(case, "error", message=error, type="no_results").text = error
            counts.update(tests=1, errors=1)
        for check in (document or {}).get("checks") or []:
            status, reason = check.get("status"), _xml(check.get("reason") or "")
            case = ET.SubElement(suite, "testcase", classname=_xml(f"{node}.{check.get('category')}"),
                                 name=_xml(check.get("id")))  # fmt: skip
            counts.update(tests=1)
            optional = "" if check.get("required") else "(not required) "
            detail = f"{optional}{reason}" + (f"\nNext: {_xml(check['action'])}" if check.get("action") else "")
            if status == "FAIL":
                ET.SubElement(case, "failure", message=optional + reason, type=_xml(check.get("fault") or "fail")
                              ).text = detail  # fmt: skip
                counts.update(failures=1)
            elif status == "ERROR":
                ET.SubElement(case, "error", message=optional + reason, type=_xml(check.get("fault") or "error")
                              ).text = detail  # fmt: skip
                counts.update(errors=1)
            elif status == "SKIPPED":
                ET.SubElement(case, "skipped", message=reason)
                counts.update(skipped=1)
            elif status == "WARN":
                ET.SubElement(case, "system-out").text = f"WARN: {reason}"
        for key in ("tests", "failures", "errors", "skipped"):
            suite.set(key, str(counts[key]))
        totals.update(counts)
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(totals[key]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _md(value, limit=VALUE_LIMIT):
    """A Markdown table cell: one line, its pipes, backslashes and markup characters escaped."""
    return re.sub(r"([\\|`*_\[\]<>#])", r"\\\1", _text(value, limit))


def _change_words(changes):
    """One node's changes since the previous run, as phrases."""
    words = []
    if changes.get("verdict"):
        before, now = changes["verdict"]
        words.append(f"verdict {str(before).upper()} → {str(now).upper()}")
    if changes.get("new_failures"):
        words.append("newly failing: " + ", ".join(changes["new_failures"]))
    if changes.get("fixed"):
        words.append("fixed: " + ", ".join(changes["fixed"]))
    if changes.get("nccl_busbw"):
        nccl = changes["nccl_busbw"]
        words.append(f"NCCL bus bandwidth {nccl['before']:g} → {nccl['now']:g} GB/s ({nccl['change_pct']:+g} %)")
    words += [f"{f['what']} {f['before']} → {f['now']}" for f in changes.get("firmware") or []]
    return words


def markdown(run, nodes, comparison=None):
    """The run for a ticket: who, when, the totals per rack, each node's verdict, what changed since the previous run
    of its nodes, and what to do about each node that was not accepted."""
    totals = run.get("totals") or {}
    site = f"{_md(run['site'])}: " if run.get("site") else ""
    lines = [f"# {site}Acceptance run {_md(run.get('run_id'))}", ""]
    if run.get("simulated"):
        lines += ["**SIMULATED**: at least one node's hardware was simulated; these results prove nothing about real "
                  "hardware.", ""]  # fmt: skip
    collection = run.get("collection") or {}
    lines += [
        f"- Started {_md(run.get('started_at'))}, finished {_md(run.get('finished_at'))}, "
        f"by {_md(run.get('operator'))}",
        f"- {_md(collection.get('name'))} {_md(collection.get('version'))}",
        "- " + ", ".join(f"{totals.get(v, 0)} {v}" for v in VERDICTS) + f" of {totals.get('nodes', 0)} node(s)",
        "",
        "| Rack | Accepted | Rejected | Incomplete |",
        "| --- | ---: | ---: | ---: |",
    ]
    for rack, counts in sorted((run.get("racks") or {}).items()):
        lines.append(f"| {_md(rack)} | " + " | ".join(str(counts.get(v, 0)) for v in VERDICTS) + " |")
    lines += ["", "| Node | Rack | Profile | Verdict | Not passed |", "| --- | --- | --- | --- | --- |"]
    for entry, document in _rows(run, nodes):
        failed = [c for c in (document or {}).get("checks") or [] if c.get("required") and c.get("status") in
                  ("FAIL", "ERROR", "SKIPPED")]  # fmt: skip
        lines.append(f"| {_md(entry.get('node'))} | {_md(entry.get('rack'))} | {_md(entry.get('profile'))} | "
                     f"{_md(str(entry.get('verdict')).upper())} | "
                     f"{', '.join(_md(c.get('id')) + ' ' + _md(c.get('status')) for c in failed)} |")  # fmt: skip
    if comparison:
        lines += ["", f"## Since run {_md(comparison['previous'])}", ""]
        changed = sorted(comparison["nodes"].items())
        lines += [f"- {_md(node)}: {_md('; '.join(_change_words(changes)), 2000)}" for node, changes in changed]
        if not changed:
            lines.append(f"- No change on the {len(comparison['common'])} node(s) both runs checked.")
    for entry, document in _rows(run, nodes):
        if entry.get("verdict") == "accepted":
            continue
        lines += ["", f"## {_md(entry.get('node'))}: {_md(str(entry.get('verdict')).upper())}", ""]
        if document is None:
            lines.append(f"- No results: {_md(entry.get('error'))}")
            continue
        for check in document.get("checks") or []:
            if check.get("required") and check.get("status") in ("FAIL", "ERROR", "SKIPPED"):
                action = f" **Next:** {_md(check.get('action'))}" if check.get("action") else ""
                # Inside a code span Markdown escapes nothing: only its own delimiter is taken out.
                code = _text(check.get("id")).replace("`", "")
                lines.append(f"- `{code}` {_md(check.get('status'))}: {_md(check.get('reason'))}{action}")
    return "\n".join(lines) + "\n"


def _inventory(document):
    """A node document's inventory with the shape the reports read: what is not a mapping reads as absent."""
    inventory = (document or {}).get("inventory")
    inventory = inventory if isinstance(inventory, dict) else {}
    system = inventory.get("system")
    driver, tools = inventory.get("driver"), inventory.get("tools")
    driver = driver if isinstance(driver, dict) else {}
    versions = {"driver": driver.get("loaded"), "CUDA (driver)": driver.get("cuda_version")}
    versions.update(tools if isinstance(tools, dict) else {})
    return {
        "versions": {k: str(v) for k, v in versions.items() if isinstance(v, (str, int, float)) and str(v)},
        "system": system if isinstance(system, dict) else {},
        **{key: [i for i in inventory.get(key) or [] if isinstance(i, dict)] if isinstance(inventory.get(key), list)
           else [] for key in ("gpus", "rdma_adapters")},
    }  # fmt: skip


def _cell(value):
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def inventory_csv(run, nodes):
    """One row per GPU, RDMA adapter and system of every node with results: what asset management records."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for entry, document in _rows(run, nodes):
        inventory = _inventory(document)
        base = (entry.get("node"), entry.get("rack"), entry.get("profile"))
        system = inventory["system"]
        if document is not None:
            model = " ".join(str(system[k]) for k in ("manufacturer", "product") if system.get(k))
            writer.writerow(map(_cell, (*base, "system", "", model, system.get("serial"), system.get("uuid"),
                                        system.get("bios_version"), "", "")))  # fmt: skip
        for gpu in inventory.get("gpus") or []:
            writer.writerow(map(_cell, (*base, "gpu", gpu.get("index"), gpu.get("name"), gpu.get("serial"),
                                        gpu.get("uuid"), gpu.get("vbios"), "", gpu.get("pci_bus_id"))))  # fmt: skip
        for adapter in inventory.get("rdma_adapters") or []:
            writer.writerow(map(_cell, (*base, "rdma_adapter", adapter.get("name"), adapter.get("ca_type"), "",
                                        adapter.get("node_guid"), adapter.get("firmware"), adapter.get("psid"),
                                        "")))  # fmt: skip
    return out.getvalue()


def _evidence(entry):
    """An evidence file as the HTML lists it: a link only to a file of the run directory's evidence tree (a copied
    directory may hold any text, a javascript: address too)."""
    file = entry.get("file")
    href = file if isinstance(file, str) and re.fullmatch(r"evidence/[A-Za-z0-9_.@-]+/[A-Za-z0-9_.-]+", file) else None
    note = "missing" if entry.get("missing") else entry.get("skipped") or ("not written" if file else "no output")
    return {"name": str(entry.get("name")), "href": href, "sha256": entry.get("sha256"), "note": note}


# Inline SVG charts: drawn here, every label escaped, so the template inserts them as they are.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,253}")
_GATE_GBPS = re.compile(r"([0-9]+(?:\.[0-9]+)?) Gb/s")
CHART_POINTS = 256


def _size(size):
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= factor:
            return f"{size / factor:g} {unit}"
    return f"{size} B"


def nccl_points(run_dir, node):
    """[(message size, its best bus bandwidth)] of the node's kept all_reduce_perf run, from its evidence file."""
    if not run_dir or not _SAFE_NAME.fullmatch(str(node)):
        return []
    try:
        data = _read_json(os.path.join(run_dir, "evidence", str(node), "nccl-tests-results.json"))
    except (OSError, ValueError):
        return []
    kept = data.get("node/all_reduce_perf") if isinstance(data, dict) else None
    measured = kept.get("measurement") if isinstance(kept, dict) else None
    rows = measured.get("results") if isinstance(measured, dict) else None
    points = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or not acceptance_history.finite_number(row.get("size")) or row["size"] <= 0:
            continue
        sides = [row.get(k) for k in ("out_of_place", "in_place")]
        values = [
            v["busbw_gbps"]
            for v in sides
            if isinstance(v, dict) and acceptance_history.finite_number(v.get("busbw_gbps"))
        ]
        if values:
            points[int(row["size"])] = max([*values, points.get(int(row["size"]), 0)])
    return sorted(points.items())[:CHART_POINTS]


def port_bandwidth(check):
    """[(port, the lower end's figure of its slowest test)] and the gate in Gb/s of a fabric.bandwidth check."""
    value = check.get("value")
    match = _GATE_GBPS.match(str(check.get("gate") or ""))
    bars = []
    for rail, runs in sorted(value.items()) if isinstance(value, dict) else []:
        ends = [r.get(k) for r in runs if isinstance(r, dict) for k in ("client_gbps", "server_gbps")] if isinstance(
            runs, list) else []  # fmt: skip
        figures = [v for v in ends if acceptance_history.finite_number(v)]
        if figures:
            bars.append((str(rail), min(figures)))
    return bars[:CHART_POINTS], float(match.group(1)) if match else None


def _svg(title, width, height, body):
    name = html_text.escape(title)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="{name}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}">{body}</svg>')  # fmt: skip


def line_chart(title, points, gate, unit="GB/s"):
    """Bus bandwidth against message size (log scale), with the gate (of the largest size) as a dashed line."""
    width, height, left, right, top, bottom = 520, 240, 56, 16, 28, 40
    top_value = max([v for _s, v in points] + [gate or 0]) * 1.1 or 1.0
    low, high = math.log2(points[0][0]), math.log2(points[-1][0])
    span = (high - low) or 1.0

    def x(size):
        return left + (math.log2(size) - low) / span * (width - left - right)

    def y(value):
        return top + (1 - value / top_value) * (height - top - bottom)

    body = [f'<text x="{left}" y="16" class="chart-title">{html_text.escape(title)}</text>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" class="axis"/>',
            f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" class="axis"/>',
            f'<text x="{left - 4}" y="{top + 4}" class="end">{top_value:.0f}</text>',
            f'<text x="{left - 4}" y="{height - bottom}" class="end">0</text>',
            f'<text x="{left}" y="{height - 22}">{_size(points[0][0])}</text>',
            f'<text x="{width - right}" y="{height - 22}" class="end">{_size(points[-1][0])}</text>',
            f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" class="mid">message size; bus '
            f"bandwidth in {unit}</text>"]  # fmt: skip
    if gate is not None:
        body.append(f'<line x1="{left}" y1="{y(gate):.1f}" x2="{width - right}" y2="{y(gate):.1f}" class="gate"/>'
                    f'<text x="{left + 6}" y="{y(gate) - 4:.1f}" class="gate-label">gate '
                    f"{gate:g} {unit}</text>")  # fmt: skip
    path = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in points)
    body.append(f'<polyline points="{path}" class="series"/>')
    # The gate judges the largest size (nccl_tests' "largest" metric): only that point can be below it.
    last = len(points) - 1
    body += [f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="2.5" '
             f'class="{"below" if i == last and gate is not None and v < gate else "point"}">'
             f"<title>{_size(s)}: {v:g} {unit}</title></circle>" for i, (s, v) in enumerate(points)]  # fmt: skip
    return _svg(title, width, height, "".join(body))


def bar_chart(title, bars, gate, unit="Gb/s", width=520, right=70, gate_word="gate", floor=0, no_gate=""):
    """One horizontal bar per (label, value, bad, note): red where bad, its value and note beside it, and the gate as
    a dashed line (no_gate written instead where there is none); the scale reaches at least floor."""
    row, left, top = 22, 90, 28
    height = top + row * len(bars) + 24
    top_value = max([b[1] for b in bars] + [gate or 0, floor]) * 1.05 or 1.0

    def x(value):
        return left + value / top_value * (width - left - right)

    # Whole pixels and the stylesheet's classes: a 1,000-node report draws some 24,000 bars.
    body = [f'<text x="{left}" y="16" class="chart-title">{html_text.escape(title)}</text>']
    for i, (label, value, bad, note) in enumerate(bars):
        y = top + i * row
        body.append(f'<text x="{left - 6}" y="{y + 14}" class="end">{html_text.escape(label)}</text>'
                    f'<rect x="{left}" y="{y + 3}" width="{x(value) - left:.0f}" class="{"below" if bad else "bar"}"/>'
                    f'<text x="{x(value) + 4:.0f}" y="{y + 14}">{value:g}{html_text.escape(note)}</text>')  # fmt: skip
    bottom = top + row * len(bars)
    if gate is not None:
        body.append(f'<line x1="{x(gate):.1f}" y1="{top}" x2="{x(gate):.1f}" y2="{bottom}" class="gate"/>'
                    f'<text x="{x(gate):.1f}" y="{bottom + 16}" class="mid gate-label">{gate_word} '
                    f"{gate:g} {unit}</text>")  # fmt: skip
    elif no_gate:
        body.append(f'<text x="{left}" y="{bottom + 16}">{html_text.escape(no_gate)}</text>')
    return _svg(title, width, height, "".join(body))


def port_bars(bars, gate):
    """bar_chart's bars of ports: below the gate is bad."""
    return [(label, value, gate is not None and value < gate, " (below)" if gate is not None and value < gate else "")
            for label, value in bars]  # fmt: skip


def gpu_temperatures(run_dir, node):
    """([(GPU, its temperature in C, slowed down, its active clock events)], the lowest slowdown threshold reported
    or None) from the node's kept nvidia-smi -q -x (its evidence file): what the judge read, so what it judged."""
    if not run_dir or not _SAFE_NAME.fullmatch(str(node)):
        return [], None
    try:
        with open(os.path.join(run_dir, "evidence", str(node), "nvidia-smi-query.xml"), encoding="utf-8",
                  errors="replace") as handle:  # fmt: skip
            devices = nvidia_smi.parse_query_xml(handle.read(parsing.MAX_TEXT + 1))["devices"]
    except (OSError, nvidia_smi.NvidiaSmiParseError):
        return [], None
    gpus = []
    thresholds = []
    for device in devices[:CHART_POINTS]:
        temperature = device["temperature"]
        if temperature["gpu_c"] is None:
            continue
        events = device["clock_event_reasons"]
        slowed = any(reason in nvidia_smi.SLOWDOWN_REASONS for reason in events) or (
            temperature["slowdown_c"] is not None and temperature["gpu_c"] >= temperature["slowdown_c"])  # fmt: skip
        gpus.append((f"GPU {device['index']}", temperature["gpu_c"], slowed, events))
        if temperature["slowdown_c"] is not None:
            thresholds.append(temperature["slowdown_c"])
    return gpus, min(thresholds) if thresholds else None


def temperature_chart(title, gpus, slowdown):
    """GPU temperatures with each GPU's clock events beside it (red where slowed down), the slowdown threshold as the
    gate line."""
    bars = [(label, value, slowed, f" C; {', '.join(events) or 'no clock event'}")
            for label, value, slowed, events in gpus]  # fmt: skip
    # On a scale to 100 C at least: an idle GPU at 30 C is not drawn as a full bar.
    return bar_chart(title, bars, slowdown, unit="C", width=640, right=260, gate_word="slowdown at", floor=100,
                     no_gate="no slowdown threshold reported by the driver")  # fmt: skip


def node_charts(run_dir, node, checks):
    """The node's charts as SVG text: NCCL bus bandwidth by message size, ib_write_bw by port, GPU temperatures and
    clock events."""
    charts = []
    nccl = next((c for c in checks if c.get("id") == "nccl.single_node"), {})
    points = nccl_points(run_dir, node)
    if points:
        gate = nccl.get("gate") if acceptance_history.finite_number(nccl.get("gate")) else None
        charts.append(line_chart(f"{node}: all_reduce_perf bus bandwidth", points, gate))
    bandwidth = next((c for c in checks if c.get("id") == "fabric.bandwidth"), None)
    if bandwidth:
        bars, gate = port_bandwidth(bandwidth)
        if bars:
            charts.append(bar_chart(f"{node}: ib_write_bw per port (the slower end)", port_bars(bars, gate), gate))
    gpus, slowdown = gpu_temperatures(run_dir, node)
    if gpus:
        charts.append(temperature_chart(f"{node}: GPU temperature and clock events", gpus, slowdown))
    return charts


def _status_counts(checks):
    return {s: sum(1 for c in checks if c.get("status") == s) for s in acceptance.STATUSES}


def html_context(run, nodes, run_dir=None, comparison=None):
    """What the HTML template shows, every value as text: racks of nodes, the matrix of check ids, the totals per
    rack and profile."""
    rows = _rows(run, nodes)
    check_ids = list(dict.fromkeys(c.get("id") for _e, d in rows for c in (d or {}).get("checks") or []))
    racks = {}
    profiles = {}
    for entry, document in rows:
        checks = (document or {}).get("checks") or []
        node = {
            "name": str(entry.get("node")),
            "anchor": "node-" + re.sub(r"[^A-Za-z0-9_-]", "_", str(entry.get("node"))),
            "rack": entry.get("rack") or "no rack",
            "profile": entry.get("profile") or "",
            "verdict": str(entry.get("verdict") or "incomplete"),
            "summary": entry.get("summary") or "",
            "error": entry.get("error"),
            "simulated": (document or {}).get("simulated") or None,
            "statuses": {c.get("id"): c.get("status") for c in checks},
            "counts": _status_counts(checks),
            "checks": [_check_row(c) for c in checks],
            "inventory": _inventory(document),
            "evidence": [_evidence(e) for e in (document or {}).get("evidence") or [] if isinstance(e, dict)],
            "charts": node_charts(run_dir, entry.get("node"), checks) if document else [],
        }
        racks.setdefault(node["rack"], []).append(node)
        profile = profiles.setdefault(node["profile"], dict.fromkeys(VERDICTS, 0))
        profile[node["verdict"]] = profile.get(node["verdict"], 0) + 1
    collection = run.get("collection") or {}
    header = {k: run.get(k) or "" for k in ("run_id", "started_at", "finished_at", "operator", "site")}
    return {
        "run": {**header, "simulated": bool(run.get("simulated"))},
        "collection": f"{collection.get('name') or ''} {collection.get('version') or ''}".strip(),
        "tools": ", ".join(f"{k} {v}" for k, v in sorted((run.get("tools") or {}).items()) if v),
        "totals": run.get("totals") or {},
        "rack_totals": run.get("racks") or {},
        "profiles": profiles,
        # Racks by name, the nodes of no rack last.
        "racks": dict(sorted(racks.items(), key=lambda item: (item[0] == "no rack", item[0]))),
        "check_ids": check_ids,
        "verdicts": VERDICTS,
        "statuses": acceptance.STATUSES,
        "comparison": comparison,
        "changes": {node: _change_words(c) for node, c in ((comparison or {}).get("nodes") or {}).items()},
    }


def html(run, nodes, run_dir=None, comparison=None):
    import markupsafe

    template = _environment().from_string(TEMPLATE.read_text(encoding="utf-8"))
    context = html_context(run, nodes, run_dir, comparison)
    for rack in context["racks"].values():
        for node in rack:
            # Drawn by this module with every label escaped (line_chart, bar_chart).
            node["charts"] = [markupsafe.Markup(chart) for chart in node["charts"]]
    return template.render(**context)


def comparison_of(run_dir, run, nodes):
    """The run against the last earlier run of any of its nodes in the same results directory, or None."""
    found = acceptance_history.previous(run_dir, run)
    if found is None:
        return None
    try:
        before_run, before_nodes = load(found[1])
    except ReportError:
        return None
    return acceptance_history.compare(before_run, before_nodes, run, nodes)


def _environment():
    # Imported here: Jinja2 is the controller's (Ansible's own dependency), and only the HTML needs it.
    import jinja2

    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def index(results_dir):
    """The results directory's page of runs, newest first."""
    rows = []
    for run_id, run_dir, run in reversed(acceptance_history.runs(results_dir)):
        totals = run.get("totals") if isinstance(run.get("totals"), dict) else {}
        rows.append({"run_id": run_id, "site": run.get("site") or "", "started_at": run.get("started_at") or "",
                     "operator": run.get("operator") or "",
                     "totals": {v: totals.get(v, 0) for v in (*VERDICTS, "nodes")},
                     "simulated": bool(run.get("simulated")),
                     "report": f"{run_id}/{REPORTS['html']}" if os.path.isfile(os.path.join(run_dir, REPORTS["html"]))
                     else None})  # fmt: skip
    template = _environment().from_string(INDEX_TEMPLATE.read_text(encoding="utf-8"))
    return template.render(runs=rows, verdicts=VERDICTS)


def write_reports(run_dir):
    """Write every report into run_dir from its documents, and the results directory's index of runs; {kind: path}
    of what was written."""
    run, nodes = load(run_dir)
    comparison = comparison_of(run_dir, run, nodes)
    made = {
        "html": lambda r, n: html(r, n, run_dir, comparison),
        "junit": junit,
        "markdown": lambda r, n: markdown(r, n, comparison),
        "csv": inventory_csv,
    }
    written = {}
    for kind, name in REPORTS.items():
        path = os.path.join(run_dir, name)
        acceptance_results.write_file(path, made[kind](run, nodes))
        written[kind] = path
    results_dir = os.path.dirname(os.path.normpath(run_dir))
    written["index"] = os.path.join(results_dir, INDEX)
    acceptance_results.write_file(written["index"], index(results_dir))
    return written
