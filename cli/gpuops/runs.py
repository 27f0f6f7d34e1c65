"""The runs directory: one private data directory per run (ansible-runner's artifacts: events, stdout, status, rc),
and gpuops.json beside them, what the command asked for and how each node ended; listing, and what a resume runs."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from gpuops import stages

RUN_FILE = "gpuops.json"
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z(-[0-9]{1,3})?")


class RunError(Exception):
    """A run the command cannot find, read or resume."""


def root(explicit=None):
    """The runs directory: --runs-dir, else $GPUOPS_RUNS_DIR, else gpuops-runs in the working directory."""
    return Path(explicit or os.environ.get("GPUOPS_RUNS_DIR") or Path.cwd() / "gpuops-runs").absolute()


def new(where, now=None):
    """(run id, its directory), made private (0700: the artifacts hold the command line and every task's result)."""
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    base = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        run_id = base if n == 0 else f"{base}-{n}"
        try:
            (where / run_id).mkdir(mode=0o700)
        except FileExistsError:
            continue
        return run_id, where / run_id
    raise RunError(f"no free run id for {base} in {where}")


def save(run_dir, document):
    path = Path(run_dir) / RUN_FILE
    fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1, sort_keys=True)
    os.replace(path.with_suffix(".tmp"), path)


def load(where, run_id):
    if not RUN_ID.fullmatch(str(run_id)):
        raise RunError(f"{run_id!r} is no run id (as `gpuops runs` lists them, e.g. 20261206T101500Z)")
    path = where / run_id / RUN_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RunError(f"run {run_id}: cannot read {path} ({error})") from None
    if not isinstance(document, dict):
        raise RunError(f"run {run_id}: {path} holds no run")
    return document


def listing(where):
    """Every run's document, oldest first (unreadable ones left out)."""
    found = []
    for path in sorted(where.glob("*")) if where.is_dir() else []:
        if RUN_ID.fullmatch(path.name):
            try:
                found.append(load(where, path.name))
            except RunError:
                continue
    return found


def resume_plan(document):
    """(the nodes to run again, the stages to run them through) of a run: every node that did not finish the stages
    asked for (failed, unreachable, halted by the rollout brake, not reached), from the earliest stage one of them did
    not finish to the last stage the run was asked for. A run recorded with the stages' old names (baseline, driver)
    resumes under their names now."""
    unfinished = document.get("unfinished") or {}
    if not unfinished:
        raise RunError(f"run {document.get('run_id')}: every node finished; nothing to resume")
    asked = [stages.canonical(stage) for stage in document.get("stages") or stages.TAGS]
    at = [stages.canonical(stage) for stage in unfinished.values() if stages.canonical(stage) in asked]
    first = min(at, key=asked.index) if at else asked[0]
    return sorted(unfinished), stages.from_stage(first, asked)
