"""module_utils variables: every public variable's grammar, on its default and on the values that would rewrite the
file or command it goes into (BAD, shared with tests/integration/test_variable_grammar.py, which runs them through
each role's preflight)."""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils import variables

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from variable_cases import BAD  # noqa: E402


def defaults():
    found = {}
    for path in sorted(glob.glob(str(ROOT / "roles" / "*" / "defaults" / "main.yml"))):
        found.update(yaml.safe_load(Path(path).read_text()) or {})
    return found


def choices():
    names = set()
    for path in glob.glob(str(ROOT / "roles" / "*" / "meta" / "argument_specs.yml")):
        for entry in yaml.safe_load(Path(path).read_text())["argument_specs"].values():
            names.update(k for k, o in (entry.get("options") or {}).items() if o.get("choices"))
    return names


def test_every_public_variable_has_a_grammar_or_says_where_it_is_checked():
    known = set(variables.VARIABLES) | set(variables.WHERE_USED) | set(variables.STRUCTURED) | choices()
    assert sorted(set(defaults()) - known) == []
    assert sorted((set(variables.VARIABLES) | set(variables.STRUCTURED)) - set(defaults())) == []


def test_every_rule_has_a_bad_value_tried():
    assert sorted((set(variables.VARIABLES) | set(variables.WHERE_USED)) - set(BAD)) == []


@pytest.mark.parametrize(
    "name", sorted(n for n, v in defaults().items() if n in variables.VARIABLES and "{{" not in json.dumps(v))
)
def test_the_default_passes(name):
    assert variables.variable_problems({name: defaults()[name]}) == []


@pytest.mark.parametrize(("name", "value", "expected"), [(n, v, e) for n, cases in BAD.items() for v, e in cases])
def test_a_bad_value_is_refused_with_its_fix(name, value, expected):
    problems = variables.variable_problems({name: value}, where_used=True)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{name} "), problems
    assert expected in problems[0], problems
    assert ". Fix: " in problems[0]


@pytest.mark.parametrize("value", [True, False, "true", "False", "yes", "NO", "on", "off", "1", "0", " true "])
def test_booleans_as_the_command_line_gives_them(value):
    assert variables.variable_problems({"os_baseline_reboot_ok": value}) == []


@pytest.mark.parametrize("value", ["maybe", "", "tru", 2, None, [True]])
def test_what_the_bool_filter_would_read_as_false_is_refused(value):
    # `"maybe" | bool` is false: a typo would silently turn a switch off.
    assert variables.variable_problems({"os_baseline_reboot_ok": value}) == [
        f"os_baseline_reboot_ok is {json.dumps(value)}: not a boolean (true or false; yes/no, on/off and 1/0 are read "
        "the same, anything else is not). Fix: true or false (unquoted; from the command line -e name=true works too)."
    ]


@pytest.mark.parametrize(("value", "ok"), [(300, True), ("300", True), (" 300", True), ("300.0", False),
                                           (True, False), (300.0, False), ("3e2", False), ("٣", False)])  # fmt: skip
def test_whole_numbers_from_yaml_or_the_command_line(value, ok):
    assert (variables.variable_problems({"gpuops_package_lock_timeout": value}) == []) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("registry.k8s.io/pause:3.10", True),
        ("localhost:5000/pause@sha256:" + "a" * 64, True),
        ("pause", True),
        ("Registry.k8s.io/Pause:3.10", False),
        ('registry.k8s.io/pause:3.10"\nsystemd_cgroup = false', False),
        ("--privileged", False),
        ("registry.k8s.io/pause:", False),
    ],
)
def test_image_references(value, ok):
    assert (variables.image(value) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("15m", True),
        ("1h30m", True),
        ("24h", True),
        ("0", False),
        ("0s", False),
        ("48h", False),
        ("15 m", False),
        ("15m\n", False),
        (15, False),
    ],
)
def test_token_lifetimes(value, ok):
    assert (variables.variable_problems({"k8s_node_token_ttl": value}) == []) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("ntp1.example.com", True),
        ("10.0.0.1", True),
        ("fe80::1", True),
        ("[fe80::1]", True),
        ("ntp1\nallow all", False),
        ("ntp1 iburst noselect", False),
        ("10.0.0.256", False),
        ("-ntp", False),
    ],
)
def test_hosts(value, ok):
    assert (variables.host(value) is None) is ok


def test_a_value_is_shown_as_yaml_spells_it():
    assert variables.variable_problems({"os_baseline_ntp_servers": ["ok.example.com", "bad\nallow all"]}) == [
        'os_baseline_ntp_servers has ["bad\\nallow all"]: not host names or addresses (chrony reads the rest of the '
        "line as options). Fix: one server name or address per item, e.g. [ntp1.example.com, 10.0.0.1]."
    ]
