"""The variable tables of the role READMEs, generated from each role's meta/argument_specs.yml.

A README's table sits between two marker lines; everything else in the README is written by hand. The spec is the
one place a variable's type, default and meaning are written (ansible-doc, argument validation and the README read
it); tests/unit/test_role_readmes.py fails when a README's table differs from what this script writes.

    .venv/bin/python tests/bench/role_readmes.py            # rewrite the tables
    .venv/bin/python tests/bench/role_readmes.py --check    # exit 1 naming each README that is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- variables: generated from meta/argument_specs.yml by tests/bench/role_readmes.py; edit the spec -->"
END = "<!-- end of variables -->"
# Ansible's documentation markup, as Markdown: C(code), V(value), O(option), I(italic), B(bold), U(url), L(text,url).
MARKUP = (
    (re.compile(r"[CVOE]\(([^()]*(?:\([^()]*\)[^()]*)*)\)"), r"`\1`"),
    (re.compile(r"I\(([^()]*)\)"), r"*\1*"),
    (re.compile(r"B\(([^()]*)\)"), r"**\1**"),
    (re.compile(r"U\(([^()]*)\)"), r"<\1>"),
    (re.compile(r"L\(([^(),]*),\s*([^()]*)\)"), r"[\1](\2)"),
)


def markdown(text):
    """A description (a string or a list of paragraphs) as one Markdown table cell."""
    text = " ".join(text) if isinstance(text, list) else str(text)
    for pattern, replacement in MARKUP:
        text = pattern.sub(replacement, text)
    return " ".join(text.split()).replace("|", "\\|")


def default_cell(option):
    if option.get("required"):
        return "required"
    if "default" not in option:
        return "(unset)"
    value = option["default"]
    text = value if isinstance(value, str) and "{{" in value else json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, dict)) and value:
        # A flow-style YAML value reads as it is written in an inventory.
        text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16, allow_unicode=True).strip()
    return f"`{text}`".replace("|", "\\|")


def type_cell(option):
    kind = option.get("type", "str")
    return f"list of {option['elements']}" if kind == "list" and option.get("elements") else kind


def table(spec):
    """The Markdown table of one role's entry points: main first, every other with its own heading."""
    lines, shown = [], set()
    points = spec["argument_specs"]
    for point in sorted(points, key=lambda name: (name != "main", name)):
        options = points[point].get("options") or {}
        if point != "main":
            # Another entry point's variables are mostly main's: named, not described again.
            again = [name for name in options if name in shown]
            if again:
                named = ", ".join(f"`{name}`" for name in again)
                lines += ["", f"Entry point `{point}` (`tasks_from: {point}`) takes {named} as above."]
            options = {name: option for name, option in options.items() if name not in shown}
            if options:
                lines += ["", f"Entry point `{point}` only:", ""]
        if not options:
            continue
        lines += ["| Variable | Type | Default | Meaning |", "|---|---|---|---|"]
        shown |= set(options)
        for name, option in options.items():
            meaning = markdown(option.get("description", ""))
            if option.get("choices"):
                meaning += " One of " + ", ".join(f"`{choice}`" for choice in option["choices"]) + "."
            lines.append(f"| `{name}` | {type_cell(option)} | {default_cell(option)} | {meaning} |")
    return "\n".join(lines)


def rendered(role):
    """(the README's text now, its text with the table as the spec writes it) for a role directory."""
    readme = (role / "README.md").read_text()
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"{role / 'README.md'} has no variables table markers: put {BEGIN!r} and {END!r} around it")
    before, rest = readme.split(BEGIN, 1)
    _old, after = rest.split(END, 1)
    return readme, f"{before}{BEGIN}\n{table(spec)}\n{END}{after}"


def roles():
    return sorted(path.parent.parent for path in ROOT.glob("roles/*/meta/argument_specs.yml"))


def stale():
    """The READMEs whose table differs from their spec's."""
    return [role / "README.md" for role in roles() if len(set(rendered(role))) == 2]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a README is out of date")
    args = parser.parse_args(argv)
    if args.check:
        out_of_date = stale()
        for path in out_of_date:
            print(f"{path.relative_to(ROOT)}: its variables table differs from meta/argument_specs.yml")
        return 1 if out_of_date else 0
    for role in roles():
        old, new = rendered(role)
        if old != new:
            (role / "README.md").write_text(new)
            print(f"{(role / 'README.md').relative_to(ROOT)}: table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
