"""What a run is doing, from ansible-runner's events: each node's state in each stage (running, ok, changed, failed,
unreachable), the task it runs and for how long, why a node failed, and the acceptance report's path.

Progress.feed takes one event (as ansible-runner hands it to an event handler) and returns the lines a log shows for
it; the live table reads the same state. No terminal and no clock of its own: the caller passes the time, so a
recorded run replays the same."""

from __future__ import annotations

import re

from gpuops import stages

RUNNING, OK, CHANGED, FAILED, UNREACHABLE = "running", "ok", "changed", "failed", "unreachable"
# A node's state in a stage, worst last: a stage's cell keeps the worst it saw.
ORDER = (RUNNING, OK, CHANGED, UNREACHABLE, FAILED)
STOPPED = (FAILED, UNREACHABLE)
# The acceptance stage's last message names the run's report ("report: <path>", acceptance_results step=run), as
# does playbooks/report.yml's ("report <path>").
_REPORT = re.compile(r"\breport:? (/\S+\.html)")
REASON_LIMIT = 400
# A task running longer than this shows in the log, again every LONG_TASK_S.
LONG_TASK_S = 30.0
# The rollout brake (roles/_common/tasks/batch_gate.yml) fails every node of a batch in which one failed, to stop the
# play: those nodes finished their stage; the run halted them.
_BRAKE = re.compile(r"_common/tasks/batch_gate\.yml:[0-9]+$")


def _one_line(text, limit=REASON_LIMIT):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reason(res):
    """Why a task failed, as one line: its msg (with the command's last two stderr lines where the msg is only
    "non-zero return code": apt's warning with the address, then its error), else the stderr, else its rc."""
    if not isinstance(res, dict):
        return "the task failed"
    stderr = [line for line in str(res.get("stderr") or "").splitlines() if line.strip()]
    msg = str(res.get("msg") or "")
    if msg and stderr and msg.strip().lower() == "non-zero return code":
        return _one_line(f"{msg}: {' '.join(stderr[-2:])}")
    for value in (msg, "\n".join(stderr[-3:]), res.get("reason")):
        if value:
            return _one_line(value)
    return f"the task failed (rc {res['rc']})" if "rc" in res else "the task failed"


class Cell:
    """A node in one stage."""

    def __init__(self, now):
        self.state = RUNNING
        self.started = now
        self.finished = None
        self.changed = 0

    def worst(self, state):
        if ORDER.index(state) > ORDER.index(self.state):
            self.state = state

    def elapsed(self, now):
        return (self.finished if self.finished is not None else now) - self.started

    def as_dict(self, now):
        return {"state": self.state, "changed": self.changed, "elapsed_s": round(self.elapsed(now), 1)}


