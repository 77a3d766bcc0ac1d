"""``pack LEG``: the end of a leg whose bundle the workflow's signing step signs.

The build stopped with the bundle's files staged (record ``staged``, the
staged state beside the stage: :mod:`pipeline.bundle.make`). Between the two,
the workflow's signing step, the only step that sees the signing secrets, has
signed every program and library in place. Here, under the leg's lock: every
signature is checked (signed, verified, by the publisher of ``[signing]``),
the bundle is packed and checked as the build's own check step does, and the
record ends ``success`` (or ``failed``, with the first problem named).
"""

from __future__ import annotations

import time

from rich.console import Console

from pipeline.errors import UsageError
from pipeline.inputs.leg import Leg
from pipeline.inputs.run_inputs import RunInputs
from pipeline.leg import console_lines as render
from pipeline.leg.bundle_steps import check_packed, pack_bundle
from pipeline.leg.context import LegContext
from pipeline.leg.options import LegOptions
from pipeline.leg.steps import leg_dir, record_failure
from pipeline.processes.locks import hold
from pipeline.results.record import RECORD_NAME, LegRecord, leg_lock


def pack_leg(inputs: RunInputs, leg: Leg, console: Console) -> LegRecord:
    """Check the signatures of ``leg``'s staged bundle, pack it, check it; the record, ended ``success``."""
    from pipeline.bundle.make import load_staged
    from pipeline.bundle.signing import signing_plan

    out = inputs.out.resolve()
    work = leg_dir(out, leg.name)
    clock = time.monotonic()
    with hold(
        leg_lock(work), what=f"the output folder {work}", since=inputs.started, wait_seconds=inputs.wait_lock
    ):
        path = work / RECORD_NAME
        if not path.is_file():
            raise UsageError(f"{path}: no record of leg {leg.name}: run `build {leg.name}` first")
        record = LegRecord.read(path)
        if record.status != "staged":
            raise UsageError(
                f"{path}: leg {leg.name} is {record.status}, not staged: only a build that stopped "
                "for the workflow's signing step is packed"
            )
        staged = load_staged(out, leg.name)
        plan, unsigned = signing_plan(inputs, leg)
        if plan is None:
            raise UsageError(
                unsigned or f"leg {leg.name}: [signing] does not cover it: nothing to pack signed"
            )
        ctx = LegContext(
            inputs=inputs, leg=leg, options=LegOptions(), work=work, record=record, console=console
        )
        try:
            bundle = pack_bundle(ctx, staged, plan)
            started = time.monotonic()
            check_packed(ctx, bundle)
            record.phases["check"] = round(time.monotonic() - started, 3)
        except KeyboardInterrupt:
            record.status = "interrupted"
            record.write(path)
            raise
        except BaseException as exc:
            record_failure(record, exc, inputs.environ)
            record.write(path)
            raise
        record.status = "success"
        record.wall_seconds = round(record.wall_seconds + time.monotonic() - clock, 3)
        record.write(path)
        render.show_record(record, console)
        return record
