"""How a run's progress is shown: one line per event for logs and CI (Plain), a live table of nodes and stages on a
terminal (Live, with rich)."""

from __future__ import annotations

import time

from gpuops import stages
from gpuops.progress import FAILED, RUNNING, UNREACHABLE, duration


class Plain:
    """Timestamped lines, flushed as they come: what CI logs keep."""

    def __init__(self, stream):
        self.stream = stream

    def start(self, title):
        self.lines([title])

    def lines(self, lines):
        for line in lines:
            self.stream.write(f"{time.strftime('%H:%M:%S')} {line}\n")
        if lines:
            self.stream.flush()

    def stop(self):
        """Nothing to close: every line is written already."""


STYLE = {RUNNING: "cyan", "ok": "green", "changed": "yellow", FAILED: "bold red", UNREACHABLE: "bold magenta"}


class Live:
    """A table of nodes x stages redrawn twice a second: each cell the node's state in the stage and how long it took
    (or runs), the task a node runs now and for how long; the log's lines scroll above it."""

    def __init__(self, progress, selection, stream):
        from rich.console import Console

        self.progress = progress
        self.selection = selection or list(stages.TAGS)
        self.console = Console(file=stream, force_terminal=True, soft_wrap=True)
        self.live = None
        self.title = ""

    def table(self):
        from rich.table import Table

        now = time.monotonic()
        table = Table(title=self.title, title_justify="left", expand=False)
        table.add_column("node", no_wrap=True)
        for tag in self.selection:
            table.add_column(stages.TITLES[tag])
        table.add_column("now")
        for host in sorted(set(self.progress.cells) | set(self.progress.stopped())):
            by_stage = self.progress.cells.get(host, {})
            row = [host]
            for tag in self.selection:
                cell = by_stage.get(tag)
                if cell is None:
                    row.append("")
                    continue
                text = cell.state + (f" ({cell.changed})" if cell.changed else "") + f" {duration(cell.elapsed(now))}"
                row.append(f"[{STYLE.get(cell.state, '')}]{text}[/]")
            task = self.progress.running.get(host)
            row.append(f"{task[0]} ({duration(now - task[1])})" if task else "")
            table.add_row(*row)
        return table

    def start(self, title):
        from rich.live import Live as RichLive

        self.title = title
        self.live = RichLive(get_renderable=self.table, console=self.console, refresh_per_second=2, transient=False)
        self.live.start()

    def lines(self, lines):
        for line in lines:
            self.console.print(line, markup=False, highlight=False)

    def stop(self):
        if self.live is not None:
            self.live.stop()
