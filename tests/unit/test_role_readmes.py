"""The role READMEs' variable tables are what tests/bench/role_readmes.py writes from meta/argument_specs.yml."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "tests" / "bench" / "role_readmes.py"
_spec = importlib.util.spec_from_file_location("role_readmes_under_test", SOURCE)
role_readmes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(role_readmes)

SPEC = """---
argument_specs:
  main:
    options:
      demo_mode:
        type: str
        choices: [auto, host]
        default: auto
        description: >-
          Memory of the check: C(auto) or I(host); see L(the guide,https://example.net) or U(https://example.net).
          B(Never) C(a|b).
      demo_list:
        type: list
        elements: dict
        default: [{name: a, uris: [x]}]
        description:
          - First paragraph.
          - Second paragraph.
      demo_name:
        type: str
        default: "{{ inventory_hostname }}"
        description: The node's name.
      demo_token:
        type: str
        required: true
        description: From the vault.
  runtime:
    options:
      demo_mode:
        type: str
        description: Same.
      demo_extra:
        type: int
        default: 3
        description: Only here.
"""


def test_every_role_readme_s_table_is_its_spec_s():
    """A README whose table is out of date: run `.venv/bin/python tests/bench/role_readmes.py` and commit it."""
    assert role_readmes.stale() == []
    assert len(role_readmes.roles()) >= 9


def test_a_table_from_a_spec():
    import yaml

    lines = role_readmes.table(yaml.safe_load(SPEC)).splitlines()
    assert lines[:2] == ["| Variable | Type | Default | Meaning |", "|---|---|---|---|"]
    assert lines[2] == (
        '| `demo_mode` | str | `"auto"` | Memory of the check: `auto` or *host*; see [the guide](https://example.net) '
        "or <https://example.net>. **Never** `a\\|b`. One of `auto`, `host`. |"
    )
    assert lines[3] == "| `demo_list` | list of dict | `[{name: a, uris: [x]}]` | First paragraph. Second paragraph. |"
    assert lines[4] == "| `demo_name` | str | `{{ inventory_hostname }}` | The node's name. |"
    assert lines[5] == "| `demo_token` | str | required | From the vault. |"
    # Another entry point names main's variables and describes only its own.
    assert lines[6:] == [
        "",
        "Entry point `runtime` (`tasks_from: runtime`) takes `demo_mode` as above.",
        "",
        "Entry point `runtime` only:",
        "",
        "| Variable | Type | Default | Meaning |",
        "|---|---|---|---|",
        "| `demo_extra` | int | `3` | Only here. |",
    ]


def test_a_stale_readme_is_found_and_rewritten(tmp_path, monkeypatch, capsys):
    role = tmp_path / "roles" / "demo"
    (role / "meta").mkdir(parents=True)
    (role / "meta" / "argument_specs.yml").write_text(SPEC)
    readme = role / "README.md"
    readme.write_text(f"# demo\n\n## Variables\n{role_readmes.BEGIN}\n| old |\n{role_readmes.END}\n\nHand-written.\n")
    monkeypatch.setattr(role_readmes, "ROOT", tmp_path)
    assert role_readmes.main(["--check"]) == 1
    assert "roles/demo/README.md: its variables table differs from meta/argument_specs.yml" in capsys.readouterr().out
    assert role_readmes.main([]) == 0
    text = readme.read_text()
    assert "| `demo_extra` | int | `3` | Only here. |" in text
    assert text.endswith(f"{role_readmes.END}\n\nHand-written.\n")
    assert role_readmes.main(["--check"]) == 0


def test_a_readme_without_markers_is_refused(tmp_path, monkeypatch):
    role = tmp_path / "roles" / "demo"
    (role / "meta").mkdir(parents=True)
    (role / "meta" / "argument_specs.yml").write_text(SPEC)
    (role / "README.md").write_text("# demo\n")
    monkeypatch.setattr(role_readmes, "ROOT", tmp_path)
    with pytest.raises(SystemExit, match="has no variables table markers"):
        role_readmes.main(["--check"])
