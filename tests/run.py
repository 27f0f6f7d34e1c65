"""Every check CI runs, on two workers, ending with one line: `N passed, N failed`.

Lint and sanity, unit tests, playbook-level tests (bad input, OS matrix) and
every Molecule scenario; the scenarios start first, slowest first
(tests/conftest.py). `make test` runs this after `make setup`; arguments are
passed to pytest (e.g. `-k os_baseline`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["tests/lint", "tests/unit", "tests/integration", "tests/molecule"]


class Tally:
    """Counts outcomes as pytest reports them: a test passes once, or fails in any phase."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed += 1
        elif report.passed and report.when == "call":
            self.passed += 1


def main(argv: list[str]) -> int:
    tally = Tally()
    rc = pytest.main(
        [
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(ROOT),
            "-ra",
            "--durations=40",
            # Two workers, the CI machine's two cores: a scenario waits on its
            # nodes (SSH round trips, apt, systemd) for part of its time, which
            # the other worker uses; the DKMS builds gain little, as both compile
            # on the same cores (tests/conftest.py orders the units).
            "--numprocesses=2",
            "--dist=loadscope",
            "--no-loadscope-reorder",
            *argv,
            *[str(ROOT / s) for s in SUITES],
        ],
        plugins=[tally],
    )
    print(f"{tally.passed} passed, {tally.failed} failed")
    return int(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
