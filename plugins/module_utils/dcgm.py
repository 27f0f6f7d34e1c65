# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA DCGM diagnostics (`dcgmi diag -r <level>`, with `-j` or as its text table) read into tests with a status
per GPU, whatever DCGM release printed them.

DCGM 3 writes JSON under "DCGM GPU Diagnostic" with each result's "gpu_ids" ("0,1,2" or a number); DCGM 4 under
"DCGM Diagnostic" with "entity_id" per result and the version in "metadata"; both put "version" somewhere. The text
table wraps long cells at a fixed width, mid-word, and lists a result per GPU set ("Pass - GPUs: 0, 2, 3" then
"Fail - GPU: 1" in the next row). Pure functions of the text; Python 3.8 compatible (shipped with the modules).
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

# Worst first: a test's status is its worst result's.
STATUSES = ("fail", "warn", "pass", "skip", "not_run")
_STATUS_WORDS = {
    "fail": "fail",
    "failed": "fail",
    "warn": "warn",
    "warning": "warn",
    "pass": "pass",
    "passed": "pass",
    "skip": "skip",
    "skipped": "skip",
    "notrun": "not_run",
}
JSON_KEYS = ("DCGM GPU Diagnostic", "DCGM Diagnostic")
# "Pass - All", "Fail - GPU: 1", "Pass - GPUs: 0, 2, 3", "Skip - All", or the bare word (deployment tests).
_RESULT = re.compile(r"(?i)(pass|fail|warn|warning|skip|skipped)(?:\s+-\s+(all|gpus?:\s*([0-9][0-9,\s]{0,200})))?")
# "|-----  Deployment  --------+----...|" or "+-----  Stress  ----+----+": a category's first line.
_CATEGORY = re.compile(r"[|+]-+\s+([A-Za-z][A-Za-z /]{0,40}?)\s+-+\+")
_MESSAGE_ROWS = {"warning": "warnings", "info": "info"}
# DCGM 4's per-GPU result, a continuation row of its own under the test (and under its warnings): "GPU0: Pass".
_GPU_RESULT = re.compile(r"GPU\s?([0-9]{1,4}):\s*(Pass|Fail|Warn|Warning|Skip|Skipped)", re.IGNORECASE)
_METADATA = {"dcgm version": "version", "driver version detected": "driver"}


class DcgmParseError(parsing.ParseError):
    """The text is neither DCGM's JSON nor its table."""


def _status(word):
    return _STATUS_WORDS.get(re.sub(r"[^a-z]", "", str(word or "").lower()))


def worst(statuses):
    """The worst of the statuses (fail > warn > pass > skip > not_run); None for none."""
    found = [s for s in statuses if s in STATUSES]
    return min(found, key=STATUSES.index) if found else None


def _gpu_ids(value):
    """[0, 1] from "0,1", 3, or "3"; [] for anything else."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value] if 0 <= value < 4096 else []
    ids = [parsing.to_int(part) for part in str(value or "").split(",")]
    return [i for i in ids if i is not None and 0 <= i < 4096]


def _messages(value):
    """Text of a result's warnings or info: a string, a list of strings, or DCGM's {"warning": ..., "error_id": n}."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("warning") or item.get("message") or item.get("info")
        if isinstance(item, str) and item.strip():
            out.append(" ".join(item.split())[:2000])
    return out


def _test(category, name):
    return {"category": category, "name": name, "status": None, "gpus": {}, "all": None, "warnings": [], "info": []}


def _finish(test):
    test["status"] = worst([test["all"], *test["gpus"].values()]) or "not_run"
    return test