class Progress:
    def __init__(self, expected=()):
        # The stages this run was asked for, in order: a node stopped before any of them started stopped at the first.
        self.expected = list(expected)
        self.cells = {}  # node -> {stage: Cell}
        self.stage = None  # the stage whose play runs, None in the plays around them (inputs, checks)
        self.running = {}  # node -> (task, started, last shown)
        self.failures = {}  # node -> {"stage", "task", "reason", "state"}
        self.pending = {}  # node -> its failure in a play of no stage, until the next stage's play starts
        self.halted = {}  # node -> {"stage", "reason"}: the rollout brake stopped it after its stage
        self.seen = set()  # every node the run processed (playbook_on_stats)
        self.report = None
        self.done = False

    # -- events
    def feed(self, event, now):
        """Take one ansible-runner event; the log lines it makes."""
        kind = event.get("event")
        data = event.get("event_data") or {}
        host = data.get("host")
        if kind == "playbook_on_play_start":
            return self._play(data.get("name") or data.get("play") or "", now)
        if kind == "runner_on_start" and host:
            self._cell(host, now)
            self.running[host] = (data.get("task") or "", now, now)
            return []
        if kind == "runner_on_async_poll" and host:
            return self.tick(now, only=host)
        if kind in ("runner_on_ok", "runner_on_skipped") and host:
            return self._ok(host, data, now)
        if kind == "runner_on_failed" and host and not data.get("ignore_errors"):
            if _BRAKE.search(str(data.get("task_path") or "")):
                return self._halted(host, data)
            return self._stopped(host, FAILED, data, now)
        if kind == "runner_on_unreachable" and host:
            return self._stopped(host, UNREACHABLE, data, now)
        if kind == "playbook_on_stats":
            processed = data.get("processed")
            self.seen.update(processed if isinstance(processed, dict) else ())
            return self._finish(now)
        return []

    def _play(self, name, now):
        self._close_stage(now)
        self.stage = stages.BY_PLAY.get(name)
        if self.stage is None:
            return []
        # A node that failed in the plays before this stage (its inputs) stopped at this stage.
        for host, failure in self.pending.items():
            self.failures[host] = {**failure, "stage": self.stage}
        self.pending = {}
        return [f"stage {self.stage}: {stages.TITLES[self.stage]}"]

    def _cell(self, host, now):
        if self.stage is None:
            return None
        return self.cells.setdefault(host, {}).setdefault(self.stage, Cell(now))

    def _ok(self, host, data, now):
        cell = self._cell(host, now)
        self.running.pop(host, None)
        res = data.get("res") if isinstance(data.get("res"), dict) else {}
        if cell is not None and res.get("changed"):
            cell.changed += 1
            cell.worst(CHANGED)
        found = _REPORT.search(str(res.get("msg") or ""))
        if found and found.group(1) != self.report:
            self.report = found.group(1)
            return [f"report: {self.report}"]
        return []

    def _stopped(self, host, state, data, now):
        self.running.pop(host, None)
        failure = {"task": data.get("task") or "", "reason": _reason(data.get("res")), "state": state}
        cell = self._cell(host, now)
        if cell is None:
            self.pending.setdefault(host, failure)
            where = "before its stage"
        else:
            cell.worst(state)
            cell.finished = now
            self.failures.setdefault(host, {**failure, "stage": self.stage})
            where = f"in {self.stage}"
        return [f"{host}: {state.upper()} {where}, task {failure['task']!r}: {failure['reason']}"]

    def _halted(self, host, data):
        self.running.pop(host, None)
        res = data.get("res") if isinstance(data.get("res"), dict) else {}
        self.halted.setdefault(
            host, {"stage": self.stage, "reason": _one_line(res.get("msg") or "the rollout stopped")}
        )
        return (
            [f"{host}: finished {self.stage}; the rollout stops after its batch"] if host not in self.failures else []
        )

    def _close_stage(self, now):
        for host, by_stage in self.cells.items():
            cell = by_stage.get(self.stage)
            if cell is not None and cell.finished is None:
                cell.finished = now
                if cell.state == RUNNING:
                    cell.state = OK
            self.running.pop(host, None)

    def _finish(self, now):
        self._close_stage(now)
        self.stage = None
        # Failed before any stage this run was asked for started: stopped at the first of those that never ran.
        started = {s for by_stage in self.cells.values() for s in by_stage}
        first = next((s for s in self.expected if s not in started), self.expected[0] if self.expected else None)
        for host, failure in self.pending.items():
            self.failures[host] = {**failure, "stage": first}
        self.pending = {}
        self.done = True
        return []

    def tick(self, now, only=None):
        """Log lines for tasks running longer than LONG_TASK_S, once per LONG_TASK_S each."""
        lines = []
        for host, (task, started, shown) in sorted(self.running.items()):
            if (only is None or host == only) and now - started >= LONG_TASK_S and now - shown >= LONG_TASK_S:
                self.running[host] = (task, started, now)
                lines.append(f"{host}: {self.stage or 'checks'}: {task!r} running for {duration(now - started)}")
        return lines

    # -- results
    def states(self, now):
        return {host: {s: c.as_dict(now) for s, c in by_stage.items()} for host, by_stage in sorted(self.cells.items())}

    def stopped(self):
        """{node: its failure} of every node that failed or was unreachable."""
        return dict(sorted({**self.failures, **self.pending}.items()))

    def unfinished(self):
        """{node: the first stage of those asked for it did not finish} of every node the run processed that did not
        finish them all: failed, unreachable, halted by the rollout brake after its stage, or never reached (a later
        batch). Where nothing stopped, nothing is unfinished (a node a stage leaves out by design is no fault)."""
        if not (self.failures or self.pending or self.halted):
            return {}
        found = {}
        for host in sorted(self.seen | set(self.cells) | set(self.failures) | set(self.pending)):
            by_stage = self.cells.get(host, {})
            for stage in self.expected:
                cell = by_stage.get(stage)
                if cell is None or cell.state in STOPPED or cell.finished is None:
                    found[host] = stage
                    break
        return found

    def summary_lines(self):
        """One line per node: what it ran, or where and why it stopped."""
        lines = []
        stopped = self.stopped()
        for host in sorted(set(self.cells) | set(stopped)):
            failure = stopped.get(host)
            if failure:
                where = f"in {failure['stage']}" if failure.get("stage") else "before any stage"
                lines.append(f"{host}: {failure['state'].upper()} {where}: {failure['reason']}")
            elif host in self.halted:
                done = ", ".join(f"{s} {c.state}" for s, c in self.cells[host].items())
                lines.append(f"{host}: halted by the rollout brake after {self.halted[host]['stage']} ({done})")
            else:
                done = ", ".join(f"{s} {c.state}" for s, c in self.cells[host].items())
                lines.append(f"{host}: ok ({done})")
        return lines


def duration(seconds):
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
