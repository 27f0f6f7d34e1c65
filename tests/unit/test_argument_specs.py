"""Each role's meta/argument_specs.yml matches its defaults/main.yml, key for key and value for value."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = sorted(
    p.parent.parent for p in (Path(__file__).resolve().parents[2] / "roles").glob("*/meta/argument_specs.yml")
)


def load(role: Path) -> tuple[dict, dict]:
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    return defaults, spec


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_spec_and_defaults_name_the_same_variables(role: Path) -> None:
    defaults, spec = load(role)
    assert sorted(defaults) == sorted(spec)


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_spec_defaults_equal_the_role_defaults(role: Path) -> None:
    defaults, spec = load(role)
    different = {k: (spec[k].get("default"), defaults[k]) for k in spec if spec[k].get("default") != defaults.get(k)}
    assert not different, f"(spec default, defaults/main.yml) differ: {different}"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_every_option_is_typed_and_described(role: Path) -> None:
    _defaults, spec = load(role)
    for name, option in spec.items():
        assert option.get("type"), f"{name} has no type"
        assert option.get("description"), f"{name} has no description"
        if option["type"] == "list":
            assert option.get("elements"), f"{name} is a list without elements"
        if "choices" in option:
            assert option.get("default") in option["choices"], f"{name}'s default is not one of its choices"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_public_names_carry_the_role_prefix(role: Path) -> None:
    defaults, _spec = load(role)
    prefix = "gpuops_" if role.name == "_common" else f"{role.name}_"
    assert [k for k in defaults if not k.startswith(prefix)] == []


REPO = Path(__file__).resolve().parents[2]
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def booleans() -> list[str]:
    names = []
    for role in ROLES:
        _defaults, spec = load(role)
        names += [name for name, option in spec.items() if option["type"] == "bool"]
    return sorted(names)


def expressions(text: str):
    """The Jinja of a task file or template: {{ }} and {% %} spans, and the bare conditions of when/that lines (and
    their list items), without string literals (message text may name a variable)."""
    for match in re.finditer(r"(\{\{|\{%)(.*?)(\}\}|%\})", text, re.DOTALL):
        yield QUOTED.sub("''", match.group(2))
    condition = None
    for line in text.splitlines():
        key = re.match(r"^(\s*)(?:-\s+)?(when|that|failed_when|changed_when|until):\s*(.*)$", line)
        if key:
            value = key.group(3)
            condition = len(key.group(1)) if value.strip() in ("", ">-", ">", "|-", "|") else None
            if condition is None and "{{" not in value:
                yield QUOTED.sub("''", value)
            continue
        if condition is not None:
            item = re.match(r"^(\s*)-\s+(.*)$", line)
            if item and len(item.group(1)) >= condition and "{{" not in line:
                yield QUOTED.sub("''", item.group(2))
            elif line.strip() and len(line) - len(line.lstrip()) <= condition:
                condition = None


def test_every_boolean_is_read_through_the_bool_filter() -> None:
    """A boolean given on the command line (-e name=true) is a string: ansible-core 2.19 refuses it in a condition, and
    a ternary takes "false" as true. So every read of a public boolean goes through `| bool` (after any default)."""
    names = re.compile(r"\b(" + "|".join(booleans()) + r")\b")
    default = re.compile(r"\s*\|\s*default\([^()]*\)")
    through_bool = re.compile(r"\s*\|\s*bool\b")
    found = []
    files = [*REPO.glob("roles/*/tasks/*.yml"), *REPO.glob("roles/*/vars/*.yml"), *REPO.glob("roles/*/templates/*"),
             *REPO.glob("roles/*/handlers/*.yml"), *REPO.glob("playbooks/*.yml")]  # fmt: skip
    for path in sorted(files):
        for expression in expressions(path.read_text()):
            for match in names.finditer(expression):
                after = default.match(expression, match.end())
                if not through_bool.match(expression, after.end() if after else match.end()):
                    found.append(f"{path.relative_to(REPO)}: {expression[match.start() : match.end() + 20]}")
    assert found == []
