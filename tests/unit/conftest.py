"""Shared set-up for the unit tests: the collection on sys.path, the captured fixtures, a module harness."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# FQCN imports (ansible_collections.gpuops.bringup...) resolve through this link to the repository root.
sys.path.insert(0, str(ROOT / ".collections"))

from ansible.module_utils import basic  # noqa: E402
from ansible.module_utils.testing import patch_module_args  # noqa: E402


class ModuleExit(Exception):
    """AnsibleModule.exit_json or fail_json was called; result holds what the module returned."""

    def __init__(self, result):
        super().__init__(json.dumps(result, default=str))
        self.result = result


class ModuleFailed(ModuleExit):
    pass


class CommandTable:
    """Stands in for AnsibleModule.get_bin_path and run_command with data tables.

    tools maps a tool name to its path; outputs maps an argv tuple (path
    first) to (rc, stdout, stderr). An argv the table does not hold fails the
    test: the module ran a command nobody expected.
    """

    def __init__(self, tools, outputs):
        self.tools = tools
        self.outputs = outputs
        self.calls = []

    def get_bin_path(self, arg, required=False, opt_dirs=None):
        return self.tools.get(arg)

    def run_command(self, args, **kwargs):
        self.calls.append((tuple(args), kwargs.get("environ_update")))
        if tuple(args) not in self.outputs:
            pytest.fail(f"unexpected command {args!r}")
        return self.outputs[tuple(args)]


@pytest.fixture
def command_table():
    return CommandTable


@pytest.fixture
def run_module(monkeypatch):
    """Run a module's main() with module args and a CommandTable; return (result, failed)."""

    def run(main, args, table, check_mode=False):
        def exit_json(_module, **result):
            raise ModuleExit(result)

        def fail_json(_module, msg, **result):
            raise ModuleFailed({"msg": msg, **result})

        monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
        monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
        monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda _m, *a, **kw: table.get_bin_path(*a, **kw))
        monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda _m, *a, **kw: table.run_command(*a, **kw))
        with patch_module_args({**args, "_ansible_check_mode": check_mode}), pytest.raises(ModuleExit) as caught:
            main()
        return caught.value.result, isinstance(caught.value, ModuleFailed)

    return run


@pytest.fixture
def broken_inventory(tmp_path):
    """A copy of inventory/example.yml with three defects: a01-gpu01 in two hardware profiles, a02-inf02 in no
    rack, and gpu.count 18 overriding the hgx_h200_8gpu profile. Returns the inventory file."""
    inventory = yaml.safe_load((ROOT / "inventory" / "example.yml").read_text())
    groups = inventory["all"]["children"]
    groups["pcie_l40s_4gpu"]["hosts"]["a01-gpu01"] = None
    del groups["rack_a02"]["hosts"]["a02-inf02"]
    shutil.copytree(ROOT / "inventory" / "group_vars", tmp_path / "group_vars")
    # The site overrides one value of the collection's profile, wrongly.
    (tmp_path / "group_vars" / "hgx_h200_8gpu.yml").write_text(
        yaml.safe_dump({"gpuops_hardware_overrides": {"gpu": {"count": 18}}})
    )
    path = tmp_path / "example.yml"
    path.write_text(yaml.safe_dump(inventory))
    return path


@pytest.fixture
def ansible_env(tmp_path):
    """Environment for ansible-* subprocesses: the collection from this checkout, JSON output, no colour."""
    config = tmp_path / "ansible.cfg"
    config.write_text(
        "[defaults]\n"
        f"collections_path = {ROOT / '.collections'}\n"
        "collections_scan_sys_path = true\n"
        "stdout_callback = ansible.posix.json\n"
        "[inventory]\n"
        "unparsed_is_failed = true\n"
    )
    return {**os.environ, "ANSIBLE_CONFIG": str(config), "NO_COLOR": "1"}
