"""The scenarios' on(...) mark (molecule/conftest.py): a test runs on the hosts it names and is left out on the others;
a name the scenario has no host for stops the run, so a renamed or dropped platform cannot leave tests unrun."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).resolve().parents[2] / "molecule" / "conftest.py").read_text()
# testinfra's host fixture as the scenarios see it, parametrized over two hosts, a and b (testinfra itself is left
# out of the inner run: it would parametrize the same fixture from its own options).
HOSTS = """
import pytest


class Backend:
    def __init__(self, name):
        self.name = name

    def get_hostname(self):
        return self.name


class Host:
    def __init__(self, name):
        self.backend = Backend(name)


def pytest_generate_tests(metafunc):
    if "_testinfra_host" in metafunc.fixturenames:
        metafunc.parametrize("_testinfra_host", [Host("a"), Host("b")], ids=["a", "b"])


@pytest.fixture
def host(_testinfra_host):
    return _testinfra_host
"""


def run(pytester, tests: str):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_scenario=HOSTS + tests)
    return pytester.runpytest_subprocess("-p", "no:pytest11.testinfra", "-p", "no:cacheprovider", "-p", "no:xdist")


def test_a_marked_test_runs_on_its_hosts_and_is_left_out_elsewhere(pytester):
    result = run(pytester, """
@pytest.mark.on("a")
def test_on_a(host):
    assert host.backend.get_hostname() == "a"


def test_everywhere(host):
    pass
""")  # fmt: skip
    result.assert_outcomes(passed=3, deselected=1)


def test_a_module_mark_applies_to_every_test_of_the_module(pytester):
    result = run(pytester, """
pytestmark = pytest.mark.on("b")


def test_one(host):
    assert host.backend.get_hostname() == "b"


def test_two(host):
    assert host.backend.get_hostname() == "b"
""")  # fmt: skip
    result.assert_outcomes(passed=2, deselected=2)


def test_a_host_the_scenario_does_not_have_stops_the_run(pytester):
    result = run(pytester, """
@pytest.mark.on("a", "c")
def test_on_a_and_c(host):
    pass
""")  # fmt: skip
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*is marked on(a, c), but the scenario has no host c (its hosts: a, b)*"])
