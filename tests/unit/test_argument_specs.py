"""Each role's meta/argument_specs.yml matches its defaults/main.yml, key for key and value for value."""

from __future__ import annotations

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
