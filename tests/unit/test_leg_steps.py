"""Every step of a leg run has one signature: ``step(ctx: LegContext, previous)``."""

from __future__ import annotations

import inspect
import itertools
import typing

from pipeline.leg import steps
from pipeline.leg.context import LegContext


def test_steps_run_in_the_documented_order() -> None:
    assert [step.__name__ for step in steps.STEPS] == [
        "source_step",
        "toolchain_step",
        "preflight_step",
        "ccache_step",
        "configure_step",
        "build_step",
        "bundle_step",
        "check_step",
    ]


def test_every_step_takes_the_context_and_the_previous_result() -> None:
    for step in steps.STEPS:
        params = list(inspect.signature(step).parameters)
        assert params == ["ctx", "previous"], step.__name__
        assert typing.get_type_hints(step)["ctx"] is LegContext, step.__name__


def test_each_step_takes_what_the_one_before_returns() -> None:
    hints = [typing.get_type_hints(step) for step in steps.STEPS]
    for before, after in itertools.pairwise(hints):
        assert after["previous"] == before["return"]


def test_the_chain_starts_from_nothing_and_ends_with_the_packaged_build() -> None:
    """_run_steps feeds None to the first step and reads the plan and the bundle from the last one's result."""
    hints = [typing.get_type_hints(step) for step in steps.STEPS]
    assert hints[0]["previous"] is type(None)
    assert hints[-1]["return"] is steps.Packaged
