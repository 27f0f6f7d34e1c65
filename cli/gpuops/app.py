"""gpuops: bring GPU nodes up with gpuops.bringup's playbooks through ansible-runner, watch them, resume them.

    gpuops up -i INVENTORY [--limit NODES] [--stage STAGE ...] [--check]   site.yml, or the stages chosen
    gpuops accept -i INVENTORY [--limit NODES]                             the acceptance stage
    gpuops report [RUN]                                                    make a run's acceptance reports again
    gpuops runs                                                            every run: when, what, which nodes failed
    gpuops resume RUN                                                      the failed nodes again, from their stage
    gpuops demo                                                            the built-in rack (in a checkout)

Each run keeps ansible-runner's private data directory (events, stdout, status, rc) and gpuops.json under the runs
directory (--runs-dir, $GPUOPS_RUNS_DIR, or ./gpuops-runs). The exit status is 0 when every node ended ok, 2 when any
node failed or was unreachable, ansible-playbook's own status for other failures.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from gpuops import __version__, runs, stages
from gpuops.progress import Progress
from gpuops.view import Live, Plain

# A checkout of the repository: its ansible.cfg finds the collection through .collections (an installed collection
# is found as Ansible finds collections).
CHECKOUT = Path(__file__).resolve().parents[2]
TICK_S = 5.0


def _checkout():
    return CHECKOUT if (CHECKOUT / "galaxy.yml").is_file() and (CHECKOUT / ".collections").is_dir() else None


def _now():
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _passthrough(args):
    """The ansible-playbook options given to the command, as they are."""
    extra = []
    for value in args.extra_vars or ():
        extra += ["-e", value]
    for value in args.vault_id or ():
        extra += ["--vault-id", value]
    if args.vault_password_file:
        extra += ["--vault-password-file", args.vault_password_file]
    if getattr(args, "check", False):
        extra.append("--check")
    if getattr(args, "diff", False):
        extra.append("--diff")
    return extra


def execute(args, playbook, inventory, selection, limit=None, resumed=None, out=sys.stdout):
    """Run playbook through ansible-runner with live progress; the run's document (saved as gpuops.json)."""
    import ansible_runner

    where = runs.root(args.runs_dir)
    run_id, run_dir = runs.new(where)
    tags = stages.tags(selection) if selection and selection != list(stages.TAGS) else None
    passthrough = _passthrough(args)
    document = {
        "run_id": run_id, "command": args.command, "playbook": playbook, "inventory": inventory, "limit": limit,
        "stages": selection, "tags": tags, "options": passthrough, "resumed": resumed, "started_at": _now(),
        "version": __version__,
    }  # fmt: skip
    runs.save(run_dir, document)
    # ansible-playbook of the command's own environment (a virtual environment need not be activated).
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])
    env = {"ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", "PATH": path}
    if _checkout():
        env["ANSIBLE_CONFIG"] = str(_checkout() / "ansible.cfg")
    progress = Progress(selection)
    view = _view(args, progress, selection, out)
    lock = threading.Lock()
    stop = threading.Event()

    def handler(event):
        with lock:
            view.lines(progress.feed(event, time.monotonic()))
        return True

    def ticker():
        while not stop.wait(TICK_S):
            with lock:
                view.lines(progress.tick(time.monotonic()))

    view.start(
        f"run {run_id}: {playbook}" + (f" --limit {limit}" if limit else "") + (f" --tags {tags}" if tags else "")
    )
    thread = threading.Thread(target=ticker, daemon=True)
    thread.start()
    try:
        result = ansible_runner.run(
            private_data_dir=str(run_dir), project_dir=os.getcwd(), playbook=playbook, inventory=inventory,
            limit=limit, tags=tags, cmdline=shlex.join(passthrough) if passthrough else None, envvars=env,
            ident="ansible", quiet=True, event_handler=handler, verbosity=args.verbose or None,
        )  # fmt: skip
    finally:
        stop.set()
        thread.join()
        view.stop()
    now = time.monotonic()
    stopped = progress.stopped()
    document.update(
        finished_at=_now(), status=result.status, ansible_rc=result.rc, nodes=progress.states(now), stopped=stopped,
        halted=progress.halted, unfinished=progress.unfinished(), report=progress.report,
        artifacts=str(run_dir / "artifacts" / "ansible"),
    )  # fmt: skip
    document["rc"] = 0 if result.rc == 0 and not stopped else (2 if stopped else result.rc or 1)
    runs.save(run_dir, document)
    _summary(args, document, progress, out)
    return document


