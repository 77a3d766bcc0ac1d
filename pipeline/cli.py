"""Command-line entry point: ``python -m pipeline <command>``.

Each command lives in ``pipeline/commands/<name>.py`` with ``register(sub)``
adding its sub-parser (``set_defaults(func=run)``; ``needs_matrix=False`` for
commands that can do without matrix.toml, ``reads_resolution=True`` for those
that take the run's resolution). Here, once per process, the run's inputs are
fixed (:func:`pipeline.inputs.run_inputs.read_inputs`) and handed to the command as
``run(args, inputs)``. A PipelineError becomes one line on stderr and its exit
code; an ``OSError`` (a path that cannot be written or read, wherever it
surfaces) becomes one line naming the path and the reason, exit code
:data:`~pipeline.errors.OS_ERROR_EXIT`. ``--debug`` (or ``PIPELINE_DEBUG=1``)
prints the traceback behind either. Anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from pipeline import __version__
from pipeline.errors import OS_ERROR_EXIT, PipelineError, Terminated, describe_os_error
from pipeline.inputs.settings import DEBUG, MATRIX, add_flag, default_text, pick
from pipeline.processes.groups import deliver_interrupt
from pipeline.processes.pause_points import arm as arm_checkpoints
from pipeline.processes.pause_points import checkpoint

# The commands are the modules of pipeline/commands/ (one per command, ``cache_key.py`` is ``cache-key``), in
# --help's order; listed from the folder, not imported, so the list is written nowhere else.
COMMANDS = tuple(
    sorted(
        path.stem.replace("_", "-")
        for path in (Path(__file__).parent / "commands").glob("*.py")
        if path.stem != "__init__"
    )
)


def command_module(name: str) -> ModuleType:
    """The module of command ``name``, imported only when that command is asked for (each costs start-up time).

    One import statement per command, spelled out, so that import-linter sees
    the arrow from the CLI to every command (``importlib`` by name hid it); a
    command module that has no case here fails ``--help`` and the layer tests.
    """
    match name:
        case "alert":
            from pipeline.commands import alert

            return alert
        case "build":
            from pipeline.commands import build

            return build
        case "cache-budget":
            from pipeline.commands import cache_budget

            return cache_budget
        case "cache-key":
            from pipeline.commands import cache_key

            return cache_key
        case "cache-save":
            from pipeline.commands import cache_save

            return cache_save
        case "check-bundle":
            from pipeline.commands import check_bundle

            return check_bundle
        case "compare":
            from pipeline.commands import compare

            return compare
        case "deadman":
            from pipeline.commands import deadman

            return deadman
        case "rocm-alert":
            from pipeline.commands import rocm_alert

            return rocm_alert
        case "legs":
            from pipeline.commands import legs

            return legs
        case "matrix":
            from pipeline.commands import matrix

            return matrix
        case "pack":
            from pipeline.commands import pack

            return pack
        case "prune":
            from pipeline.commands import prune

            return prune
        case "publish":
            from pipeline.commands import publish

            return publish
        case "release-exists":
            from pipeline.commands import release_exists

            return release_exists
        case "replay":
            from pipeline.commands import replay

            return replay
        case "report":
            from pipeline.commands import report

            return report
        case "reproduce":
            from pipeline.commands import reproduce

            return reproduce
        case "retry":
            from pipeline.commands import retry

            return retry
        case "resolve":
            from pipeline.commands import resolve

            return resolve
        case "settings":
            from pipeline.commands import settings

            return settings
        case "shard":
            from pipeline.commands import shard

            return shard
        case "simulate":
            from pipeline.commands import simulate

            return simulate
        case "source":
            from pipeline.commands import source

            return source
        case "timings":
            from pipeline.commands import timings

            return timings
        case "verify":
            from pipeline.commands import verify

            return verify
        case "warm-up":
            from pipeline.commands import warm_up

            return warm_up
        case _:
            raise KeyError(name)


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command named in ``argv`` (after the global options), if it is a known one."""
    args = iter(argv)
    for arg in args:
        if arg == MATRIX.flag:
            next(args, None)
        elif arg.startswith("-"):
            continue
        else:
            return arg if arg in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command's sub-parser (each import costs start-up time)."""
    parser = argparse.ArgumentParser(
        prog="python -m pipeline",
        description="Build llama.cpp prebuilt bundles from matrix.toml.",
    )
    parser.add_argument("--version", action="version", version=f"pipeline {__version__}")
    add_global_flags(parser, default=None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in (only,) if only else COMMANDS:
        command_module(name).register(sub)
    # After the command too (`build cpu --matrix X`: what `nox -s cpu -- --matrix X` runs). Suppressed
    # defaults: a command's parser sets them only when given, so a flag before the command holds.
    for command in sub.choices.values():
        add_global_flags(command, default=argparse.SUPPRESS)
    return parser


def add_global_flags(parser: argparse.ArgumentParser, *, default: object) -> None:
    """``--matrix`` and ``--debug``: every command takes them, before or after its name."""
    add_flag(parser, MATRIX, default=default)
    assert DEBUG.flag is not None
    parser.add_argument(
        DEBUG.flag,
        dest=DEBUG.name,
        action="store_true",
        default=default or False,
        help=f"{DEBUG.help} (default: {default_text(DEBUG)})",
    )


def absolute_paths(args: argparse.Namespace) -> argparse.Namespace:
    """Every path argument taken from the caller's folder, whatever folder a child process later runs in.

    A relative ``--source-tree ../llama.cpp`` reached the smoke run, whose
    programs run in a scratch home, and named nothing there; a relative
    ``--rocm-path`` would reach the compilers, which run in the build folder.
    """
    for name, value in vars(args).items():
        if isinstance(value, Path) and not value.is_absolute():
            setattr(args, name, value.absolute())
    return args


def report_error(err: PipelineError) -> None:
    """One line on stderr: ``error: ...``, an error annotation on GitHub Actions."""
    from pipeline.github.runner import annotate

    # Before the run's inputs exist (a bad flag), GitHub's own variables are read here.
    annotate("error", str(err).replace("\n", " "), stream=sys.stderr, env=os.environ)


def _raise_terminated(signum: int, frame: object) -> None:
    deliver_interrupt(Terminated())


def _raise_interrupt(signum: int, frame: object) -> None:
    deliver_interrupt(KeyboardInterrupt())


def on_sigterm() -> None:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt), SIGINT a KeyboardInterrupt: children are
    stopped, records say so. Both wait while a child is being started, until its group can be stopped
    (:func:`pipeline.processes.groups.deliver_interrupt`)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _raise_interrupt)


