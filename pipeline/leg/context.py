"""What every step of a leg run is called with: the run's inputs, the leg, its options and its folder.

Each step of :func:`pipeline.leg.steps.run_leg` has one signature, in the
spirit of nox's workflow: ``step(ctx, previous) -> result``, the context
first and the previous step's result second. The context is fixed for the
whole run; only its record fills in as the steps go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console

from pipeline.inputs.leg import Leg
from pipeline.inputs.matrix import Matrix
from pipeline.inputs.resolution_file import LegResolution
from pipeline.inputs.run_inputs import RunInputs
from pipeline.leg import console_lines as render
from pipeline.leg.options import LegOptions
from pipeline.results.record import LegRecord
from pipeline.util.tree_removal import Removal

P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True, kw_only=True)
class LegContext:
    inputs: RunInputs
    leg: Leg
    options: LegOptions
    # <out>/<leg>: the record, build.log, the build folder and the ccache statistics log.
    work: Path
    # The run's record, written as the steps go (running, then success, failed or interrupted).
    record: LegRecord
    console: Console
    # The leg's TheRock build and source, settled before the first step: no step resolves anything.
    resolution: LegResolution = field(default_factory=LegResolution)
    # What the record's source says beyond the tree itself (a reproduction names the original's repository,
    # tag and mix).
    provenance: Mapping[str, Any] = field(default_factory=dict)
    # What the run leaves to finish in the background (the old build folder's removal): waited for by
    # run_leg before it returns.
    pending: list[Removal] = field(default_factory=list)

    @property
    def out(self) -> Path:
        """The run's output folder (the bundle and the source checkout live here, beside the legs' folders)."""
        return self.work.parent

    @property
    def matrix(self) -> Matrix:
        return self.inputs.require_matrix()

    @property
    def log(self) -> Path:
        """The full log of the configure and build steps."""
        return self.work / "build.log"

    def warn(self, message: str) -> None:
        """A warning on record, and on screen (an annotation on GitHub Actions)."""
        self.record.warnings.append(message)
        render.warning(self.console, message, in_actions=self.inputs.in_actions, environ=self.inputs.environ)


# Every step's signature: the context, then the previous step's result (None for the first).
Step = Callable[[LegContext, P], R]