def _view(args, progress, selection, out):
    mode = args.progress
    if mode == "auto":
        mode = "live" if out.isatty() and not args.json and not os.environ.get("CI") else "plain"
    # With --json the progress goes to stderr: stdout is the document alone.
    stream = sys.stderr if args.json else out
    return Live(progress, selection, stream) if mode == "live" else Plain(stream)


def _summary(args, document, progress, out):
    if args.json:
        out.write(json.dumps(document, indent=1, sort_keys=True) + "\n")
        return
    lines = progress.summary_lines()
    lines.append(f"run {document['run_id']}: {document['status']} (ansible-playbook rc {document['ansible_rc']}); "
                 f"artifacts in {document['artifacts']}")  # fmt: skip
    if document.get("report"):
        lines.append(f"report: {document['report']}")
    if document.get("unfinished"):
        lines.append(f"resume the nodes that did not finish: gpuops resume {document['run_id']}")
    out.write("\n".join(lines) + "\n")


def _inventories(values):
    found = []
    for value in values or ():
        path = Path(value)
        # An inventory is a path or a host list ("a,b,"); paths are made absolute (runner runs elsewhere).
        found.append(str(path.absolute()) if path.exists() else value)
    return found


def cmd_up(args):
    selection = stages.selected(args.stage)
    for notice in stages.deprecations(args.stage):
        sys.stderr.write(f"gpuops: {notice}\n")
    return execute(args, "gpuops.bringup.site", _inventories(args.inventory), selection, args.limit)["rc"]


def cmd_accept(args):
    return execute(args, "gpuops.bringup.acceptance", _inventories(args.inventory), ["acceptance"], args.limit)["rc"]


def cmd_resume(args):
    where = runs.root(args.runs_dir)
    before = runs.load(where, args.run)
    nodes, selection = runs.resume_plan(before)
    # The earlier run's own options (extra vars, vault ids, check mode) go again, before any given now.
    earlier = _options(before.get("options") or [])
    args.extra_vars = [*earlier["-e"], *(args.extra_vars or [])]
    args.vault_id = [*earlier["--vault-id"], *(args.vault_id or [])]
    args.vault_password_file = args.vault_password_file or next(iter(earlier["--vault-password-file"]), None)
    args.check = args.check or bool(earlier["--check"])
    args.diff = bool(earlier["--diff"])
    return execute(args, before["playbook"], before["inventory"], selection, ",".join(nodes),
                   resumed=before["run_id"])["rc"]  # fmt: skip


def _options(options):
    """{option: [its values]} of a run's passed-through options (flags: [True])."""
    found = {"-e": [], "--vault-id": [], "--vault-password-file": [], "--check": [], "--diff": []}
    items = iter(options)
    for item in items:
        if item in ("--check", "--diff"):
            found[item].append(True)
        elif item in found:
            found[item].append(next(items, ""))
    return found


def cmd_runs(args):
    found = runs.listing(runs.root(args.runs_dir))
    if args.json:
        sys.stdout.write(json.dumps(found, indent=1, sort_keys=True) + "\n")
        return 0
    for doc in found:
        stopped = ", ".join(f"{n} ({f.get('stage') or '-'})" for n, f in (doc.get("stopped") or {}).items())
        what = doc.get("command", "?") + (f" --limit {doc['limit']}" if doc.get("limit") else "")
        sys.stdout.write(f"{doc['run_id']}  {doc.get('started_at', '')}  {what:30}  rc {doc.get('rc', '-')}"
                         f"{'  stopped: ' + stopped if stopped else ''}\n")  # fmt: skip
    if not found:
        sys.stdout.write(f"no runs in {runs.root(args.runs_dir)}\n")
    return 0