def debug_wanted(args: argparse.Namespace) -> bool:
    """``--debug`` or ``PIPELINE_DEBUG``: read here, since it must work when the run's inputs cannot be built."""
    if getattr(args, DEBUG.name, False):
        return True
    try:
        return bool(pick(DEBUG, environ=os.environ).value)
    except PipelineError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    on_sigterm()
    # The interrupt tests' hook (processes/pause_points.py): inert unless PIPELINE_PAUSE_AT/_DIR are set.
    arm_checkpoints(os.environ)
    try:
        # In a try of its own: a SIGTERM while the command's module still imports is an interrupt too.
        checkpoint("parser")
        parser = build_parser(chosen_command(argv))
        args = absolute_paths(parser.parse_args(argv))
        debug = debug_wanted(args)
    except KeyboardInterrupt as exc:
        return interrupted(exc)
    try:
        from pipeline.inputs.run_inputs import read_inputs

        if not getattr(args, DEBUG.name, False):
            pick(DEBUG, environ=os.environ)  # every command reads it: a value that is no boolean is refused
        inputs = read_inputs(
            args,
            need_matrix=getattr(args, "needs_matrix", True),
            with_resolution=getattr(args, "reads_resolution", False),
            # A --source build's --tag names its bundle; elsewhere it is a tag to check out.
            any_tag=getattr(args, "source", None) is not None,
        )
        if inputs.matrix is not None:
            # Before any command's work: two legs naming one bundle is a bad matrix.toml (the naming rule is
            # the backends', above the inputs layer that loads the file).
            from pipeline.backends import check_bundle_names

            check_bundle_names(inputs.matrix)
        return int(args.func(args, inputs) or 0)
    except PipelineError as err:
        if debug:
            import traceback

            traceback.print_exc()
        report_error(err)
        return err.exit_code
    except OSError as err:
        # Unwritable outputs, a file where a folder should be, a full disk: the
        # user's environment, not a bug, wherever in a command it surfaced.
        if debug:
            import traceback

            traceback.print_exc()
        report_error(PipelineError(f"{getattr(args, 'command', 'pipeline')}: {describe_os_error(err)}"))
        return OS_ERROR_EXIT
    except KeyboardInterrupt as exc:
        return interrupted(exc)


def interrupted(exc: KeyboardInterrupt) -> int:
    """The one line for a SIGTERM or SIGINT, and its exit code: 128 + the signal's number (143, 130)."""
    terminated = isinstance(exc, Terminated)
    print(
        f"error: interrupted ({'SIGTERM' if terminated else 'SIGINT'}): child processes stopped",
        file=sys.stderr,
    )
    return Terminated.exit_code if terminated else 130
