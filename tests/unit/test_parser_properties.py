"""Property tests: every parser survives any input - arbitrary text and bytes, and mutations of every capture.

A parser returns data a module can hand to Ansible (JSON with no lone surrogates: Ansible writes results as UTF-8)
or raises its own documented error with a short message; any other exception is a crash a node would show as a
module traceback. Hypothesis runs derandomized (the same examples on every run, no example database), bounded so
this file takes well under a minute on the CI machine.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parsers import PARSERS, ROOT, Parser

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, rpm

settings.register_profile(
    "parsers",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.load_profile("parsers")

# What tools print where parsers go wrong: Unicode digits str.isdigit() accepts and int() refuses, numbers no float
# holds, undecodable bytes as run_command's surrogateescape leaves them, markup, line separators splitlines() knows.
ODD = (
    "²", "٣", "\uff11", "\u00b9", "\udcff", "\x00", "\ufeff", "\u2028", "\x85", "\r", "\t", "\x1b[0m",
    "1e400", "-1e400", "inf", "nan", "-0", "9" * 400, "0x", "N/A", "é", "'", '"', "<", "&", "]]>", "\\",
    "<!ENTITY x 'y'>", "<!DOCTYPE x [", "\n\n", " " * 300,
)  # fmt: skip
NUMBER = re.compile(r"[0-9]+")


def check(parser: Parser, data) -> None:
    try:
        result = parser.parse(data)
    except parser.errors as error:
        message = str(error)
        assert message, f"{parser.name} raised {type(error).__name__} without a message"
        assert len(message) < 2000, f"{parser.name}'s message is {len(message)} characters long"
        message.encode("utf-8")
        return
    json.dumps(result, ensure_ascii=False).encode("utf-8")


@st.composite
def mutated(draw, parser: Parser):
    """A capture of the parser's, cut, spliced, with lines dropped or doubled and odd text or numbers put in."""
    text = draw(st.sampled_from(parser.inputs()))
    for _step in range(draw(st.integers(1, 3))):
        lines = text.splitlines(keepends=True) or [""]
        line = draw(st.integers(0, len(lines) - 1))
        at = draw(st.integers(0, len(text)))
        op = draw(st.integers(0, 9))
        if op == 0:
            text = text[:at]
        elif op == 1:
            text = "".join(lines[:line] + lines[line + 1 :])
        elif op == 2:
            text = "".join(lines[: line + 1] + lines[line:] * draw(st.integers(1, 3)))
        elif op == 3:
            other = draw(st.integers(0, len(lines)))
            low, high = sorted((line, other))
            text = "".join(lines[:low] + lines[high:] + lines[low:high])
        elif op == 4:
            text = text[:at] + draw(st.sampled_from(ODD)) + text[at:]
        elif op == 5:
            numbers = list(NUMBER.finditer(text))
            if numbers:
                match = numbers[draw(st.integers(0, len(numbers) - 1))]
                text = text[: match.start()] + draw(st.sampled_from(ODD)) + text[match.end() :]
        elif op == 6:
            text = text[:at] + draw(st.binary(max_size=40)).decode("utf-8", "surrogateescape") + text[at:]
        elif op == 7:
            text = text[:at] + draw(st.sampled_from(" \t:.,-[]()=#")) * draw(st.integers(1, 2000)) + text[at:]
        elif op == 8:
            words = lines[line].split()
            if words:
                lines[line] = " ".join(draw(st.sampled_from([*words, *ODD])) for _word in words) + "\n"
                text = "".join(lines)
        else:
            text = text[:at] + draw(st.text(max_size=60)) + text[at:]
    return text


@st.composite
def mutated_bytes(draw, parser: Parser):
    data = draw(st.sampled_from(parser.inputs()))
    for _step in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.integers(0, 3))
        if op == 0:
            data = data[:at]
        elif op == 1 and data:
            index = min(at, len(data) - 1)
            data = data[:index] + bytes([data[index] ^ draw(st.integers(1, 255))]) + data[index + 1 :]
        elif op == 2:
            data = data[:at] + draw(st.binary(max_size=20)) + data[at:]
        else:
            end = draw(st.integers(at, len(data)))
            data = data[:end] + data[at:end] + data[end:]
    return data


def ids(parser: Parser) -> str:
    return parser.name


@pytest.mark.parametrize("parser", PARSERS, ids=ids)
def test_survives_arbitrary_text(parser):
    if parser.binary:
        strategy = st.binary(max_size=300)
    else:
        strategy = st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("utf-8", "surrogateescape"))

    @settings(max_examples=40)
    @given(strategy)
    def run(data):
        check(parser, data)

    run()


@pytest.mark.parametrize("parser", PARSERS, ids=ids)
def test_survives_mutated_captures(parser):
    strategy = mutated_bytes(parser) if parser.binary else mutated(parser)

    @settings(max_examples=80)
    @given(strategy)
    def run(data):
        check(parser, data)

    run()


@pytest.mark.parametrize("parser", PARSERS, ids=ids)
def test_captures_parse(parser):
    """Every capture the table names reads without a crash (what each one yields, the parser's own tests check)."""
    for data in parser.inputs():
        check(parser, data)


VERSION = st.text(alphabet="0123456789abz~^.+-:_", max_size=12)


@settings(max_examples=500)
@given(st.lists(VERSION, max_size=30))
def test_rpm_version_key_orders_as_rpm_compares(versions):
    """rpm.version_key (the sort key that made a 50 MB rpm -qa linear) orders EVRs exactly as compare_versions."""
    for a, b in itertools.pairwise(versions):
        ka, kb = rpm.version_key(a), rpm.version_key(b)
        assert (ka > kb) - (ka < kb) == rpm.compare_versions(a, b), (a, b)


@settings(max_examples=300)
@given(VERSION, VERSION, VERSION)
def test_version_comparisons_are_orders(x, y, z):
    """Antisymmetric and transitive, for dpkg's order and rpm's: sorting and newest() rely on both."""
    for compare in (apt.compare_versions, rpm.compare_versions):
        forward, backward = compare(x, y), compare(y, x)
        assert forward == -backward
        if forward <= 0 and compare(y, z) <= 0:
            assert compare(x, z) <= 0, (compare.__module__, x, y, z)


# Reached through another parser's row: the field parsers of ibstat's lines, the dependency relations of a control
# stanza, lspci's list form of read_lspci_nn, and the module reading a saved nccl-tests log (tests/unit/plugins).
INDIRECT = {
    "infiniband.parse_state", "infiniband.parse_physical_state", "infiniband.parse_rate", "infiniband.parse_link_layer",
    "cuda_toolkit.parse_relations", "pci.parse_lspci_nn", "nccl_test.parse_log",
}  # fmt: skip


def test_every_parser_is_listed():
    """A parse function added to module_utils or a module gets a row in tests/unit/parsers.py."""
    source = (ROOT / "tests" / "unit" / "parsers.py").read_text()
    missing = []
    for path in sorted((ROOT / "plugins").glob("module*/*.py")):
        for name in re.findall(r"^def ((?:parse|scan)\w*)\(", path.read_text(), re.MULTILINE):
            qualified = f"{path.stem}.{name}"
            if qualified not in INDIRECT and f"{qualified}(" not in source and f"{qualified}," not in source:
                missing.append(qualified)
    assert missing == []
