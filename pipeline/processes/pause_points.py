"""Named points where a test holds a run, so that an interrupt lands exactly there.

The interrupt tests stop a run during the extraction of a toolchain or the
packaging of a bundle. Waiting for a file to appear and then signalling
depends on how fast the machine is at that moment: on a loaded runner the
extraction may already be over. With ``PIPELINE_PAUSE_AT=extract,pack`` and
``PIPELINE_PAUSE_DIR=DIR``, a run that reaches a named point writes
``DIR/<name>.reached`` and waits (up to :data:`MAX_WAIT` seconds) for
``DIR/<name>.release``; each point holds the run once. Without both
variables nothing happens: a production run never pauses.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from pipeline.inputs.settings import PAUSE_AT, PAUSE_DIR

# The points the pipeline offers (a name outside this set in PIPELINE_PAUSE_AT is ignored).
# "child": right after a child process started, before the code that stops its group holds it.
# "parser": before the command's module is imported (a signal there must still be an interrupt).
POINTS = frozenset({"extract", "pack", "child", "parser"})
MAX_WAIT = 600.0
_POLL = 0.02

_armed: dict[str, Path] = {}


def arm(environ: Mapping[str, str]) -> None:
    """Read ``PIPELINE_PAUSE_AT`` / ``PIPELINE_PAUSE_DIR`` once (the CLI calls it at start)."""
    _armed.clear()
    folder = environ.get(PAUSE_DIR, "")
    if not folder:
        return
    for name in environ.get(PAUSE_AT, "").split(","):
        if name.strip() in POINTS:
            _armed[name.strip()] = Path(folder)


def checkpoint(name: str) -> None:
    """Hold the run at ``name`` when a test asked for it; otherwise return at once."""
    folder = _armed.pop(name, None)
    if folder is None:
        return
    (folder / f"{name}.reached").write_text("reached", encoding="utf-8")
    deadline = time.monotonic() + MAX_WAIT
    while not (folder / f"{name}.release").exists() and time.monotonic() < deadline:
        time.sleep(_POLL)
