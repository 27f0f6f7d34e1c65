"""rpm versions and rpm/dnf outputs: the orders rpm 4.20 itself printed, outputs captured from Debian's rpm and dnf."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import rpm

DNF = Path(__file__).resolve().parents[3] / "fixtures" / "dnf"
# "A B R": rpm.vercmp(A, B) as rpm's own Lua interface printed it (tests/fixtures/SOURCES.md).
VERCMP = [line.split() for line in (DNF / "rpm-vercmp.txt").read_text().splitlines()]


@pytest.mark.parametrize(("left", "right", "expected"), VERCMP, ids=[f"{a} vs {b}" for a, b, _r in VERCMP])
def test_version_order_is_rpm_s(left, right, expected):
    assert rpm.compare_versions(left, right) == int(expected)
    assert rpm.compare_versions(right, left) == -int(expected)


def test_epoch_comes_first_then_version_then_release():
    assert rpm.compare_versions("3:550.54.15-1.el9", "575.57.08-1.el9") == 1
    assert rpm.compare_versions("0:12.4.1-1", "12.4.1-1") == 0
    assert rpm.compare_versions("12.4.1-1", "12.4.1-2") == -1
    assert rpm.newest(["12.4.1-1", "12.10.0-1", "12.9.1-1"]) == "12.10.0-1"
    assert rpm.newest([]) is None


def test_repoquery_lists_each_name_oldest_first_and_names_it_lacks_empty():
    text = (DNF / "repoquery-repofrompath.stdout").read_text()
    assert rpm.parse_repoquery(text, ["cuda-toolkit-12-4", "nvidia-driver", "cuda-toolkit-11-8"]) == {
        "cuda-toolkit-12-4": ["12.4.0-1", "12.4.1-1"],
        "nvidia-driver": ["3:550.163.01-1.el9"],
        "cuda-toolkit-11-8": [],
    }


def test_rpm_query_drops_epoch_0_and_ignores_names_rpm_lacks():
    text = (DNF / "rpm-q-evr.stdout").read_text()
    assert rpm.parse_installed(text) == {"cuda-toolkit-12-4": "12.4.0-1", "nvidia-driver": "3:550.163.01-1.el9"}
    assert rpm.parse_installed("kernel\t(none):5.14.0-503.34.1.el9_5\nkernel\t(none):5.14.0-503.11.1.el9_5\n") == {
        "kernel": "5.14.0-503.34.1.el9_5"
    }
