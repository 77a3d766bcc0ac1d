"""CI logs that never look hung: sparse lines every 10%, and a heartbeat while no step finishes."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from pipeline.leg.progress import NinjaProgress, StepCounter, elapsed_text, shorten_path, shorten_step


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


# --------------------------------------------------------------------------
# What a progress line shows: whole words, and only the leg's own steps.

# Ninja's own lines (NINJA_STATUS "[%f/%t] ") from a real build whose third step runs a nested Ninja,
# as CMake's ExternalProject runs llama.cpp's vulkan-shaders-gen: its output follows the outer status line.
NESTED_NINJA_OUTPUT = """\
[1/5] Building C object ggml/src/CMakeFiles/ggml-base.dir/a.o
[2/5] Building C object ggml/src/CMakeFiles/ggml-base.dir/b.o
[3/5] Performing build step for 'vulkan-shaders-gen'
ninja: Entering directory `sub'
[1/2] Building CXX object CMakeFiles/vulkan-shaders-gen.dir/vulkan-shaders-gen.cpp.o
[2/2] Linking CXX executable vulkan-shaders-gen
[4/5] Building C object ggml/src/CMakeFiles/ggml-base.dir/c.o
[5/5] Building C object ggml/src/CMakeFiles/ggml-base.dir/d.o
"""

LONG_STEP = (
    "Building CXX object ggml/src/ggml-cpu/CMakeFiles/ggml-cpu-haswell.dir/ggml-cpu/arch/x86/repack.cpp.o"
)


@pytest.mark.parametrize(
    ("step", "width", "shown"),
    [
        # Fits: unchanged.
        (
            "Linking CXX shared library bin/libggml-base.so",
            80,
            "Linking CXX shared library bin/libggml-base.so",
        ),
        # The cut the old code made ("[170/566] ject ggml/...") cannot happen: the words before the path stay.
        (LONG_STEP, 80, "Building CXX object ggml/src/ggml-cpu/.../ggml-cpu/arch/x86/repack.cpp.o"),
        (LONG_STEP, 60, "Building CXX object ggml/src/.../arch/x86/repack.cpp.o"),
        # Narrower than the first folder and the file name: those two still stay whole.
        (LONG_STEP, 20, "Building CXX object ggml/.../repack.cpp.o"),
        # No path to shorten: shown whole, never cut mid-word.
        (
            "Performing build step for 'vulkan-shaders-gen' " + "x" * 80,
            40,
            "Performing build step for 'vulkan-shaders-gen' " + "x" * 80,
        ),
        # A path with too few folders to shorten stays whole too.
        (
            "Generating ggml-vulkan-shaders.hpp.deps/" + "y" * 70,
            40,
            "Generating ggml-vulkan-shaders.hpp.deps/" + "y" * 70,
        ),
    ],
)
def test_a_step_keeps_its_words_whole(step: str, width: int, shown: str) -> None:
    assert shorten_step(step, width) == shown
    # The line starts as the step does, and every word without a path is in it, whole and in order.
    assert shown.split(" ")[0] == step.split(" ")[0]
    plain = [w for w in step.split(" ") if "/" not in w]
    assert [w for w in shown.split(" ") if "/" not in w] == plain


def test_a_shortened_path_keeps_its_first_folder_and_file_name() -> None:
    path = "ggml/src/ggml-cpu/CMakeFiles/ggml-cpu-haswell.dir/ggml-cpu/arch/x86/repack.cpp.o"
    for width in range(0, len(path) + 1):
        short = shorten_path(path, width)
        assert short.startswith("ggml/") and short.endswith("/repack.cpp.o")
        # Within the width whenever the first folder, "..." and the file name fit at all.
        assert len(short) <= max(width, len("ggml/.../repack.cpp.o"))
        # Only whole folders: every part is one of the path's own, or the ellipsis.
        assert set(short.split("/")) <= set(path.split("/")) | {"..."}


def test_a_nested_ninja_stays_out_of_the_legs_count() -> None:
    counter = StepCounter()
    taken = []
    for line in NESTED_NINJA_OUTPUT.splitlines():
        if line.startswith("["):
            done, total = line[1 : line.index("]")].split("/")
            if counter.take(int(done), int(total)):
                taken.append(line)
    assert [line.split("]")[0] + "]" for line in taken] == ["[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]"]
    assert (counter.done, counter.total) == (5, 5)


@pytest.mark.parametrize(
    ("lines", "leg_lines"),
    [
        # Restat pruned steps: the leg's count goes on with the smaller total.
        ([(1, 10), (2, 10), (3, 8), (4, 8)], [(1, 10), (2, 10), (3, 8), (4, 8)]),
        # A console step prints its line as it starts: the same count twice.
        ([(1, 10), (1, 10), (2, 10)], [(1, 10), (1, 10), (2, 10)]),
        # A nested build larger than the leg's count so far, and one whose count meets the leg's.
        ([(3, 40), (1, 7), (2, 7), (3, 7), (4, 7), (5, 7), (4, 40)], [(3, 40), (4, 40)]),
        ([(1, 40), (2, 40), (1, 2), (2, 2), (3, 40)], [(1, 40), (2, 40), (3, 40)]),
        # Restat right after a nested build.
        ([(5, 40), (1, 2), (2, 2), (6, 38)], [(5, 40), (6, 38)]),
        # A dyndep file added steps: the count goes on with the larger total.
        ([(1, 10), (2, 10), (3, 14), (4, 14)], [(1, 10), (2, 10), (3, 14), (4, 14)]),
        # A nested build whose count passes the leg's stays nested while it counts on.
        ([(3, 10), (1, 40), (2, 40), (3, 40), (4, 40), (5, 40), (4, 10)], [(3, 10), (4, 10)]),
    ],
)
def test_step_counter_table(lines: list[tuple[int, int]], leg_lines: list[tuple[int, int]]) -> None:
    counter = StepCounter()
    assert [line for line in lines if counter.take(*line)] == leg_lines


def test_progress_lines_show_whole_words_and_the_legs_own_count() -> None:
    clock = FakeClock()
    progress, out = _progress(clock)
    with progress:
        for line in NESTED_NINJA_OUTPUT.splitlines():
            progress.line(line + "\n")
    lines = out.getvalue().splitlines()
    assert lines[2] == "rocm-linux-gfx110X: [3/5] Performing build step for 'vulkan-shaders-gen'"
    assert not any("[1/2]" in line or "[2/2]" in line for line in lines)
    assert lines[-1] == "rocm-linux-gfx110X: [5/5] Building C object ggml/src/CMakeFiles/ggml-base.dir/d.o"
    progress, out = _progress(clock)
    with progress:
        progress.line(f"[170/566] {LONG_STEP}\n")
    assert (
        out.getvalue()
        == "rocm-linux-gfx110X: [170/566] Building CXX object ggml/src/ggml-cpu/.../ggml-cpu/arch/x86/repack.cpp.o\n"
    )
