"""DCGM diagnostics read from real outputs of dcgmi diag (tests/fixtures/SOURCES.md): text tables of DCGM 3 and 4,
JSON of DCGM 3, and what is not a diagnostic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import dcgm

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "dcgm"


def parse(name):
    return dcgm.parse_diag((FIXTURES / name).read_text(errors="replace"))


def by_name(result):
    return {t["name"]: t for t in result["tests"]}


def test_a_dcgm_3_table_all_passed_with_its_metadata():
    result = parse("hypercomputer-r2-h100-pass.txt")
    assert (result["format"], result["version"], result["driver"], result["errors"]) == (
        "text", "3.3.8", "535.309.01", [])  # fmt: skip
    tests = by_name(result)
    assert [t["name"] for t in result["tests"]] == [
        "Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
        "Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom", "PCIe", "GPU Memory",
    ]  # fmt: skip
    assert {t["status"] for t in result["tests"]} == {"pass"}
    assert (tests["PCIe"]["category"], tests["PCIe"]["all"], tests["PCIe"]["gpus"]) == ("Integration", "pass", {})
    # A wrapped Info row, cut mid-word by DCGM at the cell's width, joined back.
    assert tests["Persistence Mode"]["info"] == [
        'Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " '
        "as root."
    ]


def test_one_gpu_failing_targeted_power_among_passing_ones():
    tests = by_name(parse("sagemaker-hc-r3-a10g-targeted-power-gpu1-fail.txt"))
    power = tests["Targeted Power"]
    assert (power["status"], power["all"], power["gpus"]) == (
        "fail",
        None,
        {0: "pass", 2: "pass", 3: "pass", 1: "fail"},
    )
    assert power["warnings"] == [
        "GPU 1 Max power of 224.1 did not reach desired power minimum target_power_min_ratio of 224.2 for GPU 1 "
        "Verify that the clock speeds and GPU utilization are high."
    ]
    assert len(power["info"]) == 3 and power["info"][0] == "GPU 0 GPU 0 max power: 299.5 W average power usage: 299.0 W"
    assert (tests["EUD Test"]["status"], tests["Memory Bandwidth"]["status"]) == ("skip", "pass")


def test_every_gpu_failing_the_memory_test_when_cuda_cannot_start():
    result = parse("nccl-tests-264-r3-h100-memory-fail-cuinit.txt")
    memory = by_name(result)["GPU Memory"]
    assert (memory["status"], memory["all"], len(memory["warnings"])) == ("fail", "fail", 8)
    assert memory["warnings"][0].startswith("GPU 0 Error using CUDA API cuInit Check DCGM and system logs for errors.")
    assert result["version"] == "3.3.8"


def test_dcgm_4_tables_name_their_plugins_and_results():
    result = parse("dcgm-253-r2-b200-4.4.1-pcie-fail.txt")
    assert (result["version"], result["driver"]) == ("4.4.1", "570.172.08")
    assert {t["name"]: t["status"] for t in result["tests"]} == {"software": "pass", "memory": "pass", "pcie": "fail"}


def test_a_truncated_table_keeps_what_it_printed():
    result = parse("dcgm-253-r2-l40s-4.2.3-pcie-fail-truncated.txt")
    assert result["version"] == "4.2.3" and by_name(result)["pcie"]["status"] == "fail"


def test_a_run_that_could_not_complete_gives_its_errors_and_no_test():
    result = parse("dcgm-254-r3-4.4.1-error-plugins.txt")
    assert result["tests"] == []
    assert result["errors"][0].startswith("Error: Unable to complete diagnostic for entities 0,1,2,3. Return: (-30)")
    assert len(result["errors"]) == 2


def test_an_error_row_of_a_category_is_a_failure():
    tests = parse("ml-engineering-deployment-gpu3-row-remap-pending.fragment.txt")["tests"]
    assert tests == [
        {
            "category": "Deployment", "name": "Error", "status": "fail", "gpus": {}, "all": "fail",
            "warnings": ["GPU 3 has uncorrectable memory errors and row remappings are pending"], "info": [],
        }
    ]  # fmt: skip


def test_dcgm_3_json_after_a_stray_line_and_with_nulls():
    result = parse("dcgm-jsonresulttests-r1-8gpu-3.1.0.txt")
    assert (result["format"], result["version"]) == ("json", "3.1.0")
    tests = by_name(result)
    assert len(result["tests"]) == 10 and {t["status"] for t in result["tests"]} == {"pass"}
    assert tests["Denylist"]["gpus"] == dict.fromkeys(range(8), "pass")
    # The "software" test lists each GPU as a bare number.
    assert tests["software"]["gpus"] == dict.fromkeys(range(8), "pass")


def test_the_derived_row_remap_failure_on_gpu_3():
    test = by_name(parse("dcgm-jsonresulttests-r1-8gpu-3.1.0-gpu3-row-remap.derived.txt"))["Page Retirement/Row Remap"]
    assert test["status"] == "fail"
    assert test["gpus"] == {**dict.fromkeys((0, 1, 2, 4, 5, 6, 7), "pass"), 3: "fail"}
    assert test["warnings"] == ["GPU 3 has uncorrectable memory errors and row remappings are pending"]


def test_json_with_info_strings_and_one_gpu():
    tests = by_name(parse("virtualclient-r3-1gpu-pass.json"))
    assert tests["GPU Memory"]["info"] == ["GPU 0 Allocated 15206918958 bytes (97.3%)"]
    assert tests["EUD Test"]["status"] == "skip" and tests["Denylist"]["all"] == "pass"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "dcgmi: command not found",
        '{"other": 1}',
        "| not a table |",
    ],
)
def test_what_is_no_diagnostic_is_refused_with_an_excerpt(text):
    with pytest.raises(dcgm.DcgmParseError):
        dcgm.parse_diag(text)


def test_a_json_fragment_is_refused():
    """One test object of a DCGM 4 document, as an issue quoted it: no document to read."""
    with pytest.raises(dcgm.DcgmParseError, match="the JSON holds none of DCGM GPU Diagnostic, DCGM Diagnostic"):
        parse("dcgm-215-r3-8gpu-4.x-test.fragment.txt")


def test_dcgm_4_json_shape():
    """DCGM 4 names results by entity and keeps the version in metadata (shape of NVIDIA/DCGM#215's fragment)."""
    document = (
        '{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", "results": '
        '[{"entity_group": "GPU", "entity_id": 0, "status": "Pass"}, {"entity_group": "GPU", "entity_id": 1, '
        '"status": "Fail", "warnings": [{"error_id": 1, "warning": "x"}]}]}]}], "metadata": {"version": "4.4.1"}}}'
    )
    result = dcgm.parse_diag(document)
    assert (result["version"], result["driver"]) == ("4.4.1", None)
    assert result["tests"][0]["gpus"] == {0: "pass", 1: "fail"} and result["tests"][0]["warnings"] == ["x"]


@pytest.mark.parametrize(
    ("statuses", "worst"),
    [(["pass", "fail"], "fail"), (["warn", "pass"], "warn"), (["skip", "pass"], "pass"), (["not_run", "skip"], "skip"),
     ([None, "x"], None), ([], None)],
)  # fmt: skip
def test_worst(statuses, worst):
    assert dcgm.worst(statuses) == worst


def test_dcgm_4_per_gpu_rows_are_results_not_warning_text():
    pcie = by_name(parse("dcgm-253-r2-l40s-4.2.3-pcie-fail-truncated.txt"))["pcie"]
    assert (pcie["status"], pcie["all"], pcie["gpus"]) == ("fail", "fail", dict.fromkeys(range(4), "pass"))
    assert all("GPU0: Pass" not in w for w in pcie["warnings"])
    assert pcie["warnings"][0] == ("There was an internal error during the test: 'A child process (152) exited with "
                                   "non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart "
                                   "DCGM. Rerun diagnostics.")  # fmt: skip


def summary(name, required=()):
    return dcgm.summary(parse(name), required)


def test_summary_of_one_gpu_failing_targeted_power():
    found = summary("sagemaker-hc-r3-a10g-targeted-power-gpu1-fail.txt")
    assert (found["dcgm_version"], found["driver_version"]) == ("3.3.9", "570.195.03")
    assert (found["failed_gpus"], found["passed"]) == ([1], False)
    power = next(t for t in found["tests"] if t["name"] == "Targeted Power")
    assert (power["category"], power["status"]) == ("Stress", "fail")
    assert [(g["gpu"], g["status"]) for g in power["gpus"]] == [(0, "pass"), (1, "fail"), (2, "pass"), (3, "pass")]
    assert power["gpus"][1]["message"].startswith("GPU 1 Max power of 224.1 did not reach desired power minimum")
    assert power["gpus"][0]["message"] is None
    assert found["messages"][0].startswith("Stress Targeted Power: GPU 1 Max power of 224.1")
    # The EUD test was skipped: that counts against the node only when it is required.
    assert next(t for t in found["tests"] if t["name"] == "EUD Test")["status"] == "skip"


@pytest.mark.parametrize(
    ("required", "passed", "message"),
    [
        ((), True, None),
        (("gpu memory", "Memory Bandwidth"), True, None),
        (("eud test",), False, "required test eud test did not run"),
        (("No Such Test",), False, "required test No Such Test did not run"),
    ],
)
def test_a_skip_fails_only_a_required_test(required, passed, message):
    found = summary("sagemaker-hc-r3-a10g-pass.txt", required)
    assert found["passed"] is passed
    assert found["messages"] == ([message] if message else [])


def test_summary_of_a_failure_on_all_gpus_names_the_gpu_its_warning_names():
    found = summary("nolebase-r2-rtx3090-pcie-fail.txt")
    assert (found["failed_gpus"], found["passed"]) == ([0], False)


def test_summary_of_an_internal_error_names_no_gpu():
    found = summary("dcgm-253-r2-b200-4.4.1-pcie-fail.txt")
    assert (found["failed_gpus"], found["passed"], found["dcgm_version"]) == ([], False, "4.4.1")


def test_summary_of_a_run_without_tests_has_not_passed():
    found = summary("dcgm-254-r3-4.4.1-error-plugins.txt")
    assert (found["tests"], found["passed"]) == ([], False)
    assert found["messages"][0].startswith("Error: Unable to complete diagnostic for entities 0,1,2,3")


def diag4(results, name="memory", category="Hardware", extra=""):
    """A DCGM 4 document (the shape of test_dcgm_4_json_shape) with one test of the given results."""
    return json.dumps(
        {"DCGM Diagnostic": {"test_categories": [{"category": category, "tests": [{"name": name, "results": results}]}],
                             "metadata": {"version": "4.4.1"}}} | (json.loads(extra) if extra else {})
    )  # fmt: skip


@pytest.mark.parametrize(("entity", "gpus"), [(4095, {4095: "pass"}), (4096, {}), ("4095,4096", {4095: "pass"})])
def test_gpu_ids_stop_below_4096(entity, gpus):
    test = dcgm.parse_diag(diag4([{"entity_id": entity, "status": "Pass"}]))["tests"][0]
    assert test["gpus"] == gpus
    # A result for no GPU it can name reads as one for every GPU.
    assert test["all"] == (None if gpus else "pass")


@pytest.mark.parametrize(
    "warnings",
    [
        [{"error_id": 1, "message": "GPU 1 failed"}],
        [{"error_id": 1, "info": "GPU 1 failed"}],
        [5, None, " ", {"error_id": 1}, "GPU 1 failed"],
    ],
)
def test_warning_text_under_any_of_its_keys(warnings):
    test = dcgm.parse_diag(diag4([{"entity_id": 1, "status": "Fail", "warnings": warnings}]))["tests"][0]
    assert test["warnings"] == ["GPU 1 failed"]


def test_every_result_adds_its_warnings_and_info():
    results = [{"entity_id": 0, "status": "Fail", "warnings": "GPU 0 a", "info": "i0"},
               {"entity_id": 1, "status": "Fail", "warnings": "GPU 1 b", "info": "i1"}]  # fmt: skip
    test = dcgm.parse_diag(diag4(results))["tests"][0]
    assert (test["warnings"], test["info"]) == (["GPU 0 a", "GPU 1 b"], ["i0", "i1"])


def test_a_gpu_with_two_results_keeps_the_worst():
    results = [
        {"entity_id": 2, "status": "Fail"},
        {"entity_id": 2, "status": "Pass"},
        {"entity_id": 3, "status": "Pass"},
    ]
    assert dcgm.parse_diag(diag4(results))["tests"][0]["gpus"] == {2: "fail", 3: "pass"}


def test_what_a_document_leaves_out():
    """Nulls and strays among the results and tests are passed over, later ones read; names and categories that are
    missing read unknown; a result without a status is not run; the version may sit at the top level."""
    results = [None, {"entity_id": 0}, {"entity_id": 1, "status": "Pass"}]
    categories = [None, {"tests": [None, {"results": results}]}]
    document = json.dumps({"version": "3.3.9", "DCGM GPU Diagnostic": {"test_categories": categories}})
    result = dcgm.parse_diag(document)
    assert result["version"] == "3.3.9"
    (test,) = result["tests"]
    assert (test["category"], test["name"], test["gpus"]) == ("unknown", "unknown", {0: "not_run", 1: "pass"})
    assert dcgm.parse_diag(diag4([]))["tests"][0]["status"] == "not_run"


def test_a_warned_gpu_carries_its_message_and_the_test_its_warnings():
    results = [{"entity_id": 0, "status": "Warn", "warnings": "GPU 0 runs hot"}, {"entity_id": 1, "status": "Pass"}]
    found = dcgm.summary(dcgm.parse_diag(diag4(results, name="Targeted Stress", category="Stress")))
    test = found["tests"][0]
    gpus = [(g["gpu"], g["status"], g["message"]) for g in test["gpus"]]
    assert gpus == [(0, "warn", "GPU 0 runs hot"), (1, "pass", None)]
    assert (found["messages"], found["passed"]) == (["Stress Targeted Stress: GPU 0 runs hot"], True)


def test_a_warning_naming_no_gpu_belongs_to_every_failed_gpu():
    results = [
        {"entity_id": 0, "status": "Fail", "warnings": ["the test timed out", "the second says more"]},
        {"entity_id": 1, "status": "Fail", "warnings": "GPU 1 too"},
        {"entity_id": 2, "status": "Pass"},
    ]
    gpus = dcgm.summary(dcgm.parse_diag(diag4(results)))["tests"][0]["gpus"]
    assert [g["message"] for g in gpus] == ["the test timed out", "GPU 1 too", None]


def test_a_failure_of_all_gpus_beside_per_gpu_results_fails_only_the_failed_ones():
    results = [{"status": "Fail", "warnings": "GPU 5 lost"}, {"entity_id": 0, "status": "Pass"}]
    found = dcgm.summary(dcgm.parse_diag(diag4(results)))
    assert (found["failed_gpus"], found["passed"]) == ([], False)


def test_up_to_twenty_error_lines():
    text = "\n".join(f"Error: unable to reach GPU {n}" for n in range(21))
    assert len(dcgm.parse_diag(text)["errors"]) == 20
