"""Mutation testing of the acceptance stage's decisions (mutmut): which changes to the code no unit test notices.

A benchmark-like tool, not a test: it takes minutes. It copies the files the unit tests need into a scratch
directory as ansible_collections/gpuops/bringup/ (mutmut names a mutant by its file's path, and the tests import the
module as ansible_collections.gpuops.bringup...: the two must agree), runs mutmut over the modules named, and prints
the killed share.

    .venv/bin/python tests/bench/mutation.py [--module plugins/module_utils/acceptance.py] [--tests TEST ...]

Exit status 1 when fewer than --min percent of the mutants are killed (default 90).
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
DEFAULT_MODULES = ["plugins/module_utils/acceptance.py"]
DEFAULT_TESTS = [
    "tests/unit/plugins/module_utils/test_acceptance.py",
    "tests/unit/plugins/module_utils/test_acceptance_golden.py",
    "tests/unit/plugins/module_utils/test_acceptance_results.py",
]
# What the unit tests read besides the module: the collection's other code, captures, profiles, schemas.
COPY = ["plugins", "tests/unit", "tests/fixtures", "inventory", "schemas", "pyproject.toml"]


def link_collection(where: Path) -> None:
    """<where>/.collections/ansible_collections/gpuops/bringup -> <where>, as in the repository."""
    target = where / ".collections" / "ansible_collections" / "gpuops"
    target.mkdir(parents=True, exist_ok=True)
    (target / "bringup").symlink_to("../../..")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", help="a module to mutate (repeatable)")
    parser.add_argument("--tests", action="append", help="a test file that judges the mutants (repeatable)")
    parser.add_argument("--min", type=float, default=90.0, help="the lowest acceptable killed percentage")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory and print its path")
    args = parser.parse_args()
    modules, tests = args.module or DEFAULT_MODULES, args.tests or DEFAULT_TESTS
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
        return 2
    stats = json.loads(stats_file.read_text())
    total = stats["killed"] + stats["survived"] + stats.get("timeout", 0) + stats.get("suspicious", 0)
    killed = stats["killed"] + stats.get("timeout", 0)
    share = 100.0 * killed / total if total else 0.0
    print(json.dumps(stats))
    print(f"{', '.join(modules)}: {killed} of {total} mutants killed ({share:.1f} %), {stats['survived']} survived")
    if args.keep:
        print(f"scratch directory: {work} (mutmut results / mutmut show <name> there)")
    else:
        shutil.rmtree(work)
    return 0 if share >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