def _from_json(document):
    body = next((document[k] for k in JSON_KEYS if isinstance(document.get(k), dict)), None)
    if body is None:
        raise DcgmParseError(f"the JSON holds none of {', '.join(JSON_KEYS)}")
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    version = body.get("version") or metadata.get("version") or document.get("version")
    tests = []
    categories = body.get("test_categories")
    for category in categories if isinstance(categories, list) else []:
        if not isinstance(category, dict):
            continue
        for entry in category.get("tests") if isinstance(category.get("tests"), list) else []:
            if not isinstance(entry, dict):
                continue
            test = _test(str(category.get("category") or "unknown")[:100], str(entry.get("name") or "unknown")[:100])
            for result in entry.get("results") if isinstance(entry.get("results"), list) else []:
                if not isinstance(result, dict):
                    continue
                status = _status(result.get("status")) or "not_run"
                ids = _gpu_ids(result["entity_id"] if "entity_id" in result else result.get("gpu_ids"))
                if ids:
                    for gpu in ids:
                        test["gpus"][gpu] = worst([test["gpus"].get(gpu), status])
                else:
                    test["all"] = worst([test["all"], status])
                test["warnings"] += _messages(result.get("warnings"))
                test["info"] += _messages(result.get("info"))
            tests.append(_finish(test))
    # No JSON output seen here names the driver (the text table's metadata does).
    return {"format": "json", "version": _short(version), "driver": None, "tests": tests}


def _short(value):
    return str(value).strip()[:64] if isinstance(value, (str, int, float)) and str(value).strip() else None


def _cells(line):
    """The two cells of a table row, each as printed (padding kept), or None for a line that is no row."""
    if not line.startswith("|") or not line.rstrip().endswith("|"):
        return None
    parts = line.rstrip()[1:-1].split("|")
    return parts if len(parts) == 2 else None


def _chunk(raw):
    """A cell's text: one padding blank dropped at the start (a wrapped chunk may begin with a real blank)."""
    return (raw[1:] if raw.startswith(" ") else raw).rstrip()


def _from_table(lines):
    tests, metadata = [], {}
    category, test, messages, width, last = "unknown", None, None, 0, 0
    for line in lines:
        match = _CATEGORY.match(line)
        if match:
            category, messages = match.group(1).strip(), None
            continue
        cells = _cells(line)
        if cells is None:
            continue
        name, raw = cells[0].strip(), cells[1]
        text = _chunk(raw)
        if name.lower() == "diagnostic" and text.lower() == "result":
            continue
        if not name:
            # A continuation: another GPU set's result, or the rest of a wrapped message. DCGM cuts at the cell's
            # width, mid-word: a full chunk continues without a blank (a blank that was there starts the next one).
            result = _RESULT.fullmatch(text.strip())
            per_gpu = _GPU_RESULT.fullmatch(text.strip())
            if test is not None and per_gpu:
                gpu = int(per_gpu.group(1))
                test["gpus"][gpu] = worst([test["gpus"].get(gpu), _status(per_gpu.group(2))])
                messages = None
            elif test is not None and messages is None and result:
                _add_result(test, result)
            elif messages:
                messages[-1] += text if last >= width else " " + text.lstrip()
                last = len(text)
            continue
        width, last = max(len(raw) - 3, 1), len(text)
        key = name.lower()
        if key in _METADATA:
            metadata[_METADATA[key]] = text.strip()
            messages = None
        elif key in _MESSAGE_ROWS and test is not None:
            messages = test[_MESSAGE_ROWS[key]]
            messages.append(text.strip())
        elif key == "error":
            # The category could not run (a deployment check found the node unfit): a failure of its own.
            test = _test(category, "Error")
            test["all"] = "fail"
            tests.append(test)
            messages = test["warnings"]
            messages.append(text.strip())
        elif category.lower() != "metadata":
            test, messages = _test(category, name[:100]), None
            tests.append(test)
            result = _RESULT.fullmatch(text.strip())
            if result:
                _add_result(test, result)
    for found in tests:
        _finish(found)
        found["warnings"] = [" ".join(m.split())[:2000] for m in found["warnings"]]
        found["info"] = [" ".join(m.split())[:2000] for m in found["info"]]
    return {"format": "text", "version": _short(metadata.get("version")), "driver": _short(metadata.get("driver")),
            "tests": tests}  # fmt: skip


