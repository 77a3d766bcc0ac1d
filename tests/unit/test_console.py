"""The console decision: rich's terminal only on someone's terminal, a plain log on Actions or a pipe."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from typing import TextIO

import pytest

from pipeline.util.console import LOG_WIDTH, make_console


@pytest.fixture
def tty() -> Iterator[TextIO]:
    """A real terminal (a pseudo-terminal's far end), as a developer's shell has."""
    leader, follower = os.openpty()
    stream = os.fdopen(follower, "w")
    try:
        yield stream
    finally:
        stream.close()
        os.close(leader)


def test_a_terminal_outside_actions_keeps_richs_terminal(tty: TextIO) -> None:
    console = make_console({"TERM": "xterm"}, file=tty)
    assert console.is_terminal and console.is_interactive


def test_force_color_on_actions_colours_a_log_without_making_it_a_terminal(tty: TextIO) -> None:
    # Even a tty-like stream on Actions is a log: GitHub keeps it as text.
    for stream in (tty, io.StringIO()):
        console = make_console({"GITHUB_ACTIONS": "true", "FORCE_COLOR": "1"}, file=stream)
        assert not console.is_terminal and not console.is_interactive
        assert console.color_system == "standard"
        assert console.width == LOG_WIDTH and console.soft_wrap


def test_a_pipe_is_a_log_and_no_color_wins_over_force_color() -> None:
    out = io.StringIO()
    console = make_console({"FORCE_COLOR": "1", "NO_COLOR": "1"}, file=out)
    assert not console.is_terminal and console.color_system is None
    console.print("[bold red]x[/] " + "p/" * 100)
    assert out.getvalue() == "x " + "p/" * 100 + "\n"  # one line, no escape sequence


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"GITHUB_ACTIONS": "true"}, True),
        ({"GITHUB_ACTIONS": "false"}, False),
        ({"GITHUB_ACTIONS": ""}, False),
        ({}, False),
    ],
)
def test_the_one_actions_test_answers_the_run_the_runner_and_the_console(
    environ: dict[str, str], expected: bool, tty: TextIO
) -> None:
    import argparse

    from pipeline.github import runner
    from pipeline.inputs.run_inputs import read_inputs
    from pipeline.names import in_actions
    from pipeline.util.console import is_log

    assert in_actions(environ) is expected
    # What each of the three asks it: the run's inputs, the runner's escaping of data, the console's decision
    # (on a terminal, a log only on Actions).
    assert read_inputs(argparse.Namespace(), environ=environ).in_actions is expected
    assert (runner.log_text("a\nb", environ) == "a%0Ab") is expected
    assert is_log(environ, tty) is expected