def cmd_report(args):
    target = args.run
    where = runs.root(args.runs_dir)
    if target is None or runs.RUN_ID.fullmatch(target):
        # A run of this command: the acceptance results directory its report is in (the latest run with one).
        candidates = [runs.load(where, target)] if target else list(reversed(runs.listing(where)))
        report = next((d.get("report") for d in candidates if d.get("report")), None)
        if not report:
            raise runs.RunError("no run of gpuops here made an acceptance report; name a results run directory")
        target = str(Path(report).parent)
    run_dir = str(Path(target).absolute())
    args.extra_vars = [json.dumps({"report_run_dir": run_dir})]
    return execute(args, "gpuops.bringup.report", ["localhost,"], [], None)["rc"]


def cmd_demo(args):
    checkout = _checkout()
    if checkout is None:
        raise runs.RunError("the demo runs the bench of a checkout of the repository (make demo there)")
    bench = [sys.executable, str(checkout / "tests" / "bench" / "bench.py")]
    for step in ([*bench, "rack", "up"],
                 ["ansible-playbook", "-i", "inventory/local.yml", "tests/bench/control_plane.yml"]):  # fmt: skip
        subprocess.run(
            step, cwd=checkout, check=True, env={**os.environ, "ANSIBLE_CONFIG": str(checkout / "ansible.cfg")}
        )
    return execute(args, "gpuops.bringup.site", [str(checkout / "inventory" / "local.yml")], list(stages.TAGS))["rc"]


def parser():
    top = argparse.ArgumentParser(
        prog="gpuops", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    top.add_argument("--version", action="version", version=f"gpuops {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--runs-dir", help="where runs are kept (default: $GPUOPS_RUNS_DIR or ./gpuops-runs)")
    common.add_argument("--json", action="store_true", help="print the run's document as JSON (progress on stderr)")
    common.add_argument("--progress", choices=("auto", "live", "plain"), default="auto",
                        help="a live table on a terminal, one line per event elsewhere (auto)")  # fmt: skip
    common.add_argument("-e", "--extra-vars", action="append", help="passed to ansible-playbook")
    common.add_argument("--vault-id", action="append", help="passed to ansible-playbook")
    common.add_argument("--vault-password-file", help="passed to ansible-playbook")
    common.add_argument("-v", "--verbose", action="count", default=0, help="ansible-playbook's verbosity")
    sub = top.add_subparsers(dest="command", required=True)
    for name, func, helptext in (("up", cmd_up, "run site.yml, or the stages chosen"),
                                 ("accept", cmd_accept, "run the acceptance stage")):  # fmt: skip
        command = sub.add_parser(name, parents=[common], help=helptext)
        command.add_argument("-i", "--inventory", action="append", required=True, help="the rack's inventory")
        command.add_argument("--limit", help="only these nodes (Ansible's pattern)")
        command.add_argument("--check", action="store_true", help="a dry run: change nothing, show what would")
        command.add_argument("--diff", action="store_true")
        if name == "up":
            command.add_argument("--stage", action="append",
                                 help=f"one of {', '.join(stages.TAGS)} (repeatable; the old names "
                                      f"{', '.join(stages.ALIASES)} are deprecated)")  # fmt: skip
        command.set_defaults(func=func)
    command = sub.add_parser("resume", parents=[common], help="run the nodes that stopped in RUN again")
    command.add_argument("run")
    command.add_argument("--check", action="store_true")
    command.set_defaults(func=cmd_resume)
    command = sub.add_parser("report", parents=[common], help="make a run's acceptance reports again")
    command.add_argument("run", nargs="?", help="a run id of gpuops, or an acceptance run's results directory")
    command.set_defaults(func=cmd_report)
    sub.add_parser("runs", parents=[common], help="list the runs").set_defaults(func=cmd_runs)
    sub.add_parser("demo", parents=[common], help="the built-in rack of a checkout").set_defaults(func=cmd_demo)
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (runs.RunError, stages.StageError) as error:
        sys.stderr.write(f"gpuops: {error}\n")
        return 1
