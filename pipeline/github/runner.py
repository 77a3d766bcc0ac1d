"""The Actions runner's files and commands: outputs, environment, step summary, annotations, log groups.

On Actions this writes ``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY``
and prints workflow commands; outside Actions it degrades to plain console lines,
so every command runs the same on a laptop.
"""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from pipeline.errors import UsageError
from pipeline.names import GITHUB_OUTPUT, GITHUB_RUN_ID, GITHUB_SERVER_URL, GITHUB_STEP_SUMMARY, in_actions

LEVELS = ("debug", "notice", "warning", "error")
_OUTPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def _check_name(name: str, what: str) -> None:
    if not _OUTPUT_NAME.match(name):
        raise UsageError(f"bad {what} name {name!r}: letters, digits, '_', '.', '-' only")


def format_file_command(name: str, value: str, delimiter: str) -> str:
    """``name<<DELIM`` / value / ``DELIM``: the multiline form, safe for any value."""
    if delimiter in value:
        raise ValueError("the delimiter occurs in the value")
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def _append_file_command(env_var: str, name: str, value: str, env: Mapping[str, str]) -> bool:
    path = env.get(env_var)
    if not path:
        return False
    # A fresh random delimiter per write: no value can end the block early.
    delimiter = f"ghadelimiter_{uuid.uuid4()}"
    while delimiter in value:
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
    with Path(path).open("a", encoding="utf-8", newline="\n") as fh:
        fh.write(format_file_command(name, value, delimiter))
    return True


def set_output(name: str, value: str, *, env: Mapping[str, str]) -> bool:
    """Set step output ``name`` (any value, multiline too); False outside Actions."""
    _check_name(name, "output")
    return _append_file_command(GITHUB_OUTPUT, name, value, env)


def append_summary(markdown: str, *, env: Mapping[str, str]) -> bool:
    """Append ``markdown`` to the job's step summary; False outside Actions."""
    path = env.get(GITHUB_STEP_SUMMARY)
    if not path:
        return False
    with Path(path).open("a", encoding="utf-8", newline="\n") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True


def escape_data(text: str) -> str:
    """Text as GitHub Actions specifies it for a workflow command's data: ``%``, ``\r`` and ``\n`` escaped.

    The one function for everything the pipeline prints from data (matrix.toml, a resolution, an index, an
    API answer) into an Actions log: a newline in the data can then never start a line of its own, which the
    runner would execute as a command (``::error::``, ``::add-mask::``). Data goes inside a line the pipeline
    starts itself (:func:`log_text`).
    """
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def log_text(text: str, env: Mapping[str, str]) -> str:
    """``text`` from data, for a line of the log: :func:`escape_data` on Actions, as it is elsewhere."""
    return escape_data(text) if in_actions(env) else text


def _escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_annotation(
    level: str, message: str, *, file: str | None = None, line: int | None = None, title: str | None = None
) -> str:
    """The workflow command for an annotation, e.g. ``::warning file=x::message``."""
    if level not in LEVELS:
        raise ValueError(f"annotation level {level!r} is not one of {LEVELS}")
    props = [
        f"{key}={_escape_property(str(value))}"
        for key, value in (("file", file), ("line", line), ("title", title))
        if value is not None
    ]
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return f"{head}::{escape_data(message)}"


def annotate(
    level: str,
    message: str,
    file: str | None = None,
    *,
    line: int | None = None,
    title: str | None = None,
    env: Mapping[str, str],
    stream: TextIO | None = None,
) -> None:
    """An annotation on Actions (on ``stream``, default stdout); ``level: message`` on stderr elsewhere.

    The runner reads workflow commands from stderr too: commands that print
    JSON on stdout pass ``stream=sys.stderr``.
    """
    if in_actions(env):
        print(
            format_annotation(level, message, file=file, line=line, title=title),
            file=stream or sys.stdout,
            flush=True,
        )
    elif level != "debug":
        where = f"{file}{f':{line}' if line else ''}: " if file else ""
        print(f"{level}: {where}{message}", file=sys.stderr, flush=True)


@contextmanager
def group(title: str, *, env: Mapping[str, str], stream: TextIO | None = None) -> Iterator[None]:
    """A collapsible log group on Actions (on ``stream``, default stdout); a no-op elsewhere."""
    active = in_actions(env)
    if active:
        print(f"::group::{escape_data(title)}", file=stream or sys.stdout, flush=True)
    try:
        yield
    finally:
        if active:
            print("::endgroup::", file=stream or sys.stdout, flush=True)


def run_url(env: Mapping[str, str], repo: str | None) -> str | None:
    """This Actions run's page (``repo`` is owner/name), from the runner's variables; None outside Actions."""
    server, run_id = env.get(GITHUB_SERVER_URL), env.get(GITHUB_RUN_ID)
    return f"{server}/{repo}/actions/runs/{run_id}" if server and repo and run_id else None
