"""Where the controller's CPU goes in one ansible-playbook run: a measuring tool, not a test.

    python tests/bench/controller_cpu.py [--top 20] [--profile DIR] -- -i INVENTORY playbooks/site.yml [ARGS ...]

It runs ansible-playbook in this process with the arguments after --, and reads the operating system's accounting
(getrusage) of the main process, which parses the playbooks, computes every host's variables for every task and
handles the results, and of each task's worker, which ansible-core forks from it per task and host to template the
task's arguments, build the module and talk to the node over SSH (the SSH client is the worker's child). It prints
the main process's CPU seconds, the workers' (with their children), and the tasks whose workers took the most CPU,
summed over the hosts.

--profile DIR also writes a cProfile of the main process and of every worker there (main.prof, worker-PID-ACTION.prof;
read them with pstats). The profiler times with the process's CPU clock and slows the run two- to threefold, more in
system time; its shares between functions are what to read, not its totals.

Run it from the repository root with the project's virtual environment on PATH.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def instrument(records: Path, profiles: Path | None) -> None:
    """Each worker writes its task, action and CPU seconds (its own and its children's) to records when it ends."""
    from ansible.executor.process import worker

    run = worker.WorkerProcess._run

    def accounted(self):
        profile = cProfile.Profile(time.process_time) if profiles else None
        if profile:
            profile.enable()
        try:
            return run(self)
        finally:
            if profile:
                profile.disable()
                profile.dump_stats(profiles / f"worker-{os.getpid()}-{self._task.action}.prof")
            entry = {
                "task": self._task.get_name(),
                "action": self._task.action,
                "self": cpu(resource.RUSAGE_SELF),
                "children": cpu(resource.RUSAGE_CHILDREN),
            }
            # One small write per worker, appended: whole lines, never interleaved (O_APPEND).
            with records.open("a") as out:
                out.write(json.dumps(entry) + "\n")

    worker.WorkerProcess._run = accounted


def report(records: Path, main_s: float, wall_s: float, top: int) -> None:
    workers = [json.loads(line) for line in records.read_text().splitlines()]
    own = sum(w["self"] for w in workers)
    children = sum(w["children"] for w in workers)
    print(f"wall {wall_s:.1f} s; main process {main_s:.2f} s CPU; {len(workers)} workers {own:.2f} s CPU "
          f"(+ {children:.2f} s in their children: SSH)")  # fmt: skip
    by_task = collections.defaultdict(list)
    for w in workers:
        by_task[(w["action"], w["task"])].append(w["self"] + w["children"])
    print(f"{'CPU s':>7} {'runs':>5} {'each':>6}  action / task")
    for (action, task), seconds in sorted(by_task.items(), key=lambda item: -sum(item[1]))[:top]:
        print(f"{sum(seconds):7.2f} {len(seconds):5d} {sum(seconds) / len(seconds):6.3f}  {action} / {task}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=20, help="how many tasks to list")
    parser.add_argument("--profile", type=Path, help="write cProfile files of every process here")
    parser.add_argument("playbook_args", nargs=argparse.REMAINDER, help="-- then ansible-playbook's arguments")
    args = parser.parse_args()
    playbook_args = args.playbook_args[1:] if args.playbook_args[:1] == ["--"] else args.playbook_args
    if not playbook_args:
        parser.error("give ansible-playbook's arguments after --")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "workers.jsonl"
        records.touch()
        instrument(records, args.profile)
        from ansible.cli.playbook import main as playbook

        sys.argv = ["ansible-playbook", *playbook_args]
        began = time.monotonic()
        profile = cProfile.Profile(time.process_time) if args.profile else None
        if profile:
            profile.enable()
        try:
            rc = playbook()
        except SystemExit as end:  # ansible-core's command ends in sys.exit with the run's status
            rc = end.code
        if profile:
            profile.disable()
            profile.dump_stats(args.profile / "main.prof")
        report(records, cpu(resource.RUSAGE_SELF), time.monotonic() - began, args.top)
    return rc


if __name__ == "__main__":
    sys.exit(main())
