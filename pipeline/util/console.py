"""The one console decision: a terminal gets rich's live displays, a CI log gets plain lines.

rich takes ``FORCE_COLOR`` (set by the workflow, for coloured logs) as "this
is a terminal": it then draws live bars and spinners with cursor movements
into the log and wraps every line at 80 columns (a log has no width, rich
falls back to 80), cutting paths in two. So "terminal" is decided here, not
by rich: on GitHub Actions, or whenever the stream is not a tty, the output
is a log. A log gets no live display (the build prints sparse progress
lines and heartbeats instead, see ``pipeline.leg.progress``), no wrapping,
and colours only when ``FORCE_COLOR`` asks for them (and ``NO_COLOR`` does
not forbid them).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TextIO

from rich.console import Console

from pipeline.names import FORCE_COLOR, NO_COLOR, in_actions

# A log line is as long as its text; tables (which lay out to a width) get room for a whole record.
LOG_WIDTH = 1000


def is_log(environ: Mapping[str, str], stream: TextIO) -> bool:
    """Whether ``stream`` is a log (GitHub Actions, a pipe, a file) rather than someone's terminal."""
    if in_actions(environ):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return not (isatty is not None and isatty())
    except ValueError:  # a closed stream
        return True


def make_console(environ: Mapping[str, str], *, stderr: bool = False, file: TextIO | None = None) -> Console:
    """The console for ``file`` (else stdout, or stderr): rich's own on a terminal, a plain log otherwise."""
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    if not is_log(environ, stream):
        return Console(file=file, stderr=stderr)
    colour = environ.get(FORCE_COLOR, "") != "" and environ.get(NO_COLOR, "") == ""
    return Console(
        file=file,
        stderr=stderr,
        # Not a terminal: no cursor control, no live display, no spinner frames in the log.
        force_terminal=False,
        force_interactive=False,
        # rich colours only terminals unless given a colour system outright.
        color_system="standard" if colour else None,
        width=LOG_WIDTH,
        soft_wrap=True,
    )
