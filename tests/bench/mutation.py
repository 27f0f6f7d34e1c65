"""Mutation testing of the acceptance stage's decisions (mutmut): which changes to the code no unit test notices.

A benchmark-like tool, not a test: it takes minutes. It copies the files the unit tests need into a scratch
directory as ansible_collections/gpuops/bringup/ (mutmut names a mutant by its file's path, and the tests import the
module as ansible_collections.gpuops.bringup...: the two must agree), runs mutmut over the modules named, and prints
the killed share.

    .venv/bin/python tests/bench/mutation.py                      # every module of SUITES, one after another
    .venv/bin/python tests/bench/mutation.py --module plugins/module_utils/dcgm.py [--tests TEST ...] [--keep]

SUITES names the acceptance stage's decision modules and the parsers whose findings it judges, each with the unit tests
that judge its mutants. A mutant no selected test runs ("no tests") counts as survived. Exit status 1 when a module has
fewer than --min percent of its mutants killed (default 90).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNIT = "tests/unit/plugins/module_utils/"
ACCEPTANCE_TESTS = [UNIT + "test_acceptance.py"]
# module -> the tests that judge its mutants: its own, and the acceptance stage's, which read its results.
SUITES = {
    # The filter tests call bandwidth_member (through acceptance_bandwidth_member) with each node's own view.
    "acceptance": [*ACCEPTANCE_TESTS, UNIT + "test_acceptance_golden.py", UNIT + "test_acceptance_results.py",
                   "tests/unit/plugins/filter/test_filters.py"],
    "acceptance_pairs": [UNIT + "test_acceptance_pairs.py", *ACCEPTANCE_TESTS],
    "acceptance_results": [UNIT + "test_acceptance_results.py", *ACCEPTANCE_TESTS],
    "acceptance_history": [UNIT + "test_acceptance_history.py"],
    "acceptance_report": [UNIT + "test_acceptance_report.py", UNIT + "test_acceptance_history.py"],
    "hardware_profiles": [UNIT + "test_hardware_profiles.py", UNIT + "test_inventory_schema.py"],
    "nccl_tests": [UNIT + "test_nccl_tests.py", UNIT + "test_nccl_tests_plan.py", UNIT + "test_nccl_tests_pairs.py",
                   *ACCEPTANCE_TESTS, "tests/unit/plugins/modules/test_nccl_test.py"],
    "nccl_tests_pairs": [UNIT + "test_nccl_tests_pairs.py", *ACCEPTANCE_TESTS],
    "dcgm": [UNIT + "test_dcgm.py", *ACCEPTANCE_TESTS],
    "xid": [UNIT + "test_xid.py", UNIT + "test_xid_catalog.py", "tests/unit/plugins/modules/test_xid_scan.py",
            *ACCEPTANCE_TESTS],
    "infiniband": [UNIT + "test_infiniband.py", "tests/unit/plugins/modules/test_ib_facts.py", *ACCEPTANCE_TESTS],
    "perftest": [UNIT + "test_perftest.py", *ACCEPTANCE_TESTS],
    "ethtool": [UNIT + "test_ethtool.py", *ACCEPTANCE_TESTS],
}  # fmt: skip
# What the unit tests read besides the module: the collection's other code, captures, profiles, schemas.
COPY = ["plugins", "tests/unit", "tests/fixtures", "inventory", "playbooks", "schemas", "pyproject.toml"]


def link_collection(where: Path) -> None:
    """<where>/.collections/ansible_collections/gpuops/bringup -> <where>, as in the repository."""
    target = where / ".collections" / "ansible_collections" / "gpuops"
    target.mkdir(parents=True, exist_ok=True)
    (target / "bringup").symlink_to("../../..")


def mutate(modules: list[str], tests: list[str], keep: bool) -> float | None:
    """Run mutmut over modules judged by tests; the killed percentage, None when mutmut failed."""
    work = Path(tempfile.mkdtemp(prefix="gpuops-mutation-"))
    prefix = Path("ansible_collections") / "gpuops" / "bringup"
    for name in COPY:
        source, target = ROOT / name, work / prefix / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target)
    link_collection(work / prefix)
    link_collection(work / "mutants" / prefix)
    # setup.cfg's lists: one item per line.
    settings = {
        "source_paths": [str(prefix / m) for m in modules],
        "also_copy": [str(prefix / c) for c in COPY],
        "pytest_add_cli_args_test_selection": [str(prefix / t) for t in tests],
        "pytest_add_cli_args": ["-p", "no:cacheprovider"],
    }
    with open(work / "setup.cfg", "w", encoding="utf-8") as handle:
        handle.write("[mutmut]\n")
        for key, values in settings.items():
            handle.write(f"{key}=\n" + "".join(f"    {v}\n" for v in values))
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run([mutmut, "run", "--max-children", "2"], cwd=work, env=env, check=False)
    results = subprocess.run([mutmut, "export-cicd-stats"], cwd=work, env=env, check=False, capture_output=True,
                             text=True)  # fmt: skip
    stats_file = work / "mutants" / "mutmut-cicd-stats.json"
    if run.returncode != 0 or not stats_file.exists():
        print(results.stdout + results.stderr)
        print(f"mutmut failed (rc {run.returncode}); scratch directory kept: {work}")
        return None
    stats = json.loads(stats_file.read_text())
    survived = stats["survived"] + stats.get("no_tests", 0)
    killed = stats["killed"] + stats.get("timeout", 0)
    total = killed + survived + stats.get("suspicious", 0)
    share = 100.0 * killed / total if total else 0.0
    print(json.dumps(stats))
    print(f"{', '.join(modules)}: {killed} of {total} mutants killed ({share:.1f} %), {survived} survived")
    if keep:
        print(f"scratch directory: {work} (mutmut results / mutmut show <name> there)")
    else:
        shutil.rmtree(work)
    return share


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", help="a module to mutate (repeatable), default: every suite's")
    parser.add_argument("--tests", action="append", help="a test file that judges the mutants (repeatable)")
    parser.add_argument("--min", type=float, default=90.0, help="the lowest acceptable killed percentage")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory and print its path")
    args = parser.parse_args()
    if args.module:
        suites = {", ".join(args.module): (args.module, args.tests or SUITES[Path(args.module[0]).stem])}
    else:
        suites = {name: ([f"plugins/module_utils/{name}.py"], tests) for name, tests in SUITES.items()}
    shares = {name: mutate(modules, tests, args.keep) for name, (modules, tests) in suites.items()}
    if len(shares) > 1:
        print("\n".join(f"{name:<20} {'mutmut failed' if v is None else f'{v:5.1f} %'}" for name, v in shares.items()))
    if any(v is None for v in shares.values()):
        return 2
    return 0 if all(v >= args.min for v in shares.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