def _add_result(test, match):
    status = _status(match.group(1))
    if match.group(3):
        for gpu in _gpu_ids(match.group(3).replace(" ", "")):
            test["gpus"][gpu] = worst([test["gpus"].get(gpu), status])
    else:
        test["all"] = worst([test["all"], status])


def parse_diag(text):
    """`dcgmi diag` output (JSON with -j, else the table) -> {"format", "version", "driver", "tests": [{"category",
    "name", "status", "gpus": {id: status}, "all": status for every GPU or None, "warnings", "info"}], "errors":
    ["Error: ..." lines]}. A test's status is its worst result's; one with no result is not_run.

    JSON may follow other lines (a stray WARNING) and hold nulls among the tests. DcgmParseError when the text holds
    neither a diagnostic document nor a table row, and no error line says why."""
    text, _cut = parsing.bounded(text)
    errors = [line.strip()[:1000] for line in text.splitlines() if line.strip().startswith("Error:")][:20]
    start = text.find("{")
    if start >= 0:
        try:
            document, _end = json.JSONDecoder().raw_decode(text, start)
        except (ValueError, RecursionError):
            document = None
        if isinstance(document, dict):
            return {**_from_json(document), "errors": errors}
    result = _from_table(text.splitlines())
    if not result["tests"] and not errors and result["version"] is None:
        raise DcgmParseError(f"no DCGM diagnostic result in the output: {parsing.excerpt(text)}")
    return {**result, "errors": errors}


# The module's statuses: DCGM's "not run" (a test without a result) reads as a skip.
MODULE_STATUS = {"fail": "fail", "warn": "warn", "pass": "pass", "skip": "skip", "not_run": "skip"}
_GPU_IN_MESSAGE = re.compile(r"\bGPU\s?([0-9]{1,4})\b")


def _gpu_messages(test):
    """{gpu: the first warning naming it}; a warning naming no GPU belongs to every GPU the test lists."""
    found, anywhere = {}, None
    for message in test["warnings"]:
        named = _GPU_IN_MESSAGE.findall(message)
        for gpu in named:
            found.setdefault(int(gpu), message)
        if not named and anywhere is None:
            anywhere = message
    return found, anywhere


def summary(diag, required=()):
    """The dcgm_diag module's result from parse_diag's: dcgm_version, driver_version, tests [{category, name, status
    (pass, fail, warn or skip), gpus [{gpu, status, message}]}], failed_gpus (sorted), passed (no test failed, and
    none of the required tests, by name, case-insensitive, skipped or missing), messages (DCGM's errors, then each
    failed or warned test's warnings)."""
    tests, failed, messages = [], set(), list(diag["errors"])
    for test in diag["tests"]:
        status = MODULE_STATUS[test["status"]]
        named, anywhere = _gpu_messages(test)
        gpus = []
        for gpu, gpu_status in sorted(test["gpus"].items()):
            said = named.get(gpu, anywhere) if gpu_status in ("fail", "warn") else None
            gpus.append({"gpu": gpu, "status": MODULE_STATUS[gpu_status], "message": said})
        failed.update(g["gpu"] for g in gpus if g["status"] == "fail")
        if test["all"] == "fail" and not gpus:
            # "Fail - All" names no GPU; a warning that does names the one that failed.
            failed.update(named)
        if status in ("fail", "warn"):
            messages += [f"{test['category']} {test['name']}: {w}" for w in test["warnings"]]
        tests.append({"category": test["category"], "name": test["name"], "status": status, "gpus": gpus})
    statuses = {t["name"].lower(): t["status"] for t in tests}
    missing = [name for name in required if statuses.get(name.lower(), "skip") == "skip"]
    messages += [f"required test {name} did not run" for name in missing]
    return {
        "dcgm_version": diag["version"],
        "driver_version": diag["driver"],
        "tests": tests,
        "failed_gpus": sorted(failed),
        "passed": bool(tests) and not any(t["status"] == "fail" for t in tests) and not missing,
        "messages": messages,
    }
