# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs on the controller: the acceptance stage's results - where they go, each node's verdict, the run document."""

from __future__ import annotations

import getpass
import json
import os
import time
from pathlib import Path

import yaml
from ansible import __version__ as ansible_core_version
from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    acceptance,
    acceptance_report,
    acceptance_results,
)

STEPS = ("check", "node", "run", "report")


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _collection():
    """This collection's name and version, from its MANIFEST.json (installed) or galaxy.yml (a checkout)."""
    root = Path(__file__).resolve().parents[2]
    try:
        info = json.loads((root / "MANIFEST.json").read_text())["collection_info"]
    except (OSError, ValueError, KeyError):
        try:
            info = yaml.safe_load((root / "galaxy.yml").read_text())
        except (OSError, yaml.YAMLError):
            info = None
    if not isinstance(info, dict):
        return {"name": "gpuops.bringup", "version": None}
    return {"name": f"{info.get('namespace')}.{info.get('name')}", "version": info.get("version")}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(("step", "results_dir", "run_id", "evidence", "hardware", "required", "optional", "hosts",
                             "started_at", "result_var", "site", "system_serial"))  # fmt: skip

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(
            argument_spec={
                "step": {"type": "str", "required": True, "choices": list(STEPS)},
                "results_dir": {"type": "str", "default": ""},
                "run_id": {"type": "str", "default": ""},
                "evidence": {"type": "dict"},
                "hardware": {"type": "dict"},
                "required": {"type": "list", "elements": "str", "default": []},
                "optional": {"type": "list", "elements": "str", "default": []},
                "hosts": {"type": "list", "elements": "str", "default": []},
                "started_at": {"type": "str", "default": ""},
                "result_var": {"type": "str", "default": "__acceptance_node"},
                "site": {"type": "str", "default": ""},
                "system_serial": {"type": "str", "default": ""},
            },
        )
        # Results are a record of the run, not managed state: writing them changes no node, and a re-run's new
        # record is no drift. changed stays false so a converged site.yml reports changed=0.
        result["changed"] = False
        return getattr(self, f"_{args['step']}")(result, args, task_vars)

    def _check(self, result, args, task_vars):
        """Where this run's results go, and that they can: before any node is read."""
        results_dir = args["results_dir"] or acceptance_results.default_results_dir(
            task_vars.get("inventory_dir"), os.getcwd()
        )
        problems = [p for p in (acceptance_results.results_dir_problem(results_dir),
                                acceptance_results.run_id_problem(args["run_id"])) if p]  # fmt: skip
        problems += [p for p in map(acceptance_results.node_name_problem, args["hosts"]) if p]
        if problems:
            return {**result, "failed": True, "msg": " | ".join(problems)}
        run_id = args["run_id"] or acceptance_results.new_run_id(results_dir)
        run_dir = os.path.join(os.path.realpath(results_dir), run_id)
        adds = os.path.isdir(run_dir) and bool(args["run_id"])
        return {
            **result,
            "results_dir": os.path.realpath(results_dir),
            "run_id": run_id,
            "run_dir": run_dir,
            "started_at": _now(),
            "msg": f"{'adding to' if adds else 'new'} run {run_id}: {run_dir}"
            + (" (check mode: nothing will be written)" if self._task.check_mode else ""),
        }

    def _node(self, result, args, task_vars):
        node = task_vars["inventory_hostname"]
        hardware = args["hardware"] or {}
        read = args["evidence"] or {}
        document = acceptance.node_results(
            node, hardware, read.get("evidence") or {}, required=args["required"], optional=args["optional"],
            rack=acceptance_results.rack_of(task_vars.get("group_names")), simulated=read.get("simulated") or False,
            run_id=args["run_id"], system_serial=args["system_serial"],
        )  # fmt: skip
        document["finished_at"] = _now()
        if not self._task.check_mode:
            document = acceptance_results.write_node(os.path.join(args["results_dir"], args["run_id"]), document, read)
        return {**result, "results": document, "msg": document["summary"]}

    def _run(self, result, args, task_vars):
        hostvars = task_vars.get("hostvars", {})
        entries = []
        for host in args["hosts"]:
            values = hostvars.get(host, {})
            registered = values.get(args["result_var"]) or {}
            document = registered.get("results") if isinstance(registered, dict) else None
            if isinstance(document, dict) and document.get("node") == host:
                entries.append(acceptance_results.node_entry(document))
                continue
            why = (registered.get("msg") if isinstance(registered, dict) else None) or (
                "the node was unreachable or the stage failed on it before its checks were judged"
            )
            hardware = values.get("gpuops_hardware") or {}
            profile = hardware.get("profile") if isinstance(hardware, dict) else None
            rack = acceptance_results.rack_of(values.get("group_names"))
            entries.append(acceptance_results.unreachable_entry(host, rack, profile, str(why)))
        run = {
            "run_id": args["run_id"],
            "started_at": args["started_at"] or _now(),
            "finished_at": _now(),
            "operator": getpass.getuser(),
            "site": args["site"] or None,
            "collection": _collection(),
            "tools": {"ansible_core": ansible_core_version},
        }
        run_dir = os.path.join(args["results_dir"], args["run_id"])
        if self._task.check_mode:
            return {**result, "nodes": entries, "msg": f"check mode: run {args['run_id']} not written"}
        document = acceptance_results.write_run(run_dir, run, entries)
        reports = acceptance_report.write_reports(run_dir)
        totals = document["totals"]
        return {
            **result,
            "run": document,
            "reports": reports,
            "msg": f"run {args['run_id']}: {totals['accepted']} accepted, {totals['rejected']} rejected, "
            f"{totals['incomplete']} incomplete of {totals['nodes']} node(s); results in {run_dir}; report: "
            f"{reports['html']}",
        }

    def _report(self, result, args, task_vars):
        """The reports of a run already written (copied from another controller too), made again from its files."""
        run_dir = os.path.join(args["results_dir"], args["run_id"]) if args["run_id"] else args["results_dir"]
        if not run_dir or not os.path.isabs(run_dir):
            return {**result, "failed": True, "msg": f"results_dir must be an absolute path, got {run_dir!r}. Fix: "
                    "give the directory of one run, <results_dir>/<run id>, or results_dir and run_id"}  # fmt: skip
        try:
            run, _nodes = acceptance_report.load(run_dir)
        except acceptance_report.ReportError as error:
            return {**result, "failed": True, "msg": str(error)}
        if self._task.check_mode:
            return {**result, "msg": f"check mode: the reports of run {run.get('run_id')} not written"}
        reports = acceptance_report.write_reports(run_dir)
        return {**result, "reports": reports, "msg": f"run {run.get('run_id')}: report {reports['html']}"}
