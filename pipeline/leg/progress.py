"""Ninja's progress on screen: a live bar on a terminal, sparse lines in a CI log.

Off a terminal a line every 10% of the steps keeps the log short. A long
step (a HIP template instantiation can compile for many minutes) would leave
the log silent and the job looking hung, so a heartbeat line also comes
every ``heartbeat`` seconds while no step has finished, with the step count
and the elapsed time. The clock is a parameter: tests drive it by hand.

What a line shows is pure (:func:`shorten_step`, :class:`StepCounter`): a
step's words stay whole (its object path is shortened in the middle), and
the ``[n/total]`` lines of a Ninja run by one of the build's steps (an
ExternalProject such as llama.cpp's ``vulkan-shaders-gen``, whose output
the outer Ninja prints after its own status line) never count as the leg's.
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
# How much of a step a line shows: on the live bar, and in a CI log's sparse lines.
BAR_STEP_WIDTH = 60
LOG_STEP_WIDTH = 80
# What stands for the folders left out of a shortened path.
ELLIPSIS = "..."


def shorten_path(path: str, width: int) -> str:
    """``path`` in at most ``width`` characters by leaving out folders in its middle.

    The first folder and the file name always stay (a file name is never
    cut, even when it alone is wider than ``width``); folders come back
    alternately beside the file name and after the first, while they fit.
    """
    parts = path.split("/")
    if len(path) <= width or len(parts) < 3:
        return path

    def text(head: int, tail: int) -> str:
        # parts[:head], the ellipsis, parts[tail:]
        return "/".join([*parts[:head], ELLIPSIS, *parts[tail:]])

    head, tail = 1, len(parts) - 1
    beside_file = True
    while True:
        wider = [(head, tail - 1), (head + 1, tail)]
        for new_head, new_tail in wider if beside_file else wider[::-1]:
            if new_head < new_tail and len(text(new_head, new_tail)) <= width:
                head, tail = new_head, new_tail
                break
        else:
            return text(head, tail)
        beside_file = not beside_file


def shorten_step(step: str, width: int) -> str:
    """A Ninja step's description in about ``width`` characters, every word whole.

    Only the longest path in it is shortened, in its middle
    (:func:`shorten_path`); the words before it ("Building CXX object") and
    after it always stay. A step with no path to shorten is shown whole.
    """
    if len(step) <= width:
        return step
    words = step.split(" ")
    paths = [i for i, word in enumerate(words) if "/" in word]
    if not paths:
        return step
    longest = max(paths, key=lambda i: len(words[i]))
    room = width - (len(step) - len(words[longest]))
    words[longest] = shorten_path(words[longest], max(room, 0))
    return " ".join(words)


class StepCounter:
    """Which ``[done/total]`` lines are the leg's own Ninja's, and its count so far.

    The leg's Ninja prints one status line per finished step, its ``done``
    rising by one (a console step prints its line as it starts, so a count
    may repeat); its ``total`` may change as it goes (``restat`` prunes steps,
    a dyndep file adds some), the count going on by one. A step
    that runs another Ninja (an ExternalProject) has that Ninja's output
    printed after its own status line: a counter starting again at 1 with a
    total of its own. Those lines belong to the nested build and are
    refused until a line continues the leg's own count.
    """

    def __init__(self) -> None:
        self.done = 0
        self.total = 0
        # The nested build's count while its lines come (None: none is running).
        self._nested: tuple[int, int] | None = None

    def take(self, done: int, total: int) -> bool:
        """Whether ``[done/total]`` is the leg's own line (then it becomes the count)."""
        if not self.total:
            return self._accept(done, total)
        continues = done in (self.done, self.done + 1)
        if total == self.total and continues:
            return self._accept(done, total)
        nested = self._nested
        if nested is not None and total == nested[1] and done in (nested[0], nested[0] + 1):
            self._nested = (done, total)
            return False
        if done == self.done + 1 and total >= done:
            # The leg's count goes on with another total: restat pruned steps, or a dyndep file added some.
            return self._accept(done, total)
        self._nested = (done, total)
        return False

    def _accept(self, done: int, total: int) -> bool:
        self.done, self.total, self._nested = done, total, None
        return True


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
        self._steps = StepCounter()
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
        total = str(self._steps.total) if self._steps.total else "?"
        self.console.print(
            f"{self.leg}: [{self._steps.done}/{total}] still building, {elapsed_text(now - self._started)} elapsed",
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
        # Any finished step (a nested build's too): the log is alive, the heartbeat starts over.
        self._quiet_since = self._clock()
        if not self._steps.take(done, total):
            return
        step = line[match.end() :].strip()
        if self._progress and self._task is not None:
            self._progress.update(
                self._task, completed=done, total=total, step=shorten_step(step, BAR_STEP_WIDTH)
            )
        elif total:
            decile = done * 10 // total
            if decile != self._last_decile:
                self._last_decile = decile
                self.console.print(
                    f"{self.leg}: [{done}/{total}] {shorten_step(step, LOG_STEP_WIDTH)}",
                    highlight=False,
                    markup=False,
                )
