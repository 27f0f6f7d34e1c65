"""The handover reports made from a results directory alone: its run and node documents are the golden node
documents of real captures (every verdict, each failure type, ERROR and SKIPPED checks), written as the acceptance
stage writes them, with an unreachable node and a rerun of a subset; and the same with hostile values."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from html.parser import HTMLParser
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance_report, acceptance_results, nccl_tests

GOLDEN = Path(__file__).resolve().parent / "golden" / "acceptance"
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
NODES = ("h100-healthy", "h100-gpu-missing", "h100-ecc", "h100-cuda-no-toolkit", "h100-ib-bw-low",
         "h100-container-pull-failed")  # fmt: skip
RUN = {"run_id": "20261206T100000Z", "started_at": "2026-12-06T10:00:00Z", "finished_at": "2026-12-06T10:04:10Z",
       "operator": "ops", "collection": {"name": "gpuops.bringup", "version": "0.1.0"},
       "tools": {"ansible_core": "2.19.14"}}  # fmt: skip


def golden(name, node=None, **changes):
    document = json.loads((GOLDEN / f"{name}.json").read_text())
    return {**document, "node": node or name, "rack": "rack_a", "finished_at": "2026-12-06T10:04:00Z", **changes}


def evidence_read():
    """acceptance_read's evidence of one command and one missing file, as a node document's evidence comes to be."""
    return {"evidence": {"nvidia-smi-topo.txt": {"cmd": ["nvidia-smi", "topo", "-m"], "rc": 0, "stdout": "GPU0 X\n"},
                         "dkms-status.txt": {"tool": "dkms", "missing": True}}}  # fmt: skip


def results_dir(tmp_path, documents, unreachable=("n-down",)):
    run_dir = tmp_path / "reports" / RUN["run_id"]
    entries = [
        acceptance_results.node_entry(acceptance_results.write_node(str(run_dir), d, evidence_read()))
        for d in documents
    ]
    entries += [acceptance_results.unreachable_entry(n, "rack_b", "hgx_h100_8gpu", "the node was unreachable")
                for n in unreachable]  # fmt: skip
    acceptance_results.write_run(str(run_dir), RUN, entries)
    return run_dir


SIMULATED = {"profile": "hgx_h100_8gpu_ib_bw_low", "captures": []}


@pytest.fixture
def rack(tmp_path):
    """The goldens, one of them simulated: a rack with a simulated node is a simulated run."""
    return results_dir(tmp_path, [golden(n, simulated=SIMULATED if n == "h100-ib-bw-low" else False) for n in NODES])


def test_every_report_is_written_private(rack):
    written = acceptance_report.write_reports(str(rack))
    assert written == {**{kind: str(rack / name) for kind, name in acceptance_report.REPORTS.items()},
                       "index": str(rack.parent / "index.html")}  # fmt: skip
    for path in written.values():
        assert stat.S_IMODE(Path(path).stat().st_mode) == 0o640


def test_junit_has_a_suite_per_node_and_a_case_per_check(rack):
    acceptance_report.write_reports(str(rack))
    xml = JUnitXml.fromfile(str(rack / "junit.xml"))
    suites = {suite.name: suite for suite in xml}
    assert sorted(suites) == sorted([*NODES, "n-down"])
    for name in NODES:
        checks = golden(name)["checks"]
        suite = suites[name]
        cases = {case.name: case for case in suite}
        assert sorted(cases) == sorted(c["id"] for c in checks)
        for check in checks:
            kinds = [type(r) for r in cases[check["id"]].result]
            expected = {"FAIL": [Failure], "ERROR": [Error], "SKIPPED": [Skipped]}.get(check["status"], [])
            assert kinds == expected, (name, check["id"])
            if check["status"] in ("FAIL", "ERROR"):
                (result,) = cases[check["id"]].result
                assert result.message.endswith(check["reason"])
                assert result.type == check["fault"]
                assert f"Next: {check['action']}" in result.text
        counts = [sum(1 for c in checks if c["status"] == s) for s in ("FAIL", "ERROR", "SKIPPED")]
        assert [suite.tests, suite.failures, suite.errors, suite.skipped] == [len(checks), *counts]
    (down,) = suites["n-down"]
    assert [type(r) for r in down.result] == [Error] and down.result[0].message == "the node was unreachable"
    assert xml.tests == sum(len(golden(n)["checks"]) for n in NODES) + 1


def test_markdown_names_each_node_not_accepted_with_what_to_do(rack):
    acceptance_report.write_reports(str(rack))
    text = (rack / "summary.md").read_text()
    assert text.startswith("# Acceptance run 20261206T100000Z\n\n**SIMULATED**")
    assert "| rack\\_a | 1 | 3 | 2 |" in text and "| rack\\_b | 0 | 0 | 1 |" in text
    missing = next(c for c in golden("h100-gpu-missing")["checks"] if c["id"] == "gpu.count")
    assert f"- `gpu.count` FAIL: {missing['reason']} **Next:** {missing['action']}" in text
    assert "## h100-healthy" not in text and "## n-down: INCOMPLETE\n\n- No results: the node was unreachable" in text


def test_the_inventory_csv_has_every_gpu_and_adapter(rack):
    acceptance_report.write_reports(str(rack))
    rows = list(csv.DictReader(io.StringIO((rack / "inventory.csv").read_text())))
    healthy = golden("h100-healthy")["inventory"]
    gpus = [r for r in rows if r["host"] == "h100-healthy" and r["component"] == "gpu"]
    assert [(r["index"], r["serial"], r["uuid"], r["firmware"]) for r in gpus] == [
        (str(g["index"]), g["serial"], g["uuid"], g["vbios"]) for g in healthy["gpus"]]  # fmt: skip
    adapters = [r for r in rows if r["host"] == "h100-healthy" and r["component"] == "rdma_adapter"]
    assert [(r["index"], r["firmware"]) for r in adapters] == [
        (a["name"], a["firmware"]) for a in healthy["rdma_adapters"]]  # fmt: skip
    assert not [r for r in rows if r["host"] == "n-down"]


class Page(HTMLParser):
    """The elements of a page with their attributes, and its text, as a browser's parser reads them."""

    def __init__(self, text):
        super().__init__()
        self.tags, self.text = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def test_the_html_shows_every_node_check_and_fault(rack):
    acceptance_report.write_reports(str(rack))
    text = (rack / "report.html").read_text()
    page = Page(text)
    shown = " ".join(" ".join(page.text).split())
    assert "SIMULATED" in shown and any(a.get("id") == "simulated-banner" for _t, a in page.tags)
    # Nothing from elsewhere: no script, stylesheet link, image or frame.
    assert not [t for t, _a in page.tags if t in ("script", "link", "img", "iframe", "object", "embed")]
    for name in NODES:
        document = golden(name)
        assert any(a.get("id") == f"node-{name}" and a.get("data-verdict") == document["verdict"]
                   for _t, a in page.tags)  # fmt: skip
        for check in document["checks"]:
            if check["status"] in ("FAIL", "ERROR"):
                assert " ".join(check["reason"].split()) in shown
                assert " ".join(check["action"].split()) in shown
    links = [a["href"] for t, a in page.tags if t == "a" and not a["href"].startswith("#")]
    assert links == [f"evidence/{n}/nvidia-smi-topo.txt" for n in sorted(NODES)]
    assert "dkms-status.txt: missing" in shown
    assert "Versions: driver 565.57.01, CUDA (driver) 12.7, dcgm 3.1.0" in shown


