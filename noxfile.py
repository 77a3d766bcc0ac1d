"""Nox sessions: one per leg of matrix.toml, plus resolve, nightly, tests, lint, report, prune, publish, bench.

Thin on purpose: every session installs the project into its virtualenv (so
ccache, CMake and Ninja come pinned from PyPI) and calls ``python -m pipeline``.
Arguments after ``--`` go to the pipeline.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from pipeline.config import Leg, Matrix, load_matrix  # noqa: E402
from pipeline.errors import ConfigError  # noqa: E402

nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests", "lint"]
nox.needs_version = ">=2024.3.2"

try:
    MATRIX: Matrix = load_matrix(os.environ.get("PIPELINE_MATRIX") or ROOT / "matrix.toml")
except ConfigError as err:
    print(f"error: {err}", file=sys.stderr)
    sys.exit(err.exit_code)

HOST_OS = "windows" if sys.platform == "win32" else "linux" if sys.platform.startswith("linux") else sys.platform
# Output folder of every session (PIPELINE_OUT moves it; `--out` after `--` still wins).
OUT = Path(os.environ.get("PIPELINE_OUT") or "out")
DEFAULT_RESOLUTION = OUT / "resolved.json"
_OUT_ARGS = ["--out", str(OUT)] if os.environ.get("PIPELINE_OUT") else []
# Set by `resolve` when it ran in this nox invocation; a file left by an
# earlier run is never picked up by a standalone leg.
_THIS_RUN: dict[str, str] = {}
# The options of `python -m pipeline resolve` that a leg's arguments may carry.
_RESOLVE_FLAGS = ("--rocm-version", "--now", "--index-url", "--tag")
_RESOLVE_SWITCHES = ("--json", "--no-source")


def _install(session: nox.Session, extras: str = "") -> None:
    # `--no-venv` / `--force-venv-backend none` runs in the current environment,
    # which must then have the project installed already.
    if session.venv_backend == "none":
        session.log("no virtualenv: using the current environment as it is")
        return
    session.install("-e", f".{extras}")


def _resolve_args(posargs: list[str]) -> list[str]:
    """The subset of a leg's arguments that also steer the run's resolution."""
    # A leg built from a given tree needs no source resolution (and no network).
    picked: list[str] = ["--no-source"] if any(a.split("=", 1)[0] == "--source" for a in posargs) else []
    args = iter(posargs)
    for arg in args:
        flag = arg.split("=", 1)[0]
        if arg in _RESOLVE_SWITCHES:
            picked.append(arg)
        elif flag in _RESOLVE_FLAGS:
            picked.append(arg)
            if "=" not in arg:
                picked.append(next(args, ""))
    return picked


def _flag_values(args: list[str], flag: str) -> list[str]:
    """Every value given to ``flag`` in ``args`` (as ``--flag V`` or ``--flag=V``)."""
    values: list[str] = []
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            values.append(args[i + 1])
        elif arg.startswith(flag + "="):
            values.append(arg.split("=", 1)[1])
    return values


def _resolution_env() -> dict[str, str]:
    return {"PIPELINE_RESOLVED": _THIS_RUN["resolved"]} if "resolved" in _THIS_RUN else {}


@nox.session
def resolve(session: nox.Session) -> None:
    """Resolve the run's inputs (ROCm toolchain per leg) once; writes out/resolved.json."""
    _install(session)
    # As a leg's dependency this session sees the leg's arguments: keep ours.
    session.run(
        "python", "-m", "pipeline", "resolve", "--write", str(DEFAULT_RESOLUTION),
        *_resolve_args(list(session.posargs)),
    )
    _THIS_RUN["resolved"] = str(DEFAULT_RESOLUTION.resolve())


def _register_leg(leg: Leg) -> None:
    def leg_session(session: nox.Session) -> None:
        _install(session)
        env = _resolution_env() if leg.needs_resolution else {}
        session.run("python", "-m", "pipeline", "build", leg.name, *_OUT_ARGS, *session.posargs, env=env)

    leg_session.__doc__ = f"Build the {leg.name} bundle ({leg.backend}, {leg.os})."
    nox.session(name=leg.name, requires=["resolve"] if leg.needs_resolution else [])(leg_session)


for _leg in MATRIX.legs.values():
    _register_leg(_leg)


@nox.session
def nightly(session: nox.Session) -> None:
    """Every leg that can run on this OS, with one resolution; the others are skipped."""
    _install(session)
    runnable = [leg for leg in MATRIX.legs.values() if leg.os == HOST_OS]
    for leg in MATRIX.legs.values():
        if leg.os != HOST_OS:
            session.log(f"skipping {leg.name}: it builds on {leg.os}, this machine runs {HOST_OS}")
    env: dict[str, str] = {}
    if any(leg.needs_resolution for leg in runnable):
        session.run(
            "python", "-m", "pipeline", "resolve", "--write", str(DEFAULT_RESOLUTION),
            *_resolve_args(list(session.posargs)),
        )
        env["PIPELINE_RESOLVED"] = str(DEFAULT_RESOLUTION.resolve())
    for leg in runnable:
        session.run("python", "-m", "pipeline", "build", leg.name, *_OUT_ARGS, *session.posargs, env=env)
    # The report reads the records where the legs wrote them.
    picked = _flag_values(list(session.posargs), "--out")
    session.run("python", "-m", "pipeline", "report", *(["--out", picked[-1]] if picked else _OUT_ARGS))


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (unit and integration); arguments go to pytest."""
    _install(session, "[test]")
    session.run("pytest", *(session.posargs or ["tests"]))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy --strict."""
    _install(session, "[lint]")
    session.run("ruff", "check", "pipeline", "tests", "scripts", "noxfile.py")
    session.run("mypy")


@nox.session
def report(session: nox.Session) -> None:
    """One table over every leg record in out/ (console, markdown, HTML)."""
    _install(session)
    session.run("python", "-m", "pipeline", "report", *session.posargs)


@nox.session
def prune(session: nox.Session) -> None:
    """Plan (and with --apply, do) the pruning of old GitHub Actions caches."""
    _install(session)
    session.run("python", "-m", "pipeline", "prune", *session.posargs)


@nox.session
def publish(session: nox.Session) -> None:
    """Plan (and with --apply, do) the GitHub release of the run's bundles."""
    _install(session)
    session.run("python", "-m", "pipeline", "publish", *_OUT_ARGS, *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark: cold vs warm vs raw builds, resolver and prune plan timings."""
    _install(session)
    session.run("python", "scripts/bench.py", *session.posargs)
