"""CI logs that never look hung: sparse lines every 10%, and a heartbeat while no step finishes."""

from __future__ import annotations

import io

from rich.console import Console

from pipeline.leg.progress import NinjaProgress, elapsed_text


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _progress(clock: FakeClock, heartbeat: float = 60.0) -> tuple[NinjaProgress, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    return NinjaProgress(console, "rocm-linux-gfx110X", heartbeat=heartbeat, clock=clock, ticker=False), out


def test_heartbeat_while_no_step_finishes() -> None:
    clock = FakeClock()
    progress, out = _progress(clock)
    with progress:
        progress.line("[1/140] Building CXX object ggml/src/ggml.c.o\n")
        clock.now += 59.0
        progress.tick()
        assert "still building" not in out.getvalue()
        clock.now += 1.0
        progress.tick()
        clock.now += 30.0
        progress.tick()  # 30 s after the last heartbeat: nothing yet
        clock.now += 30.0
        progress.tick()
    lines = [line for line in out.getvalue().splitlines() if "still building" in line]
    assert lines == [
        "rocm-linux-gfx110X: [1/140] still building, 1m00s elapsed",
        "rocm-linux-gfx110X: [1/140] still building, 2m00s elapsed",
    ]


def test_a_finished_step_restarts_the_heartbeat() -> None:
    clock = FakeClock()
    progress, out = _progress(clock)
    with progress:
        progress.line("[1/20] a\n")
        clock.now += 50.0
        progress.line("[2/20] b\n")  # same decile: no line printed, but the log is alive
        clock.now += 50.0
        progress.tick()
        assert "still building" not in out.getvalue()
        clock.now += 10.0
        progress.tick()
    assert out.getvalue().splitlines()[-1] == "rocm-linux-gfx110X: [2/20] still building, 1m50s elapsed"


def test_deciles_still_print_and_the_count_is_unknown_before_the_first_step() -> None:
    clock = FakeClock()
    progress, out = _progress(clock, heartbeat=5.0)
    with progress:
        clock.now += 5.0
        progress.tick()
        for i in range(1, 11):
            progress.line(f"[{i}/10] step{i}\n")
    lines = out.getvalue().splitlines()
    assert lines[0] == "rocm-linux-gfx110X: [0/?] still building, 5s elapsed"
    assert len(lines) == 1 + 10
    assert lines[-1] == "rocm-linux-gfx110X: [10/10] step10"


def test_elapsed_text() -> None:
    assert [elapsed_text(s) for s in (0, 45.9, 187, 3725)] == ["0s", "45s", "3m07s", "1h02m05s"]
