"""The acceptance report in a real browser: Debian's chromium, headless, through chromium-driver and selenium, loads
report.html from disk (no server: as a customer opens a mail attachment) and the test reads the page a person sees:
the banner of a simulated run, the matrix's statuses, a failing node's reason and next action, the charts. It keeps
a screenshot and the page printed to PDF under tests/output/."""

from __future__ import annotations

import base64
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from results_fixture import ROOT, golden, node_read
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.print_page_options import PrintOptions

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance_report, acceptance_results

OUTPUT = ROOT / "tests" / "output"
RUN = {"run_id": "20261206T100000Z", "started_at": "2026-12-06T10:00:00Z", "finished_at": "2026-12-06T10:04:10Z",
       "operator": "ops", "collection": {"name": "gpuops.bringup", "version": "0.1.0"},
       "tools": {"ansible_core": "2.19.14"}}  # fmt: skip
# Two racks: a healthy node with its kept NCCL run, a node missing a GPU, a simulated one with a slow port; an
# unreachable node in the second rack.
NODES = {"h100-healthy": "rack_a", "h100-gpu-missing": "rack_a", "h100-ib-bw-low": "rack_b"}


def document(name):
    doc = {**golden(name), "node": name, "rack": NODES[name]}
    if name == "h100-ib-bw-low":
        doc["simulated"] = {"profile": "hgx_h100_8gpu_ib_bw_low", "captures": []}
    return doc


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("reports") / RUN["run_id"]
    read = node_read()
    entries = [acceptance_results.node_entry(acceptance_results.write_node(str(run_dir), document(name), read))
               for name in NODES]  # fmt: skip
    entries.append(acceptance_results.unreachable_entry("h100-down", "rack_b", "hgx_h100_8gpu", "host unreachable"))
    acceptance_results.write_run(str(run_dir), RUN, entries)
    return Path(acceptance_report.write_reports(str(run_dir))["html"])


@pytest.fixture(scope="module")
def page(report):
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(argument)
    # The driver Debian ships beside its chromium: selenium looks for no other (nothing is downloaded).
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))
    try:
        driver.get(report.as_uri())
        yield driver
    finally:
        driver.quit()


def test_the_banner_says_simulated(page):
    banner = page.find_element(By.ID, "simulated-banner")
    assert banner.is_displayed() and banner.text.startswith("SIMULATED")


def test_the_matrix_shows_every_status_as_a_word(page):
    cells = page.find_elements(By.CSS_SELECTOR, "table.matrix td:not(:first-child)")
    words = Counter(cell.text for cell in cells)
    expected = Counter(c["status"] for name in NODES for c in document(name)["checks"])
    verdicts = Counter(document(name)["verdict"].upper() for name in NODES) + Counter(["INCOMPLETE"])
    # The unreachable node has a cell per check id, each "-".
    assert words - Counter({"-": words["-"]}) == expected + verdicts
    # Every status cell says its status in words, whatever its colour.
    assert all(cell.text for cell in cells)


def test_a_failing_nodes_reason_and_next_action_are_visible(page):
    check = next(c for c in document("h100-gpu-missing")["checks"] if c["id"] == "gpu.count")
    # A check's row begins with its id (no attribute names it: 26,000 rows in a 1,000-node report).
    row = page.find_element(By.XPATH, '//section[@id="node-h100-gpu-missing"]//tr[starts-with(td[1], "gpu.count")]')
    # The row's cells: check, status, measured, gate, reason, next action.
    reason, action = row.find_elements(By.TAG_NAME, "td")[4:6]
    assert reason.is_displayed() and " ".join(reason.text.split()) == " ".join(check["reason"].split())
    assert " ".join(check["action"].split()) in " ".join(action.text.split())
    assert row.find_element(By.CSS_SELECTOR, "td:nth-child(2)").text == "FAIL"


def test_the_charts_are_drawn(page):
    nccl = page.find_elements(By.CSS_SELECTOR, "#node-h100-healthy svg.chart")
    assert nccl and nccl[0].is_displayed() and nccl[0].size["height"] > 100
    slow = page.find_elements(By.CSS_SELECTOR, "#node-h100-ib-bw-low svg.chart rect.below")
    assert len(slow) == 1 and slow[0].size["width"] > 0
    temperatures = next(c for c in nccl if "temperature" in c.get_attribute("aria-label"))
    assert temperatures.is_displayed() and len(temperatures.find_elements(By.CSS_SELECTOR, "rect.bar")) == 8


def test_it_prints_with_a_page_per_rack_and_keeps_a_screenshot(page):
    OUTPUT.mkdir(parents=True, exist_ok=True)
    assert page.save_screenshot(str(OUTPUT / "acceptance-report.png"))
    options = PrintOptions()
    options.background = True
    pdf = base64.b64decode(page.print_page(options))
    (OUTPUT / "acceptance-report.pdf").write_bytes(pdf)
    assert pdf.startswith(b"%PDF")
    # Each rack starts a page: at least one page per rack.
    assert len(re.findall(rb"/Type\s*/Page(?![a-z])", pdf)) >= 2