def test_the_site_heads_every_report(tmp_path):
    run_dir = results_dir(tmp_path, [golden("h100-healthy")], unreachable=())
    run = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**run, "site": "Frankfurt <DC2> hall 3"}))
    acceptance_report.write_reports(str(run_dir))
    assert (
        '<span id="site">Frankfurt &lt;DC2&gt; hall 3</span>: Acceptance run' in (run_dir / "report.html").read_text()
    )
    assert (run_dir / "summary.md").read_text().startswith("# Frankfurt \\<DC2\\> hall 3: Acceptance run ")
    assert "<td>Frankfurt &lt;DC2&gt; hall 3</td>" in (run_dir.parent / "index.html").read_text()


def test_a_run_of_real_hardware_has_no_banner(tmp_path):
    run_dir = results_dir(tmp_path, [golden("h100-healthy")], unreachable=())
    run = json.loads((run_dir / "run.json").read_text())
    assert run["simulated"] is False
    acceptance_report.write_reports(str(run_dir))
    assert "SIMULATED" not in (run_dir / "report.html").read_text()
    assert "SIMULATED" not in (run_dir / "summary.md").read_text()


HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>|`*\x01\x1b"


def test_hostile_values_stay_text(tmp_path):
    """A node's serial, product, check reason and evidence file as a hostile node or a doctored results directory
    could write them: the HTML shows them as text, the XML parses, the CSV runs no formula, the table holds."""
    document = golden("h100-gpu-missing", node="h100-gpu-missing")
    document["inventory"]["gpus"][0]["serial"] = '=HYPERLINK("http://x")' + HOSTILE
    document["inventory"]["system"]["product"] = HOSTILE
    document["checks"][0]["reason"] = HOSTILE
    run_dir = results_dir(tmp_path, [document], unreachable=())
    doctored = json.loads((run_dir / "nodes" / "h100-gpu-missing.json").read_text())
    doctored["evidence"][0]["file"] = "javascript:alert(3)"
    (run_dir / "nodes" / "h100-gpu-missing.json").write_text(json.dumps(doctored))
    acceptance_report.write_reports(str(run_dir))
    page = Page((run_dir / "report.html").read_text())
    assert not [t for t, _a in page.tags if t in ("script", "img")]
    assert not [a for _t, a in page.tags if any(k.startswith("on") for k in a)]
    assert not [a for _t, a in page.tags if "javascript:" in a.get("href", "")]
    assert "<script>alert(1)</script>" in "".join(page.text)
    xml = JUnitXml.fromfile(str(run_dir / "junit.xml"))
    case = next(c for suite in xml for c in suite if c.name == "gpu.count")
    assert case.result[0].message.startswith("<script>alert(1)</script>")
    rows = list(csv.DictReader(io.StringIO((run_dir / "inventory.csv").read_text())))
    assert rows[1]["serial"].startswith("'=HYPERLINK(")
    table = [line for line in (run_dir / "summary.md").read_text().splitlines() if line.startswith("| h100")]
    assert len(table) == 1 and table[0].count("|") - table[0].count("\\|") == 6


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "run.json cannot be read (No such file or directory): give the directory of one run"),
        ("{", "run.json is not JSON"),
        ('{"schema": "gpuops.bringup/acceptance-node"}', "is no acceptance run document"),
    ],
)
def test_a_directory_without_a_run(tmp_path, content, message):
    if content is not None:
        (tmp_path / "run.json").write_text(content)
    with pytest.raises(acceptance_report.ReportError, match=re.escape(message)):
        acceptance_report.load(str(tmp_path))


def test_a_node_document_outside_the_run_is_not_read(tmp_path, rack):
    run = json.loads((rack / "run.json").read_text())
    run["nodes"][0]["results"] = "../../secret.json"
    (tmp_path / "reports" / "secret.json").write_text(json.dumps(golden("h100-healthy")))
    (rack / "run.json").write_text(json.dumps(run))
    _run, nodes = acceptance_report.load(str(rack))
    assert nodes[0] is None and all(n is not None for n in nodes[1:-1])


def test_a_rerun_of_a_subset_reports_every_node_once(rack):
    again = {**RUN, "started_at": "2026-12-06T11:00:00Z", "finished_at": "2026-12-06T11:01:00Z"}
    fixed = acceptance_results.write_node(str(rack), golden("h100-healthy", node="n-down"), {})
    acceptance_results.write_run(str(rack), again, [acceptance_results.node_entry(fixed)])
    acceptance_report.write_reports(str(rack))
    xml = JUnitXml.fromfile(str(rack / "junit.xml"))
    assert sorted(s.name for s in xml) == sorted([*NODES, "n-down"])
    assert "| rack\\_a | 2 | 3 | 2 |" in (rack / "summary.md").read_text()


def test_a_run_document_of_another_shape_reads_as_empty(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({
        "schema": "gpuops.bringup/acceptance-run", "run_id": "x", "totals": [1], "racks": "r", "nodes": [
            "n1", {"node": 7}, {"node": "n2", "results": None, "verdict": "incomplete"}]}))  # fmt: skip
    acceptance_report.write_reports(str(tmp_path))
    assert [s.name for s in JUnitXml.fromfile(str(tmp_path / "junit.xml"))] == ["n2"]
    assert "0 accepted, 0 rejected, 0 incomplete of 0 node(s)" in (tmp_path / "summary.md").read_text()


def nccl_read(capture="nccl-tests-290-all_reduce-h100-8gpu-single-node.txt"):
    """acceptance_read's copy of the nccl_tests stage's results.json, its measurement parsed from a real run."""
    parsed = nccl_tests.parse((FIXTURES / "nccl" / capture).read_text())
    kept = {"node/all_reduce_perf": {"measurement": {"results": parsed["results"], "rc": 0}}}
    return {"evidence": {"nccl-tests-results.json": {"path": "/var/lib/gpuops/nccl_tests/results.json",
                                                     "stdout": json.dumps(kept)}}}  # fmt: skip


def svgs(text):
    return re.findall(r"<svg .*?</svg>", text, re.S)


def test_charts_of_nccl_by_message_size_and_of_each_port(tmp_path):
    """The healthy node's kept all_reduce_perf run (8x H100, 128 MiB to 4 GiB) against its gate; ib_write_bw of the
    node whose mlx5_4 moves half its rate, that port below its gate."""
    run_dir = tmp_path / "r"
    healthy = acceptance_results.write_node(str(run_dir), golden("h100-healthy"), nccl_read())
    slow = acceptance_results.write_node(str(run_dir), golden("h100-ib-bw-low"), {})
    acceptance_results.write_run(str(run_dir), RUN, [acceptance_results.node_entry(d) for d in (healthy, slow)])
    acceptance_report.write_reports(str(run_dir))
    text = (run_dir / "report.html").read_text()
    nccl, healthy_ports, slow_ports = svgs(text)
    assert "all_reduce_perf bus bandwidth" in nccl and "gate 460 GB/s" in nccl
    # The better side of each size; the gate judges the largest (the smaller ones are below it, as NVLS is).
    assert re.findall(r'class="(\w+)"><title>([^<]+)</title></circle>', nccl) == [
        ("point", "128 MiB: 382.99 GB/s"), ("point", "256 MiB: 413.97 GB/s"), ("point", "512 MiB: 431.81 GB/s"),
        ("point", "1 GiB: 465.25 GB/s"), ("point", "2 GiB: 469.64 GB/s"), ("point", "4 GiB: 476.53 GB/s")]  # fmt: skip
    below = acceptance_report.line_chart("t", [(2**27, 400.0), (2**33, 235.26)], 460)
    assert re.findall(r'class="(\w+)"><title>', below) == ["point", "below"]
    assert 'class="below"' not in healthy_ports
    assert "gate 380 Gb/s" in slow_ports
    assert re.findall(r">([a-z0-9_]+)</text><rect [^>]*class=\"below\"", slow_ports) == ["mlx5_4"]
    assert "196.17 (below)" in slow_ports
    assert acceptance_report.nccl_points(str(run_dir), "h100-ib-bw-low") == []


@pytest.mark.parametrize(
    "content",
    ["", "[]", '{"node/all_reduce_perf": 1}', '{"node/all_reduce_perf": {"measurement": {"results": [1, {"size": -1}, '
     '{"size": 8, "in_place": {"busbw_gbps": "NaN"}}, {"size": true, "in_place": {"busbw_gbps": 3}}]}}}'],
)  # fmt: skip
def test_nccl_points_of_unreadable_evidence(tmp_path, content):
    (tmp_path / "evidence" / "n1").mkdir(parents=True)
    (tmp_path / "evidence" / "n1" / "nccl-tests-results.json").write_text(content)
    assert acceptance_report.nccl_points(str(tmp_path), "n1") == []
    assert acceptance_report.nccl_points(str(tmp_path), "../n1") == []


def test_chart_labels_are_escaped():
    chart = acceptance_report.bar_chart("<b>", [("<script>x</script>", 10.0, True, "<i>")], 20.0)
    assert "<script>" not in chart and "&lt;script&gt;" in chart and "<b>" not in chart and "&lt;i&gt;" in chart


def smi_read(capture):
    """acceptance_read's evidence of nvidia-smi -q -x, the capture's text as its output."""
    text = (FIXTURES / "nvidia_smi" / capture).read_text()
    return {"evidence": {"nvidia-smi-query.xml": {"cmd": ["nvidia-smi", "-q", "-x"], "rc": 0, "stdout": text}}}


def test_charts_of_gpu_temperature_and_clock_events(tmp_path):
    """From each node's kept nvidia-smi -q -x: the 8x H100 whose GPU 7 is held down by a hardware thermal slowdown
    (red, its clock events beside it; this driver reports no absolute slowdown threshold, so no line), and the V100
    whose board reports its slowdown threshold (87 C, the line)."""
    run_dir = tmp_path / "r"
    slowed = acceptance_results.write_node(str(run_dir), golden("h100-slowdown"),
                                           smi_read("h100-sxm-x8-565-slowdown.derived.xml"))  # fmt: skip
    v100 = acceptance_results.write_node(str(run_dir), golden("h100-healthy", node="v100"),
                                         smi_read("v100-pcie-32gb-460.xml"))  # fmt: skip
    acceptance_results.write_run(str(run_dir), RUN, [acceptance_results.node_entry(d) for d in (slowed, v100)])
    acceptance_report.write_reports(str(run_dir))
    charts = [c for c in svgs((run_dir / "report.html").read_text()) if "GPU temperature and clock events" in c]
    assert len(charts) == 2
    bars = re.findall(r'>(GPU \d+)</text><rect [^>]*class="(\w+)"/><text [^>]*>([^<]+)</text>', charts[0])
    assert bars[:2] == [("GPU 0", "bar", "30 C; gpu_idle"), ("GPU 1", "bar", "30 C; gpu_idle")]
    assert bars[7][:2] == ("GPU 7", "below") and bars[7][2].endswith("C; hw_slowdown, hw_thermal_slowdown")
    assert [b[1] for b in bars].count("below") == 1 and 'class="gate"' not in charts[0]
    assert "no slowdown threshold reported by the driver" in charts[0]
    assert "slowdown at 87 C" in charts[1] and 'class="below"' not in charts[1] and "no slowdown" not in charts[1]
    assert acceptance_report.gpu_temperatures(str(run_dir), "v100") == ([("GPU 0", 66, False, [])], 87)


@pytest.mark.parametrize("content", ["", "<nvidia_smi_log><gpu>", "<other/>", "\udcff"])
def test_gpu_temperatures_of_unreadable_evidence(tmp_path, content):
    (tmp_path / "evidence" / "n1").mkdir(parents=True)
    (tmp_path / "evidence" / "n1" / "nvidia-smi-query.xml").write_text(content, errors="surrogateescape")
    assert acceptance_report.gpu_temperatures(str(tmp_path), "n1") == ([], None)
    assert acceptance_report.gpu_temperatures(str(tmp_path), "../n1") == ([], None)
    assert acceptance_report.gpu_temperatures(None, "n1") == ([], None)


def test_an_inventory_of_another_shape_reads_as_empty(tmp_path):
    document = golden("h100-healthy", node="n1")
    document["inventory"] = {"gpus": ["GPU-1", {"index": 0, "serial": "S0"}], "rdma_adapters": "mlx5_0", "system": []}
    run_dir = results_dir(tmp_path, [document], unreachable=())
    acceptance_report.write_reports(str(run_dir))
    rows = list(csv.DictReader(io.StringIO((run_dir / "inventory.csv").read_text())))
    assert [(r["component"], r["serial"]) for r in rows] == [("system", ""), ("gpu", "S0")]
    assert 'id="node-n1"' in (run_dir / "report.html").read_text()


def test_deeply_nested_documents_are_refused_or_cut(tmp_path, rack):
    """A run.json nested deeper than the JSON reader goes is no run; a check value nested deep is cut in the HTML."""
    deep = "[" * 100000 + "]" * 100000
    (tmp_path / "run.json").write_text(deep)
    with pytest.raises(acceptance_report.ReportError, match="is not JSON"):
        acceptance_report.load(str(tmp_path))
    document = json.loads((rack / "nodes" / "h100-healthy.json").read_text())
    value = []
    for _level in range(500):
        value = [value]
    document["checks"][0]["value"] = value
    (rack / "nodes" / "h100-healthy.json").write_text(json.dumps(document))
    acceptance_report.write_reports(str(rack))
    assert "…" in (rack / "report.html").read_text()


REPORT_GOLDEN = GOLDEN.parent / "reports"


@pytest.mark.parametrize("name", ["summary.md", "junit.xml", "inventory.csv", "report.html", "index.html"])
def test_each_report_says_word_for_word_what_was_reviewed(rack, name):
    """The reports of the rack above (every verdict, failure types, a simulated node, an unreachable one) against
    copies reviewed once: any change of their words is seen here. GPUOPS_GOLDEN=write writes them again (then read
    the diff)."""
    written = acceptance_report.write_reports(str(rack))
    path = Path(written["index"]) if name == "index.html" else rack / name
    text = path.read_text().replace(str(rack.parent), "<results>")
    golden_copy = REPORT_GOLDEN / name
    if os.environ.get("GPUOPS_GOLDEN") == "write":
        golden_copy.parent.mkdir(exist_ok=True)
        golden_copy.write_text(text)
    assert text == golden_copy.read_text()
