"""Ninja's progress on screen: a live bar on a terminal, sparse lines in a CI log.

Off a terminal a line every 10% of the steps keeps the log short. A long
step (a HIP template instantiation can compile for many minutes) would leave
the log silent and the job looking hung, so a heartbeat line also comes
every ``heartbeat`` seconds while no step has finished, with the step count
and the elapsed time. The clock is a parameter: tests drive it by hand.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline.util.timeutil import hours_minutes_seconds

# Ninja's status line, forced to a known shape so progress can be read from it.
NINJA_STATUS = "[%f/%t] "
_STATUS = re.compile(r"^\[(\d+)/(\d+)\] ")
HEARTBEAT_SECONDS = 60.0


def elapsed_text(seconds: float) -> str:
    """``45s``, ``3m07s``, ``1h02m05s``."""
    hours, minutes, secs = hours_minutes_seconds(int(seconds))
    if hours:
        return f"{hours}h{minutes:02}m{secs:02}s"
    return f"{minutes}m{secs:02}s" if minutes else f"{secs}s"


class NinjaProgress:
    """Turns Ninja's ``[n/total]`` lines into a live bar (or sparse lines and heartbeats off a terminal).

    ``ticker=False`` starts no heartbeat thread: the caller calls :meth:`tick`.
    """

    def __init__(
        self,
        console: Console,
        leg: str,
        *,
        heartbeat: float = HEARTBEAT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        ticker: bool = True,
    ) -> None:
        self.console = console
        self.leg = leg
        self.failed: list[str] = []
        self.heartbeat = heartbeat
        self._clock = clock
        self._last_decile = -1
        self._done = 0
        self._total = 0
        self._started = clock()
        self._quiet_since = self._started
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress: Progress | None = None
        self._task = None
        if console.is_terminal:
            self._progress = Progress(
                TextColumn(f"[bold]{leg}[/] building"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[step]}", style="dim"),
                console=console,
                transient=True,
            )
        elif ticker and heartbeat > 0:
            self._thread = threading.Thread(target=self._beat, name=f"{leg}-heartbeat", daemon=True)

    def __enter__(self) -> NinjaProgress:
        self._started = self._quiet_since = self._clock()
        if self._progress:
            self._progress.start()
            self._task = self._progress.add_task("build", total=None, step="")  # type: ignore[assignment]
        if self._thread:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress:
            self._progress.stop()
        if self._thread:
            self._stop.set()
            self._thread.join()

    def _beat(self) -> None:
        # Wake a few times per interval so a line comes close to when it is due.
        while not self._stop.wait(self.heartbeat / 4):
            self.tick()

    def tick(self) -> None:
        """Print a heartbeat line when no step has finished (and nothing was printed) for ``heartbeat`` s."""
        now = self._clock()
        if now - self._quiet_since < self.heartbeat:
            return
        self._quiet_since = now
        total = str(self._total) if self._total else "?"
        self.console.print(
            f"{self.leg}: [{self._done}/{total}] still building, {elapsed_text(now - self._started)} elapsed",
            highlight=False,
        )

    def line(self, line: str) -> None:
        if line.startswith("FAILED: "):
            # Ninja 1.12+ writes "FAILED: [code=1] <outputs>".
            self.failed.append(re.sub(r"^\[code=-?\d+\]\s*", "", line[len("FAILED: ") :].strip()))
            return
        match = _STATUS.match(line)
        if not match:
            return
        done, total = int(match.group(1)), int(match.group(2))
        self._done, self._total = done, total
        # A finished step: the log is alive, the heartbeat starts over.
        self._quiet_since = self._clock()
        step = line[match.end() :].strip()
        if self._progress and self._task is not None:
            self._progress.update(self._task, completed=done, total=total, step=step[-60:])
        elif total:
            decile = done * 10 // total
            if decile != self._last_decile:
                self._last_decile = decile
                self.console.print(f"{self.leg}: [{done}/{total}] {step[-80:]}")
